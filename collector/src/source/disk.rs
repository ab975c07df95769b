//! `disk`: block devices from /proc/diskstats (measurement `disk`) and filesystems from /proc/mounts
//! plus statvfs (measurement `fs`).
//!
//! Counters are kept as the kernel gives them (converted to bytes and seconds), so IOPS, throughput and
//! average latency are `rate()`s in the query: `rate(disk_read_time_seconds_total) /
//! rate(disk_reads_completed_total)` is the mean read latency. Utilization over the last interval is
//! also written as a gauge, because it needs two readings.

use super::procfile::{Mounts, ProcFile};
use super::{Source, SourceError};
use crate::batch::{Batch, Point};
use crate::config::DiskSettings;
use procfs_core::DiskStats;
use std::collections::HashMap;
use std::path::Path;

pub mod statvfs;

pub use statvfs::{FsStat, RealStatfs, Statfs};

/// The kernel counts diskstats sectors in 512-byte units whatever the device's sector size.
const SECTOR_BYTES: f64 = 512.0;

pub struct Disk {
    diskstats: ProcFile,
    mounts: Mounts,
    settings: DiskSettings,
    statfs: Box<dyn Statfs>,
    /// Per device: (time of reading in ms, io_ticks in ms), for utilization.
    last: HashMap<String, (i64, u64)>,
}

impl Disk {
    pub fn new(procfs_root: &Path, settings: DiskSettings) -> Disk {
        Disk::with_statfs(procfs_root, settings, Box::new(RealStatfs))
    }

    /// A disk source whose filesystem figures come from `statfs` (tests use recorded ones).
    pub fn with_statfs(procfs_root: &Path, settings: DiskSettings, statfs: Box<dyn Statfs>) -> Disk {
        Disk {
            diskstats: ProcFile::new(procfs_root.join("diskstats")),
            mounts: Mounts::new(procfs_root.join("mounts")),
            settings,
            statfs,
            last: HashMap::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn set_root(&mut self, procfs_root: &Path) {
        self.diskstats = ProcFile::new(procfs_root.join("diskstats"));
        self.mounts = Mounts::new(procfs_root.join("mounts"));
    }

    fn diskstats(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let stats: DiskStats = self.diskstats.parse()?;
        let secs = |ms: u64| ms as f64 / 1000.0;
        for d in stats.0 {
            if self.settings.devices_exclude.is_match(&d.name) {
                continue;
            }
            let utilization = match self.last.insert(d.name.clone(), (now, d.time_in_progress)) {
                Some((t0, busy0)) if now > t0 => {
                    Some((d.time_in_progress.saturating_sub(busy0) as f64 / (now - t0) as f64).min(1.0))
                }
                _ => None,
            };
            batch.push(
                Point::new("disk", now)
                    .tag("device", &d.name)
                    .field("reads_completed_total", d.reads as f64)
                    .field("reads_merged_total", d.merged as f64)
                    .field("read_bytes_total", d.sectors_read as f64 * SECTOR_BYTES)
                    .field("read_time_seconds_total", secs(d.time_reading))
                    .field("writes_completed_total", d.writes as f64)
                    .field("writes_merged_total", d.writes_merged as f64)
                    .field("written_bytes_total", d.sectors_written as f64 * SECTOR_BYTES)
                    .field("write_time_seconds_total", secs(d.time_writing))
                    .field("io_in_progress", d.in_progress as f64)
                    .field("io_time_seconds_total", secs(d.time_in_progress))
                    .field("io_time_weighted_seconds_total", secs(d.weighted_time_in_progress))
                    .field_opt("discards_completed_total", d.discards.map(|v| v as f64))
                    .field_opt("discarded_bytes_total", d.sectors_discarded.map(|v| v as f64 * SECTOR_BYTES))
                    .field_opt("discard_time_seconds_total", d.time_discarding.map(secs))
                    .field_opt("flushes_completed_total", d.flushes.map(|v| v as f64))
                    .field_opt("flush_time_seconds_total", d.time_flushing.map(secs))
                    .field_opt("utilization_ratio", utilization),
            );
        }
        Ok(())
    }

    fn filesystems(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let mounts = self.mounts.table()?;
        let mut seen = std::collections::HashSet::new();
        let mut first_error = None;
        for m in mounts {
            if self.settings.fs_types_exclude.is_match(&m.fs_vfstype)
                || self.settings.mount_points_exclude.is_match(&m.fs_file)
                // A mount point mounted over again shows twice; the last mount is the visible one, and
                // statvfs answers for it either way.
                || !seen.insert(m.fs_file.as_str())
            {
                continue;
            }
            match self.statfs.statvfs(Path::new(&m.fs_file)) {
                Ok(s) => {
                    let b = s.fragment_size as f64;
                    batch.push(
                        Point::new("fs", now)
                            .tag("device", &m.fs_spec)
                            .tag("mountpoint", &m.fs_file)
                            .tag("fstype", &m.fs_vfstype)
                            .field("size_bytes", s.blocks as f64 * b)
                            .field("free_bytes", s.blocks_free as f64 * b)
                            .field("avail_bytes", s.blocks_available as f64 * b)
                            .field("used_bytes", s.blocks.saturating_sub(s.blocks_free) as f64 * b)
                            .field("files", s.files as f64)
                            .field("files_free", s.files_free as f64)
                            .field("readonly", if s.read_only { 1.0 } else { 0.0 }),
                    );
                }
                Err(e) => {
                    tracing::debug!(mountpoint = %m.fs_file, error = %e, "statvfs failed");
                    first_error.get_or_insert(SourceError::io(Path::new(&m.fs_file), e));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Source for Disk {
    fn name(&self) -> &'static str {
        "disk"
    }

    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let a = self.diskstats(now, batch);
        let b = self.filesystems(now, batch);
        a.and(b)
    }
}

#[cfg(test)]
mod tests;
