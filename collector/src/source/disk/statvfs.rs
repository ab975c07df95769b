//! Filesystem sizes: statvfs(3) needs a real path, so it sits behind a trait that tests replace with
//! figures recorded on a real machine.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// What `statvfs` says about one mounted filesystem.
#[derive(Debug, Clone, Deserialize)]
pub struct FsStat {
    pub fragment_size: u64,
    pub blocks: u64,
    pub blocks_free: u64,
    pub blocks_available: u64,
    pub files: u64,
    pub files_free: u64,
    pub read_only: bool,
}

pub trait Statfs: Send {
    fn statvfs(&self, mountpoint: &Path) -> std::io::Result<FsStat>;
}

/// The real call.
///
/// Known gap: statvfs on a hung NFS or Lustre mount blocks; the agent's deadline then marks the whole
/// `disk` source failed until the call returns. node_exporter's per-mount stuck tracking is the fix.
pub struct RealStatfs;

impl Statfs for RealStatfs {
    fn statvfs(&self, mountpoint: &Path) -> std::io::Result<FsStat> {
        let s = rustix::fs::statvfs(mountpoint)?;
        Ok(FsStat {
            fragment_size: s.f_frsize,
            blocks: s.f_blocks,
            blocks_free: s.f_bfree,
            blocks_available: s.f_bavail,
            files: s.f_files,
            files_free: s.f_ffree,
            read_only: s.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY),
        })
    }
}

/// Figures recorded per mount point (`statvfs.json` beside a fixture tree).
pub struct RecordedStatfs(pub BTreeMap<String, FsStat>);

impl Statfs for RecordedStatfs {
    fn statvfs(&self, mountpoint: &Path) -> std::io::Result<FsStat> {
        self.0
            .get(&mountpoint.display().to_string())
            .cloned()
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotFound, "not recorded"))
    }
}
