//! `NVRM: Xid` lines from the kernel log (`/dev/kmsg` or a file such as `/var/log/kern.log`, followed
//! by `source::tail` from its end: Xids logged before the collector started are history, not news).

use super::backend::XidEvent;
use crate::source::tail::Tail;
use regex::Regex;
use std::path::Path;
use std::sync::LazyLock;

/// `NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.`; drivers before
/// R450 write the address without `PCI:`.
static XID: LazyLock<Regex> = LazyLock::new(|| {
    // The pattern is a constant checked by the tests below.
    Regex::new(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+)(?:\.[0-9A-Fa-f]+)?\): (\d+)")
        .expect("valid regex")
});

/// The kernel log, followed for Xid lines.
pub struct KernelLog {
    tail: Tail,
}

impl KernelLog {
    /// Opens the log at its end. `None` (logged once) when it cannot be read: without CAP_SYSLOG
    /// `/dev/kmsg` refuses, and NVML's event set then stands in.
    pub fn open(path: &Path) -> Option<KernelLog> {
        match Tail::open(path, true) {
            Ok(tail) => Some(KernelLog { tail }),
            Err(error) => {
                tracing::info!(path = %path.display(), %error, "Kernel log not readable; Xids come from NVML events only");
                None
            }
        }
    }

    /// The Xid lines logged since the last call.
    pub fn xids(&mut self) -> Vec<XidEvent> {
        self.tail.lines().iter().filter_map(|l| parse(l)).collect()
    }
}

/// An Xid out of one log line.
pub fn parse(line: &str) -> Option<XidEvent> {
    let c = XID.captures(line)?;
    let code = c.get(2)?.as_str().parse().ok()?;
    Some(XidEvent {
        gpu: None,
        pci_bus_id: Some(c.get(1)?.as_str().to_string()),
        code,
        message: line.trim().to_string(),
    })
}

/// A PCI address as (domain, bus, device), so NVML's `00000000:3B:00.0` matches the kernel's `0000:3b:00`.
pub fn bus_key(addr: &str) -> Option<(u32, u32, u32)> {
    let addr = addr.split('.').next()?;
    let mut it = addr.rsplitn(3, ':');
    let device = u32::from_str_radix(it.next()?, 16).ok()?;
    let bus = u32::from_str_radix(it.next()?, 16).ok()?;
    let domain = it.next().map_or(Some(0), |d| u32::from_str_radix(d, 16).ok())?;
    Some((domain, bus, device))
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn xid_lines() {
        let lines = [
            "[ 8912.334455] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
            "[6 #1] NVRM: Xid (PCI:0000:18:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 6, subpartition 0.",
            "Mar  3 10:11:12 node kernel: NVRM: Xid (0000:03:00): 13, 0003 00000000 0000c197 00000c34 00000000 00000000",
            "NVRM: GPU at PCI:0000:3b:00: GPU-5e1b8d3a",
        ];
        let got: Vec<_> = lines.iter().map(|l| parse(l).map(|x| (x.pci_bus_id, x.code))).collect();
        expect![[r#"
            [
                Some(
                    (
                        Some(
                            "0000:3b:00",
                        ),
                        79,
                    ),
                ),
                Some(
                    (
                        Some(
                            "0000:18:00",
                        ),
                        48,
                    ),
                ),
                Some(
                    (
                        Some(
                            "0000:03:00",
                        ),
                        13,
                    ),
                ),
                None,
            ]
        "#]]
        .assert_debug_eq(&got);
        assert_eq!(bus_key("00000000:3B:00.0"), bus_key("0000:3b:00"));
        assert_ne!(bus_key("00000000:3B:00.0"), bus_key("0000:3c:00"));
    }
}
