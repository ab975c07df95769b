//! A /proc file kept open between collections and read again from offset 0, the way long-running
//! agents read procfs: each collection then costs the kernel's rendering of the file and one `pread`,
//! not a path lookup, an open and a close as well (about a third of the host, disk and net sources'
//! time on a profile). The text goes to procfs-core's parsers, which read any `Read`, so fixture trees
//! work the same.
//!
//! The mount table is also kept between collections ([`Mounts`]): the kernel marks an open
//! `/proc/self/mounts` with `POLLPRI` when a filesystem is mounted or unmounted (proc(5)), so the table
//! is read again only then, instead of rendering every mount's options on every collection.

use super::SourceError;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

pub(crate) struct ProcFile {
    path: PathBuf,
    file: Option<File>,
    buf: Vec<u8>,
}

impl ProcFile {
    pub(crate) fn new(path: PathBuf) -> ProcFile {
        ProcFile { path, file: None, buf: Vec::new() }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The file's whole text as it is now. A failed read closes the file, so the next collection
    /// opens it again (a file that came back, a fixture tree that changed).
    pub(crate) fn read(&mut self) -> Result<&[u8], SourceError> {
        let file = match &self.file {
            Some(f) => f,
            None => self.file.insert(File::open(&self.path).map_err(|e| SourceError::io(&self.path, e))?),
        };
        self.buf.clear();
        let mut at = 0u64;
        loop {
            if self.buf.capacity() - self.buf.len() < 4096 {
                self.buf.reserve(self.buf.capacity().max(4096));
            }
            let len = self.buf.len();
            let spare = self.buf.capacity() - len;
            self.buf.resize(len + spare, 0);
            match file.read_at(&mut self.buf[len..], at) {
                Ok(0) => {
                    self.buf.truncate(len);
                    return Ok(&self.buf);
                }
                Ok(n) => {
                    self.buf.truncate(len + n);
                    at += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => self.buf.truncate(len),
                Err(e) => {
                    self.buf.truncate(len);
                    self.file = None;
                    return Err(SourceError::io(&self.path, e));
                }
            }
        }
    }

    /// The file parsed by a procfs-core parser.
    pub(crate) fn parse<T: procfs_core::FromRead>(&mut self) -> Result<T, SourceError> {
        let text = self.read()?;
        T::from_read(text).map_err(|e| SourceError::parse(&self.path, e))
    }

    /// Whether the kernel has flagged the open file with `POLLPRI` since the last poll: for a mount
    /// table, a mount or unmount. A regular file (a fixture) is never flagged; a closed one counts as
    /// changed.
    fn flagged(&self) -> bool {
        let Some(f) = &self.file else { return true };
        let mut fds = [rustix::event::PollFd::new(f, rustix::event::PollFlags::PRI)];
        match rustix::event::poll(&mut fds, Some(&rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 })) {
            Ok(0) => false,
            Ok(_) => fds[0].revents().intersects(rustix::event::PollFlags::PRI | rustix::event::PollFlags::ERR),
            Err(_) => true,
        }
    }
}

/// The mount table, parsed again only when it changed.
pub(crate) struct Mounts {
    file: ProcFile,
    table: Option<Vec<procfs_core::MountEntry>>,
}

impl Mounts {
    pub(crate) fn new(path: PathBuf) -> Mounts {
        Mounts { file: ProcFile::new(path), table: None }
    }

    /// The current mount table.
    pub(crate) fn table(&mut self) -> Result<&[procfs_core::MountEntry], SourceError> {
        // Polled before reading, so a change during the read is seen at the next collection.
        if self.file.flagged() || self.table.is_none() {
            self.table = None;
            self.table = Some(self.file.parse()?);
        }
        Ok(self.table.as_deref().unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_whole_each_time_and_reopened_after_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let long: String = (0..3000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, &long).unwrap();
        let mut f = ProcFile::new(path.clone());
        assert_eq!(f.read().unwrap(), long.as_bytes());
        // Written in place (shorter): read again from the start, the old tail gone.
        std::fs::write(&path, "short\n").unwrap();
        assert_eq!(f.read().unwrap(), b"short\n");
        std::fs::remove_file(&path).unwrap();
        let mut g = ProcFile::new(path.clone());
        let err = g.read().unwrap_err().to_string();
        assert!(err.contains("/f") && err.contains("No such file"), "{err}");
        // The failed open is tried again at the next read.
        std::fs::write(&path, "back\n").unwrap();
        assert_eq!(g.read().unwrap(), b"back\n");
    }

    #[test]
    fn the_live_mount_table_is_read_once_until_it_changes() {
        let mut m = Mounts::new(PathBuf::from("/proc/self/mounts"));
        let first = m.table().unwrap().len();
        assert!(first > 0);
        // Nothing mounted since: not flagged, the table kept.
        assert!(!m.file.flagged());
        assert_eq!(m.table().unwrap().len(), first);
    }
}
