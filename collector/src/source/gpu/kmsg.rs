//! `NVRM: Xid` (GPU) and `nvidia-nvswitchN: SXid` (NVSwitch) lines from the kernel log (`/dev/kmsg` or a
//! file such as `/var/log/kern.log`, followed by `source::tail` from its end: errors logged before the
//! collector started are history, not news).
//!
//! Reading the log never touches NVML, so a GPU that fell off the bus, or an NVML call that hangs,
//! never keeps its Xids from being read.

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

/// `nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error`.
/// The driver writes one such line per error, naming its severity, followed by `Data {…}` and
/// `Severity N Engine instance …` lines about the same error; a few errors (`26006, SOE HALTED`) name
/// no severity.
static SXID: LazyLock<Regex> = LazyLock::new(|| {
    // The pattern is a constant checked by the tests below.
    Regex::new(r"SXid \((?:PCI:)?([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+(?:\.[0-9A-Fa-f]+)?)\): (\d+), ?(.*)")
        .expect("valid regex")
});

/// The `Data {…}` and `Severity N Engine instance …` lines that follow an SXid's report.
static SXID_DETAIL: LazyLock<Regex> = LazyLock::new(|| {
    // The pattern is a constant checked by the tests below.
    Regex::new(r"^(?:Data \{|Severity \d)").expect("valid regex")
});

/// One NVSwitch error (SXid) out of the kernel log.
#[derive(Debug, Clone, PartialEq)]
pub struct SxidEvent {
    /// The NVSwitch's PCI address, as the kernel writes it (`0000:05:00.0`).
    pub nvswitch: String,
    pub code: u64,
    /// `None` for the few errors whose line names no severity.
    pub severity: Option<Severity>,
    /// A `Data {…}` or `Severity N …` line about an error already reported: not an error of its own.
    pub detail: bool,
    /// The log line.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Fatal,
    NonFatal,
}

impl Severity {
    /// The `severity` label.
    pub fn label(self) -> &'static str {
        match self {
            Severity::Fatal => "fatal",
            Severity::NonFatal => "non_fatal",
        }
    }
}

/// What the kernel log said since the last read.
#[derive(Debug, Default)]
pub struct Errors {
    pub xids: Vec<XidEvent>,
    /// SXid errors, their detail lines left out.
    pub sxids: Vec<SxidEvent>,
}

/// The kernel log, followed for Xid and SXid lines.
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

    /// The Xid and SXid errors logged since the last call.
    pub fn errors(&mut self) -> Errors {
        let mut out = Errors::default();
        for line in self.tail.lines() {
            if let Some(x) = parse(&line) {
                out.xids.push(x);
            } else if let Some(s) = parse_sxid(&line).filter(|s| !s.detail) {
                out.sxids.push(s);
            }
        }
        out
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

/// An SXid out of one log line (its detail lines too, marked `detail`).
pub fn parse_sxid(line: &str) -> Option<SxidEvent> {
    let c = SXID.captures(line)?;
    let code = c.get(2)?.as_str().parse().ok()?;
    let rest = c.get(3).map_or("", |m| m.as_str());
    let severity = if rest.starts_with("Fatal,") {
        Some(Severity::Fatal)
    } else if rest.starts_with("Non-fatal,") {
        Some(Severity::NonFatal)
    } else {
        None
    };
    Some(SxidEvent {
        nvswitch: c.get(1)?.as_str().to_string(),
        code,
        severity,
        detail: severity.is_none() && SXID_DETAIL.is_match(rest),
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

    /// One line per parsed line: `xid CODE PCI` or `sxid CODE PCI SEVERITY`, or why it did not parse.
    fn summary(line: &str) -> String {
        if let Some(x) = parse(line) {
            assert_eq!(x.message, line.trim());
            return format!("xid {} {}", x.code, x.pci_bus_id.unwrap_or_default());
        }
        match parse_sxid(line) {
            Some(s) => {
                assert_eq!(s.message, line.trim());
                let kind = match (s.detail, s.severity) {
                    (true, _) => "detail",
                    (false, Some(sev)) => sev.label(),
                    (false, None) => "no severity",
                };
                format!("sxid {} {} {kind}", s.code, s.nvswitch)
            }
            None => format!("not parsed: {line}"),
        }
    }

    #[test]
    fn sxid_lines() {
        let lines = [
            "[ 4021.1] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)",
            "nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Fatal, Link 10 LTSSM Fault Up",
            "nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Severity 1 Engine instance 10 Sub-engine instance 00",
            "nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Data {0x50610002, 0x10100030, 0x00000000}",
            "nvidia-nvswitch0: SXid (PCI:0004:00:00.0): 26006, SOE HALTED",
            "nvidia-nvswitch0: probe of 0000:86:00.0 failed",
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.",
        ];
        let got: Vec<String> = lines.iter().map(|l| summary(l)).collect();
        expect![[r#"
            [
                "sxid 12028 0000:05:00.0 non_fatal",
                "sxid 20034 0000:86:00.0 fatal",
                "sxid 20034 0000:86:00.0 detail",
                "sxid 20034 0000:86:00.0 detail",
                "sxid 26006 0004:00:00.0 no severity",
                "not parsed: nvidia-nvswitch0: probe of 0000:86:00.0 failed",
                "xid 79 0000:3b:00",
            ]
        "#]]
        .assert_debug_eq(&got);
    }

    /// Every line of the corpus of real Xid and SXid lines parses to a code, a PCI address and its text.
    #[test]
    fn corpus() {
        let text = std::fs::read_to_string(crate::source::golden::fixture("kmsg/nvrm-corpus.txt")).unwrap();
        let mut source = None;
        let mut got = Vec::new();
        for line in text.lines() {
            if let Some(comment) = line.strip_prefix('#') {
                source = comment.trim().starts_with("http").then_some(());
                continue;
            }
            assert!(source.take().is_some(), "no source URL above {line:?}");
            got.push(summary(line));
        }
        expect![[r#"
            [
                "xid 14 0000:03:00",
                "xid 31 0000:01:00",
                "xid 31 0000:01:00",
                "xid 13 0000:01:00",
                "xid 13 0000:01:00",
                "xid 32 0000:01:00",
                "xid 31 0000:0a:00",
                "xid 62 0000:0a:00",
                "xid 45 0000:0a:00",
                "xid 45 0000:dc:00",
                "xid 79 0000:44:00",
                "xid 94 0000:9b:00",
                "xid 144 0000:01:00",
                "xid 145 0018:01:00",
                "xid 149 0019:01:00",
                "xid 149 0000:00:00",
                "sxid 22013 0000:04:00.0 detail",
                "sxid 22013 0000:04:00.0 non_fatal",
                "sxid 22013 0000:04:00.0 detail",
                "sxid 12028 0000:84:00.0 detail",
                "sxid 24007 0000:c3:00.0 fatal",
                "sxid 20009 0000:06:00.0 non_fatal",
                "sxid 28006 0000:c1:00.0 non_fatal",
                "sxid 26006 0004:00:00.0 no severity",
                "sxid 12033 0000:c3:00.0 detail",
            ]
        "#]]
        .assert_debug_eq(&got);
    }
}
