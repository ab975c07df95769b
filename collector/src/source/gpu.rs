//! `gpu`: NVIDIA GPUs through a [`GpuBackend`] (NVML on real machines, JSON fixtures in tests), Xid
//! errors from NVML's event set and the kernel log, and per-process GPU memory attributed to the
//! container, Kubernetes pod or Slurm job of the process (from `/proc/<pid>/cgroup`).
//!
//! Xid errors are owned by this source alone: a counter per GPU and code (`gpu_xid_errors_total`) that
//! counts every occurrence and an event per GPU, code and collection (`gpu_xid`, with `count` for a
//! burst), so a repeated Xid is never lost (unlike dcgm-exporter's gauge of the last one). The kernel
//! log has every occurrence with its text; NVML's event set is used only where the kernel log cannot
//! be read, so one Xid is never counted twice. NVSwitch errors (SXid) come from the kernel log alone,
//! counted and written the same way (`gpu_nvswitch_sxid_errors_total`, `gpu_nvswitch_sxid`).
//!
//! Xids matter most exactly when NVML does not answer: a GPU fallen off the bus fails NVML's calls or
//! hangs them. So the backend runs on a thread of its own (`worker`) that a collection waits for only
//! until shortly before the source's timeout; the kernel log is read after that wait whatever NVML did
//! (failed, hung, or could not even start where NVIDIA's driver is loaded), and the collection then
//! reports NVML's failure (`argus_collector_source_success{source="gpu"} 0`) with the Xids in its batch.
//!
//! With `dcgm_names`, the readings are also written under dcgm-exporter's names and labels (`dcgm`).

use super::{Source, SourceError};
use crate::batch::{Batch, Point};
use crate::config::{GpuBackendKind, GpuSettings};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod backend;
mod cgroup;
mod dcgm;
pub mod fake;
mod kmsg;
pub mod nvml;
mod worker;
mod xid;

pub use backend::{BackendError, Device, GpuBackend, XidEvent};

