//! `NVRM: Xid` lines from the kernel log: `/dev/kmsg` (one record per read, non-blocking) or a log file
//! such as `/var/log/kern.log` (followed from its end, reopened when rotated or truncated).
//!
//! Both start at the end: Xids logged before the collector started are history, not news.

use super::backend::XidEvent;
use regex::Regex;
use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// `NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.`; drivers before
/// R450 write the address without `PCI:`.
static XID: LazyLock<Regex> = LazyLock::new(|| {
    // The pattern is a constant checked by the tests below.
    Regex::new(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+)(?:\.[0-9A-Fa-f]+)?\): (\d+)")
        .expect("valid regex")
});

pub struct KernelLog {
    path: PathBuf,
    file: File,
    /// `/dev/kmsg` rather than a regular file.
    kmsg: bool,
    /// Regular files: the inode read, to notice rotation.
    ino: u64,
    /// Regular files: a line not yet ended by a newline.
    partial: String,
}

impl KernelLog {
    /// Opens the log at its end. `None` (logged once) when it cannot be read: without CAP_SYSLOG
    /// `/dev/kmsg` refuses, and NVML's event set then stands in.
    pub fn open(path: &Path) -> Option<KernelLog> {
        let kmsg = path == Path::new("/dev/kmsg");
        let mut opts = std::fs::OpenOptions::new();
        opts.read(true);
        if kmsg {
            opts.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
        }
        let opened = opts.open(path).and_then(|mut f| {
            f.seek(SeekFrom::End(0))?;
            let ino = f.metadata()?.ino();
            Ok((f, ino))
        });
        match opened {
            Ok((file, ino)) => Some(KernelLog { path: path.to_path_buf(), file, kmsg, ino, partial: String::new() }),
            Err(error) => {
                tracing::info!(path = %path.display(), %error, "Kernel log not readable; Xids come from NVML events only");
                None
            }
        }
    }

    /// The Xid lines logged since the last call.
    pub fn xids(&mut self) -> Vec<XidEvent> {
        let lines = if self.kmsg { self.read_kmsg() } else { self.read_file() };
        lines.iter().filter_map(|l| parse(l)).collect()
    }

    fn read_kmsg(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                // "prio,seq,usec,flags;message": keep the message; the sequence number and time make
                // repeated identical lines distinct events.
                Ok(n) => {
                    let rec = String::from_utf8_lossy(&buf[..n]);
                    let rec = rec.lines().next().unwrap_or("");
                    if let Some((head, msg)) = rec.split_once(';') {
                        let mut h = head.split(',');
                        let seq = h.nth(1).unwrap_or("");
                        let usec = h.next().unwrap_or("");
                        out.push(format!("[{usec} #{seq}] {msg}"));
                    }
                }
                // EPIPE: records were overwritten before we read them; the next read goes on.
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::PIPE.raw_os_error()) => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => {
                    tracing::debug!(error = %e, "Reading /dev/kmsg failed");
                    break;
                }
            }
        }
        out
    }

    fn read_file(&mut self) -> Vec<String> {
        // Rotated (a new file at the path) or truncated: finish nothing of the old one and start the
        // new one from its beginning, so lines written since the rotation are not missed.
        if let Ok(meta) = std::fs::metadata(&self.path) {
            let pos = self.file.stream_position().unwrap_or(0);
            if (meta.ino() != self.ino || meta.len() < pos)
                && let Ok(f) = File::open(&self.path)
            {
                self.file = f;
                self.ino = meta.ino();
                self.partial.clear();
            }
        }
        let mut text = String::new();
        let mut bytes = Vec::new();
        if self.file.read_to_end(&mut bytes).is_err() {
            return Vec::new();
        }
        text.push_str(&self.partial);
        text.push_str(&String::from_utf8_lossy(&bytes));
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        self.partial = text[complete..].to_string();
        text[..complete].lines().map(String::from).collect()
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

    #[test]
    fn a_log_file_is_followed_from_its_end_and_across_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kern.log");
        let old = "NVRM: Xid (PCI:0000:3b:00): 31, old news\n";
        std::fs::write(&path, old).unwrap();
        let mut log = KernelLog::open(&path).unwrap();
        assert!(log.xids().is_empty());
        let append = |s: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(s.as_bytes()).unwrap();
        };
        append("NVRM: Xid (PCI:0000:3b:00): 79, first\nNVRM: Xid (PCI:0000:3b:00): 79, sec");
        assert_eq!(log.xids().len(), 1, "a line without its newline waits");
        append("ond\n");
        assert_eq!(log.xids()[0].message, "NVRM: Xid (PCI:0000:3b:00): 79, second");
        std::fs::rename(&path, dir.path().join("kern.log.1")).unwrap();
        std::fs::write(&path, "NVRM: Xid (PCI:0000:3b:00): 94, after rotation\n").unwrap();
        let after = log.xids();
        assert_eq!(after.len(), 1);
        assert_eq!(after[0].code, 94);
    }
}
