//! `host`: CPU time per mode and utilization (/proc/stat), load (/proc/loadavg), memory and swap
//! (/proc/meminfo), uptime (/proc/uptime) and processes (/proc/stat, /proc/loadavg).
//!
//! CPU time is summed over all CPUs (the `cpu` line), not per CPU: a 192-thread node would otherwise
//! send 1,500 CPU series, more than its 8 GPUs together. The sysinfo crate adds nothing these four files
//! do not give, so it is not used.

use super::procfile::ProcFile;
use super::{Source, SourceError};
use crate::batch::{Batch, Point};
use procfs_core::{ExplicitSystemInfo, FromReadSI, KernelStats, LoadAverage, Meminfo, Uptime};
use std::path::Path;

pub struct Host {
    stat: ProcFile,
    loadavg: ProcFile,
    meminfo: ProcFile,
    uptime: ProcFile,
    /// /proc/stat counts in USER_HZ ticks, which the kernel fixes at 100 on every architecture Linux
    /// runs GPUs on; read from sysconf once anyway.
    ticks_per_second: u64,
    /// The previous reading's per-mode ticks, for utilization over the interval.
    last: Option<[u64; MODES.len()]>,
}

const MODES: [&str; 8] = ["user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"];

impl Host {
    pub fn new(procfs_root: &Path) -> Host {
        let file = |name: &str| ProcFile::new(procfs_root.join(name));
        Host {
            stat: file("stat"),
            loadavg: file("loadavg"),
            meminfo: file("meminfo"),
            uptime: file("uptime"),
            ticks_per_second: rustix::param::clock_ticks_per_second(),
            last: None,
        }
    }

    #[cfg(test)]
    pub(crate) fn with_root(&mut self, procfs_root: &Path) {
        let last = self.last;
        *self = Host::new(procfs_root);
        self.last = last;
        self.ticks_per_second = 100;
    }

    fn cpu(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let si = ExplicitSystemInfo {
            boot_time_secs: 0,
            ticks_per_second: self.ticks_per_second,
            page_size: 4096,
            is_little_endian: cfg!(target_endian = "little"),
        };
        let text = self.stat.read()?;
        let stat = KernelStats::from_read(text, &si).map_err(|e| SourceError::parse(self.stat.path(), e))?;
        let t = &stat.total;
        // guest and guest_nice are already inside user and nice.
        let ticks = [
            t.user,
            t.nice,
            t.system,
            t.idle,
            t.iowait.unwrap_or(0),
            t.irq.unwrap_or(0),
            t.softirq.unwrap_or(0),
            t.steal.unwrap_or(0),
        ];
        let tps = self.ticks_per_second as f64;
        let delta = self.last.map(|last| {
            let d: Vec<u64> = ticks.iter().zip(last).map(|(a, b)| a.saturating_sub(b)).collect();
            let total: u64 = d.iter().sum();
            (d, total)
        });
        for (i, mode) in MODES.iter().enumerate() {
            let mut p = Point::new("host", now).tag("mode", *mode).field("cpu_seconds_total", ticks[i] as f64 / tps);
            if let Some((d, total)) = &delta
                && *total > 0
            {
                p = p.field("cpu_utilization_ratio", d[i] as f64 / *total as f64);
            }
            batch.push(p);
        }
        let busy = delta.and_then(|(d, total)| (total > 0).then(|| 1.0 - (d[3] + d[4]) as f64 / total as f64));
        self.last = Some(ticks);
        batch.push(
            Point::new("host", now)
                .field("cpus", stat.cpu_time.len() as f64)
                .field_opt("cpu_busy_ratio", busy)
                .field("boot_time_seconds", stat.btime as f64)
                .field("forks_total", stat.processes as f64)
                .field("context_switches_total", stat.ctxt as f64)
                .field_opt("processes_running", stat.procs_running.map(f64::from))
                .field_opt("processes_blocked", stat.procs_blocked.map(f64::from)),
        );
        Ok(())
    }

    fn load(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let l: LoadAverage = self.loadavg.parse()?;
        batch.push(
            Point::new("host", now)
                .field("load1", widen(l.one))
                .field("load5", widen(l.five))
                .field("load15", widen(l.fifteen))
                .field("threads", f64::from(l.max)),
        );
        Ok(())
    }

    fn memory(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let m: Meminfo = self.meminfo.parse()?;
        // MemAvailable exists since Linux 3.14; before it, free + buffers + cached is the usual estimate.
        let available = m.mem_available.unwrap_or(m.mem_free + m.buffers + m.cached);
        batch.push(
            Point::new("host", now)
                .field("memory_total_bytes", m.mem_total as f64)
                .field("memory_free_bytes", m.mem_free as f64)
                .field("memory_available_bytes", available as f64)
                .field("memory_used_bytes", m.mem_total.saturating_sub(available) as f64)
                .field("memory_buffers_bytes", m.buffers as f64)
                .field("memory_cached_bytes", m.cached as f64)
                .field("memory_shared_bytes", m.shmem.unwrap_or(0) as f64)
                .field("swap_total_bytes", m.swap_total as f64)
                .field("swap_free_bytes", m.swap_free as f64)
                .field("swap_used_bytes", m.swap_total.saturating_sub(m.swap_free) as f64),
        );
        Ok(())
    }

    fn uptime(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let u: Uptime = self.uptime.parse()?;
        batch.push(Point::new("host", now).field("uptime_seconds", u.uptime));
        Ok(())
    }
}

/// procfs-core parses the load averages as f32; widened bit for bit, 2.12 would read 2.119999885559082.
/// The kernel prints two decimals, so the shortest f32 spelling is the number it wrote.
fn widen(v: f32) -> f64 {
    v.to_string().parse().unwrap_or(f64::from(v))
}

impl Source for Host {
    fn name(&self) -> &'static str {
        "host"
    }

    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        // Each file on its own: one unreadable file costs its metrics, not the others'.
        let results = [self.cpu(now, batch), self.load(now, batch), self.memory(now, batch), self.uptime(now, batch)];
        results.into_iter().find(Result::is_err).unwrap_or(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::golden;

    #[test]
    fn golden_host() {
        let mut h = Host::new(Path::new("/nonexistent"));
        h.with_root(&golden::fixture("node/proc"));
        let mut first = Batch::new();
        h.collect(1_000, &mut first).unwrap();
        h.with_root(&golden::fixture("node-later/proc"));
        let mut second = Batch::new();
        // The later tree has only /proc/stat: the other files fail, and their error is reported while
        // the CPU points are still written.
        let err = h.collect(3_000, &mut second).unwrap_err();
        assert!(err.to_string().contains("node-later/proc/loadavg"), "{err}");
        golden::check("host", &first);
        golden::check("host-later", &second);
    }
}
