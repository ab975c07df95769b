//! `gpu`: NVIDIA GPUs through a [`GpuBackend`] (NVML on real machines, JSON fixtures in tests), Xid
//! errors from NVML's event set and the kernel log, and per-process GPU memory attributed to the
//! container, Kubernetes pod or Slurm job of the process (from `/proc/<pid>/cgroup`).
//!
//! Xid errors are owned by this source alone: a counter per GPU and code (`gpu_xid_errors_total`) and
//! an event per occurrence (`gpu_xid`), so a repeated Xid is never lost (unlike dcgm-exporter's gauge
//! of the last one). The kernel log has every occurrence with its text; NVML's event set is used
//! only where the kernel log cannot be read, so one Xid is never counted twice.
//!
//! With `dcgm_names`, the readings are also written under dcgm-exporter's names and labels (`dcgm`).

use super::{Source, SourceError};
use crate::batch::{Batch, Point};
use crate::config::{GpuBackendKind, GpuSettings};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

pub mod backend;
mod cgroup;
mod dcgm;
pub mod fake;
mod kmsg;
pub mod nvml;

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
    backend: Result<Box<dyn GpuBackend>, String>,
    proc: PathBuf,
    dcgm_names: bool,
    hostname: String,
    kernel_log: Option<kmsg::KernelLog>,
    /// Xids counted since start.
    xids: BTreeMap<XidKey, u64>,
}

impl Gpu {
    /// Builds the backend the config names. A backend that cannot start (no NVIDIA library) is kept as
    /// its reason, which the first collection reports as `Unavailable`.
    pub fn build(settings: &GpuSettings, procfs_root: &Path, labels: &BTreeMap<String, String>) -> Gpu {
        let backend: Result<Box<dyn GpuBackend>, String> = match &settings.backend {
            GpuBackendKind::Nvml => nvml::Nvml::init().map(|b| Box::new(b) as Box<dyn GpuBackend>),
            GpuBackendKind::Fake(path) => fake::Fake::load(path).map(|b| Box::new(b) as Box<dyn GpuBackend>),
        }
        .map_err(|e| e.to_string());
        let kernel_log = match (&backend, &settings.kernel_log) {
            (Ok(_), Some(path)) => kmsg::KernelLog::open(path),
            _ => None,
        };
        Gpu::new(backend, procfs_root, settings.dcgm_names, labels.get("host").cloned().unwrap_or_default(), kernel_log)
    }

    #[cfg(test)]
    pub(crate) fn for_tests(backend: Box<dyn GpuBackend>, procfs_root: &Path, dcgm_names: bool) -> Gpu {
        Gpu::new(Ok(backend), procfs_root, dcgm_names, "node-7".into(), None)
    }

    fn new(
        backend: Result<Box<dyn GpuBackend>, String>,
        procfs_root: &Path,
        dcgm_names: bool,
        hostname: String,
        kernel_log: Option<kmsg::KernelLog>,
    ) -> Gpu {
        Gpu { backend, proc: procfs_root.to_path_buf(), dcgm_names, hostname, kernel_log, xids: BTreeMap::new() }
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

    /// Counts and records Xids; `devices` maps them to a GPU index and UUID (or, for a GPU NVML does not
    /// see, keeps the kernel's PCI address).
    fn xid_points(&mut self, events: Vec<XidEvent>, devices: &[Device], now: i64, batch: &mut Batch) {
        let by_bus: HashMap<Option<(u32, u32, u32)>, &Device> =
            devices.iter().map(|d| (kmsg::bus_key(&d.pci_bus_id), d)).collect();
        for e in events {
            let device = match (e.gpu, &e.pci_bus_id) {
                (Some(i), _) => devices.iter().find(|d| d.index == i),
                (None, Some(bus)) => by_bus.get(&kmsg::bus_key(bus)).copied(),
                (None, None) => None,
            };
            let key = XidKey {
                gpu: device.map(|d| d.index).or(e.gpu).map(|i| i.to_string()).unwrap_or_default(),
                uuid: device.map(|d| d.uuid.clone()).unwrap_or_default(),
                pci_bus_id: if device.is_none() { e.pci_bus_id.clone().unwrap_or_default() } else { String::new() },
                code: e.code,
            };
            let count = self.xids.entry(key.clone()).or_insert(0);
            if *count == 0 {
                // A counter's first sample is its start, so `increase()` over a window that holds only it
                // sees nothing; a zero just before makes the first Xid count.
                batch.push(key.tags(Point::new("gpu", now - 1)).field("xid_errors_total", 0.0));
            }
            *count += 1;
            tracing::warn!(gpu = %key.gpu, code = e.code, message = %e.message, "GPU Xid error");
            batch.push(key.tags(Point::new("gpu", now)).text("xid", e.message));
        }
        for (key, count) in &self.xids {
            batch.push(key.tags(Point::new("gpu", now)).field("xid_errors_total", *count as f64));
        }
    }
}

/// The series of one Xid counter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct XidKey {
    gpu: String,
    uuid: String,
    pci_bus_id: String,
    code: u64,
}

impl XidKey {
    fn tags(&self, p: Point) -> Point {
        p.tag("gpu", &self.gpu)
            .tag("uuid", &self.uuid)
            .tag("pci_bus_id", &self.pci_bus_id)
            .tag("code", self.code.to_string())
    }
}

impl Source for Gpu {
    fn name(&self) -> &'static str {
        "gpu"
    }

    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let backend = match &mut self.backend {
            Ok(b) => b,
            Err(reason) => return Err(SourceError::Unavailable(reason.clone())),
        };
        let devices = match backend.devices() {
            Ok(d) => d,
            Err(BackendError::Unavailable(r)) => return Err(SourceError::Unavailable(r)),
            Err(BackendError::Failed(r)) => return Err(SourceError::Backend(r)),
        };
        let nvml_xids = backend.xid_events();
        let xids = match &mut self.kernel_log {
            Some(log) => log.xids(),
            None => nvml_xids,
        };
        for d in &devices {
            self.device_points(d, now, batch);
            if self.dcgm_names {
                dcgm::points(d, &self.hostname, now, batch);
            }
        }
        self.xid_points(xids, &devices, now, batch);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