/// NVML's clocks-event (throttle) reason bits and our `reason` label for each (nvml.h,
/// `nvmlClocksEventReason*`).
const THROTTLE_REASONS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "applications_clocks_setting"),
    (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"),
    (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clock_setting"),
];

pub struct Gpu {
    /// The backend on its thread, or why it could not start.
    backend: Result<worker::Worker, String>,
    /// How long a collection waits for the backend's devices.
    wait: Duration,
    proc: PathBuf,
    dcgm_names: bool,
    hostname: String,
    kernel_log: Option<kmsg::KernelLog>,
    known: xid::Known,
    counters: xid::Counters,
}

impl Gpu {
    /// Builds the backend the config names. A backend that cannot start (no NVIDIA library) is kept as
    /// its reason. Where NVIDIA's driver is loaded (`/proc/driver/nvidia`) the kernel log is read all the
    /// same, and every collection reports the reason as a failure; elsewhere (a machine without GPUs)
    /// the first collection reports it as `Unavailable` and the source stops.
    ///
    /// `timeout` is the source's: a collection gives up waiting for NVML a little before it, so that
    /// the kernel log is still read and the Xids written within it.
    pub fn build(
        settings: &GpuSettings,
        timeout: Duration,
        procfs_root: &Path,
        labels: &BTreeMap<String, String>,
    ) -> Gpu {
        let backend: Result<Box<dyn GpuBackend>, String> = match &settings.backend {
            GpuBackendKind::Nvml => nvml::Nvml::init().map(|b| Box::new(b) as Box<dyn GpuBackend>),
            GpuBackendKind::NvmlLibrary(path) => nvml::Nvml::open(path).map(|b| Box::new(b) as Box<dyn GpuBackend>),
            GpuBackendKind::Fake(path) => fake::Fake::load(path).map(|b| Box::new(b) as Box<dyn GpuBackend>),
        }
        .map_err(|e| e.to_string());
        let kernel_log = match &settings.kernel_log {
            Some(path) if backend.is_ok() || procfs_root.join("driver/nvidia").exists() => kmsg::KernelLog::open(path),
            _ => None,
        };
        let hostname = labels.get("host").cloned().unwrap_or_default();
        Gpu::new(backend, timeout, procfs_root, settings.dcgm_names, hostname, kernel_log)
    }

    #[cfg(test)]
    pub(crate) fn for_tests(backend: Box<dyn GpuBackend>, procfs_root: &Path, dcgm_names: bool) -> Gpu {
        Gpu::new(Ok(backend), Duration::from_secs(10), procfs_root, dcgm_names, "node-7".into(), None)
    }

    /// Reads Xids and SXids from the log at `path` (followed from its end) instead of NVML's events.
    #[cfg(test)]
    pub(crate) fn with_kernel_log(mut self, path: &Path) -> Gpu {
        self.kernel_log = kmsg::KernelLog::open(path);
        self
    }

    fn new(
        backend: Result<Box<dyn GpuBackend>, String>,
        timeout: Duration,
        procfs_root: &Path,
        dcgm_names: bool,
        hostname: String,
        kernel_log: Option<kmsg::KernelLog>,
    ) -> Gpu {
        let backend = backend
            .and_then(|b| worker::Worker::spawn(b).map_err(|e| format!("starting the gpu backend's thread: {e}")));
        // What is left of the timeout after the wait is for the kernel log and the points: a fifth of
        // it, at most a second.
        let wait = timeout.saturating_sub((timeout / 5).min(Duration::from_secs(1)));
        Gpu {
            backend,
            wait,
            proc: procfs_root.to_path_buf(),
            dcgm_names,
            hostname,
            kernel_log,
            known: xid::Known::default(),
            counters: xid::Counters::default(),
        }
    }

    fn device_points(&self, d: &Device, now: i64, batch: &mut Batch) {
        let tags = |p: Point| {
            p.tag("gpu", d.index.to_string())
                .tag("uuid", &d.uuid)
                .tag("device", format!("nvidia{}", d.index))
                .tag("model", &d.name)
        };
        let pct = |v: Option<f64>| v.map(|x| x / 100.0);
        let num = |v: Option<u64>| v.map(|x| x as f64);
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        let mut p = tags(Point::new("gpu", now))
            .field_opt("utilization_ratio", pct(d.utilization_gpu_percent))
            .field_opt("memory_utilization_ratio", pct(d.utilization_memory_percent))
            .field_opt("memory_total_bytes", num(d.memory_total_bytes))
            .field_opt("memory_used_bytes", num(d.memory_used_bytes))
            .field_opt("memory_free_bytes", num(d.memory_free_bytes))
            .field_opt("temperature_celsius", d.temperature_celsius)
            .field_opt("memory_temperature_celsius", d.memory_temperature_celsius)
            .field_opt("power_watts", d.power_watts)
            .field_opt("power_limit_watts", d.power_limit_watts)
            .field_opt("energy_joules_total", d.energy_joules)
            .field_opt("sm_clock_hertz", d.sm_clock_hz)
            .field_opt("memory_clock_hertz", d.memory_clock_hz)
            .field_opt("pcie_transmit_bytes_per_second", d.pcie_tx_bytes_per_second)
            .field_opt("pcie_receive_bytes_per_second", d.pcie_rx_bytes_per_second)
            .field_opt("pcie_replays_total", num(d.pcie_replay_total))
            .field_opt("fan_speed_ratio", pct(d.fan_speed_percent))
            .field_opt("performance_state", d.performance_state.map(f64::from))
            .field_opt("mig_enabled", d.mig_enabled.map(flag))
            .field("processes", d.processes.len() as f64);
        if let Some(e) = &d.ecc {
            p = p
                .field("ecc_errors_corrected_total", e.corrected_volatile as f64)
                .field("ecc_errors_uncorrected_total", e.uncorrected_volatile as f64)
                .field("ecc_errors_corrected_aggregate_total", e.corrected_aggregate as f64)
                .field("ecc_errors_uncorrected_aggregate_total", e.uncorrected_aggregate as f64);
        }
        if let Some(r) = &d.retired_pages {
            p = p
                .field("retired_pages_single_bit", r.single_bit as f64)
                .field("retired_pages_double_bit", r.double_bit as f64)
                .field("retired_pages_pending", flag(r.pending));
        }
        if let Some(r) = &d.remapped_rows {
            p = p
                .field("remapped_rows_correctable", r.correctable as f64)
                .field("remapped_rows_uncorrectable", r.uncorrectable as f64)
                .field("remapped_rows_pending", flag(r.pending))
                .field("remapped_rows_failed", flag(r.failed));
        }
        if let Some(g) = &d.gpm {
            p = p
                .field_opt("sm_activity_ratio", g.sm_activity_ratio)
                .field_opt("sm_occupancy_ratio", g.sm_occupancy_ratio)
                .field_opt("tensor_activity_ratio", g.tensor_activity_ratio)
                .field_opt("dram_activity_ratio", g.dram_activity_ratio);
        }
        batch.push(p);
        if let Some(mask) = d.throttle_reasons {
            for (bit, reason) in THROTTLE_REASONS {
                batch.push(
                    tags(Point::new("gpu", now)).tag("reason", *reason).field("throttle_reason", flag(mask & bit != 0)),
                );
            }
        }
        for l in &d.nvlinks {
            batch.push(
                tags(Point::new("gpu", now))
                    .tag("link", l.link.to_string())
                    .field("nvlink_active", flag(l.active))
                    .field_opt("nvlink_transmit_bytes_total", num(l.tx_bytes_total))
                    .field_opt("nvlink_receive_bytes_total", num(l.rx_bytes_total))
                    .field_opt("nvlink_replay_errors_total", num(l.replay_errors_total))
                    .field_opt("nvlink_recovery_errors_total", num(l.recovery_errors_total))
                    .field_opt("nvlink_crc_errors_total", num(l.crc_errors_total)),
            );
        }
        for m in &d.mig_instances {
            batch.push(
                tags(Point::new("gpu", now))
                    .tag("mig_uuid", &m.uuid)
                    .tag("mig_profile", &m.profile)
                    .tag("gpu_instance", m.gpu_instance_id.to_string())
                    .tag("compute_instance", m.compute_instance_id.to_string())
                    .field_opt("mig_memory_used_bytes", num(m.memory_used_bytes))
                    .field_opt("mig_memory_total_bytes", num(m.memory_total_bytes)),
            );
        }
        self.process_points(d, now, batch, &tags);
    }

    /// GPU memory per owner: processes of one container, pod or Slurm job are summed; a process with no
    /// owner keeps its `pid` label.
    fn process_points(&self, d: &Device, now: i64, batch: &mut Batch, tags: &dyn Fn(Point) -> Point) {
        let mut owners: BTreeMap<cgroup::Owner, f64> = BTreeMap::new();
        for pr in &d.processes {
            let Some(used) = pr.used_memory_bytes else { continue };
            let mut owner = cgroup::owner(&self.proc, pr.pid);
            if owner.is_empty() {
                owner.pid = Some(pr.pid);
            }
            *owners.entry(owner).or_default() += used as f64;
        }
        for (o, used) in owners {
            batch.push(
                tags(Point::new("gpu", now))
                    .tag("container_id", o.container_id.unwrap_or_default())
                    .tag("pod_uid", o.pod_uid.unwrap_or_default())
                    .tag("job", o.slurm_job.unwrap_or_default())
                    .tag("pid", o.pid.map(|p| p.to_string()).unwrap_or_default())
                    .field("process_memory_used_bytes", used),
            );
        }
    }
}

impl Source for Gpu {
    fn name(&self) -> &'static str {
        "gpu"
    }

    /// Devices first, waiting for NVML at most until shortly before the source's timeout; then the
    /// kernel log, whatever NVML did; then NVML's failure, if any, with the Xids already in `batch`.
    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let reads_log = self.kernel_log.is_some();
        let (devices, nvml_xids) = match &mut self.backend {
            Ok(w) => {
                let (devices, xids) = w.read(self.wait);
                (devices.map_err(|f| failure(f, reads_log)), xids)
            }
            Err(reason) if !reads_log => return Err(SourceError::Unavailable(reason.clone())),
            Err(reason) => (Err(SourceError::Backend(format!("{reason}; Xids from the kernel log only"))), Vec::new()),
        };
        if let Err(SourceError::Unavailable(_)) = &devices {
            return devices.map(|_| ());
        }
        if let Ok(devices) = &devices {
            self.known = xid::Known::new(devices);
            for d in devices {
                self.device_points(d, now, batch);
                if self.dcgm_names {
                    dcgm::points(d, &self.hostname, now, batch);
                }
            }
        }
        let (xids, sxids) = match &mut self.kernel_log {
            Some(log) => {
                let e = log.errors();
                (e.xids, e.sxids)
            }
            None => (nvml_xids, Vec::new()),
        };
        self.counters.xid_points(xids, &self.known, now, batch);
        self.counters.sxid_points(sxids, now, batch);
        devices.map(|_| ())
    }
}

/// A failed device reading as the collection reports it. `Unavailable` stops the source, so it is
/// reported only where no kernel log is read.
fn failure(f: worker::Failure, reads_log: bool) -> SourceError {
    match f {
        worker::Failure::Backend(BackendError::Unavailable(r)) if !reads_log => SourceError::Unavailable(r),
        worker::Failure::Backend(BackendError::Unavailable(r) | BackendError::Failed(r)) => SourceError::Backend(r),
        worker::Failure::Hung(d) => {
            SourceError::Backend(format!("gpu backend call has not returned after {:.1}s", d.as_secs_f64()))
        }
        worker::Failure::Stopped => SourceError::Backend("gpu backend thread stopped".into()),
    }
}

#[cfg(test)]
mod tests;
