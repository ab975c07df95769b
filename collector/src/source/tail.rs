//! Following a log: `/dev/kmsg` (one record per read, non-blocking) or a regular file (read from where
//! the last call stopped, reopened from its start when rotated or truncated). Polled by the sources
//! that read logs (`gpu` for Xids, `events`), so a log line costs nothing between collections.

use std::fs::File;
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

pub struct Tail {
    path: PathBuf,
    file: File,
    /// `/dev/kmsg` rather than a regular file.
    kmsg: bool,
    /// Regular files: the inode read, to notice rotation.
    ino: u64,
    /// Regular files: a line not yet ended by a newline.
    partial: String,
    /// A carriage return ends a line too (progress bars redraw with `\r` and no newline).
    cr_ends_line: bool,
}

impl Tail {
    /// Opens a log at its end (`at_end`: what was logged before is history) or at its start (a file
    /// that appeared after the collector started is all news).
    pub fn open(path: &Path, at_end: bool) -> std::io::Result<Tail> {
        let kmsg = path == Path::new("/dev/kmsg");
        let mut opts = std::fs::OpenOptions::new();
        opts.read(true);
        if kmsg {
            opts.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
        }
        let mut file = opts.open(path)?;
        if at_end {
            file.seek(SeekFrom::End(0))?;
        }
        let ino = file.metadata()?.ino();
        Ok(Tail { path: path.to_path_buf(), file, kmsg, ino, partial: String::new(), cr_ends_line: false })
    }

    /// Ends lines at a carriage return too, so each redraw of a progress bar is a line of its own.
    pub fn cr_ends_line(mut self) -> Tail {
        self.cr_ends_line = true;
        self
    }

    /// The complete lines logged since the last call.
    pub fn lines(&mut self) -> Vec<String> {
        if self.kmsg { self.read_kmsg() } else { self.read_file() }
    }

    fn read_kmsg(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 8192];
        loop {
            match self.file.read(&mut buf) {
                Ok(0) => break,
                // "prio,seq,usec,flags;message": keep the message, prefixed with the time and sequence
                // number, so repeated identical lines stay distinct events.
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
        // Rotated (a new file at the path) or truncated: start the new one from its beginning, so
        // lines written since the rotation are not missed.
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
        let mut bytes = Vec::new();
        if self.file.read_to_end(&mut bytes).is_err() {
            return Vec::new();
        }
        let mut text = std::mem::take(&mut self.partial);
        text.push_str(&String::from_utf8_lossy(&bytes));
        let ends: &[char] = if self.cr_ends_line { &['\n', '\r'] } else { &['\n'] };
        let complete = text.rfind(ends).map_or(0, |i| i + 1);
        self.partial = text[complete..].to_string();
        if self.cr_ends_line {
            text[..complete].split(ends).filter(|l| !l.is_empty()).map(String::from).collect()
        } else {
            text[..complete].lines().map(String::from).collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_file_is_followed_from_its_end_and_across_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kern.log");
        std::fs::write(&path, "old news\n").unwrap();
        let mut log = Tail::open(&path, true).unwrap();
        assert!(log.lines().is_empty());
        let append = |s: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
            f.write_all(s.as_bytes()).unwrap();
        };
        append("first\nsec");
        assert_eq!(log.lines(), vec!["first"], "a line without its newline waits");
        append("ond\n");
        assert_eq!(log.lines(), vec!["second"]);
        std::fs::rename(&path, dir.path().join("kern.log.1")).unwrap();
        std::fs::write(&path, "after rotation\n").unwrap();
        assert_eq!(log.lines(), vec!["after rotation"]);
        std::fs::write(&path, "tr\n").unwrap();
        assert_eq!(log.lines(), vec!["tr"], "truncated: read again from the start");
    }
}
