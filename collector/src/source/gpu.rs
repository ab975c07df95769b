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
//! Every per-GPU series carries `gpu`, `uuid`, `device`, `model` and, where the board has one,
//! `serial` (`GpuLabels`), the Xid series included: they take `uuid` and `serial` from the last device
//! reading. `gpu_present` (`present`) says which expected GPUs NVML answers for.
//!
//! Per-GPU series also carry the workload the GPU serves (`attribution`): the Kubernetes pod and
//! container the kubelet allocated it to and the Slurm job using it, on the series families
//! `[collector.gpu.attribution] families` names; `gpu_allocated` lists the kubelet's allocations.
//!
//! With `dcgm_names`, the readings are also written under dcgm-exporter's names and labels (`dcgm`).
//! With `dcgm_exporter_url`, a co-located dcgm-exporter is read for the profiling fields NVML has no
//! GPM for (before Hopper), and for every reading while NVML cannot be used (`dcgm_exporter`).

use super::{Source, SourceError};
use crate::batch::{Batch, Point};
use crate::config::{AttributionSettings, GpuBackendKind, GpuSettings};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod attribution;
pub mod backend;
mod cgroup;
mod dcgm;
mod dcgm_exporter;
pub mod fake;
mod kmsg;
pub mod nvml;
mod present;
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
    presence: present::Presence,
    attribution: attribution::Attribution,
    dcgm_exporter: Option<dcgm_exporter::DcgmExporter>,
}

/// The labels of every per-GPU series.
#[derive(Debug, Clone, PartialEq)]
struct GpuLabels {
    index: u32,
    uuid: String,
    model: String,
    /// Empty (the label absent) where the board has none.
    serial: String,
}

impl GpuLabels {
    fn of(d: &Device) -> GpuLabels {
        GpuLabels {
            index: d.index,
            uuid: d.uuid.clone(),
            model: d.name.clone(),
            serial: d.serial.clone().unwrap_or_default(),
        }
    }

    fn tag(&self, p: Point) -> Point {
        p.tag("gpu", self.index.to_string())
            .tag("uuid", &self.uuid)
            .tag("device", format!("nvidia{}", self.index))
            .tag("model", &self.model)
            .tag("serial", &self.serial)
    }
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
        attribution: Option<&AttributionSettings>,
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
        // dcgm-exporter is read after NVML's wait, within the source's timeout: its share is taken
        // from the wait.
        let (wait_timeout, dcgm_exporter) = match &settings.dcgm_exporter_url {
            Some(url) => {
                let share = (timeout / 5).min(Duration::from_secs(2));
                match dcgm_exporter::DcgmExporter::new(url, share) {
                    Ok(d) => (timeout.saturating_sub(share), Some(d)),
                    Err(error) => {
                        tracing::error!(%error, "dcgm-exporter will not be read");
                        (timeout, None)
                    }
                }
            }
            None => (timeout, None),
        };
        let mut gpu = Gpu::new(backend, wait_timeout, procfs_root, settings.dcgm_names, hostname, kernel_log);
        gpu.presence = present::Presence::new(Some(&settings.sysfs_root), settings.expected_gpus);
        gpu.attribution = attribution.map_or_else(attribution::Attribution::off, attribution::Attribution::new);
        gpu.dcgm_exporter = dcgm_exporter;
        gpu
    }

    /// A source over `backend` that reads no PCI bus: the expected GPUs are those the backend lists.
    #[cfg(test)]
    pub(crate) fn for_tests(backend: Box<dyn GpuBackend>, procfs_root: &Path, dcgm_names: bool) -> Gpu {
        Gpu::new(Ok(backend), Duration::from_secs(10), procfs_root, dcgm_names, "node-7".into(), None)
    }

    /// Expects the GPUs of the PCI bus under `sysfs_root`, and at least `expected_gpus`.
    #[cfg(test)]
    pub(crate) fn with_sysfs(mut self, sysfs_root: &Path, expected_gpus: Option<u32>) -> Gpu {
        self.presence = present::Presence::new(Some(sysfs_root), expected_gpus);
        self
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
            // `build` gives it the configured sysfs root; a source built otherwise (tests) reads no bus.
            presence: present::Presence::new(None, None),
            attribution: attribution::Attribution::off(),
            dcgm_exporter: None,
        }
    }

    /// Gives the per-GPU points `points` (those of one GPU, `gpu` its workload labels) their workload
    /// labels: a MIG instance's points those of the instance. Where `families` leaves some series
    /// out, a point's fields are split between a point with the labels and one without.
    fn attribute(&self, points: &mut Vec<Point>, gpu: &[(&'static str, String)]) {
        let every = self.attribution.carries_every_family();
        let mut split = Vec::new();
        for p in points.iter_mut() {
            let mig = p
                .tags
                .iter()
                .find(|(k, _)| k == "mig_uuid")
                .map(|(_, m)| self.attribution.labels(attribution::GpuRef { uuid: m.as_str(), index: None }, &[]));
            let labels = mig.as_deref().unwrap_or(gpu);
            if labels.is_empty() {
                continue;
            }
            if !every {
                let measurement = p.measurement.clone();
                let (carried, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut p.fields)
                    .into_iter()
                    .partition(|(f, _)| self.attribution.carries(&format!("{measurement}_{f}")));
                p.fields = kept;
                if carried.is_empty() {
                    continue;
                }
                let mut with = Point { measurement, tags: p.tags.clone(), fields: carried, t: p.t };
                with.tags.extend(labels.iter().map(|(k, v)| (k.to_string(), v.clone())));
                split.push(with);
                continue;
            }
            p.tags.extend(labels.iter().map(|(k, v)| (k.to_string(), v.clone())));
        }
        points.retain(|p| !p.fields.is_empty());
        points.append(&mut split);
    }

    /// `gpu_allocated`: 1 for each container the kubelet allocated a GPU or MIG device to, 0 (with
    /// empty pod labels) for one it can allocate that no pod holds.
    fn allocation_points(&self, devices: &[Device], now: i64, batch: &mut Batch) {
        let gpus: Vec<attribution::GpuRef> =
            devices.iter().map(|d| attribution::GpuRef { uuid: &d.uuid, index: Some(d.index) }).collect();
        for a in self.attribution.allocations(&gpus) {
            let held = a.holder.is_some();
            let (namespace, pod, container) =
                a.holder.map_or_else(Default::default, |h| (h.namespace, h.pod, h.container));
            batch.push(
                Point::new("gpu", now)
                    .tag("uuid", a.uuid)
                    .tag("resource", a.resource)
                    .tag("namespace", namespace)
                    .tag("pod", pod)
                    .tag("container", container)
                    .field("allocated", if held { 1.0 } else { 0.0 }),
            );
        }
    }

    fn device_points(&self, d: &Device, now: i64, batch: &mut Batch) {
        let labels = GpuLabels::of(d);
        let tags = |p: Point| labels.tag(p);
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
            .field_opt("pcie_link_generation", d.pcie_link_generation.map(f64::from))
            .field_opt("pcie_link_generation_max", d.pcie_link_generation_max.map(f64::from))
            .field_opt("pcie_link_width", d.pcie_link_width.map(f64::from))
            .field_opt("pcie_link_width_max", d.pcie_link_width_max.map(f64::from))
            .field_opt("power_violation_seconds_total", d.power_violation_seconds)
            .field_opt("thermal_violation_seconds_total", d.thermal_violation_seconds)
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
                .field_opt("dram_activity_ratio", g.dram_activity_ratio)
                .field_opt("fp64_activity_ratio", g.fp64_activity_ratio)
                .field_opt("fp32_activity_ratio", g.fp32_activity_ratio)
                .field_opt("fp16_activity_ratio", g.fp16_activity_ratio)
                .field_opt("gpm_pcie_transmit_bytes_per_second", g.pcie_tx_bytes_per_second)
                .field_opt("gpm_pcie_receive_bytes_per_second", g.pcie_rx_bytes_per_second)
                .field_opt("gpm_nvlink_transmit_bytes_per_second", g.nvlink_tx_bytes_per_second)
                .field_opt("gpm_nvlink_receive_bytes_per_second", g.nvlink_rx_bytes_per_second);
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
    }

    /// What the processes use, per owner: the processes of one container, Kubernetes pod or Slurm job
    /// are added up, so a GPU time-sliced between jobs shows each job's share; a process with no owner
    /// keeps its `pid` label. A sum no process reported stays absent.
    fn process_points(&self, d: &Device, now: i64, batch: &mut Batch, cgroups: &BTreeMap<u32, cgroup::Owner>) {
        let labels = GpuLabels::of(d);
        let tags = |p: Point| labels.tag(p);
        #[derive(Default)]
        struct Usage {
            memory_bytes: Option<f64>,
            sm_percent: Option<f64>,
            memory_percent: Option<f64>,
        }
        fn add(sum: &mut Option<f64>, v: Option<f64>) {
            if let Some(v) = v {
                *sum = Some(sum.unwrap_or(0.0) + v);
            }
        }
        let owner = |pid: u32| {
            let mut o = cgroups.get(&pid).cloned().unwrap_or_default();
            if o.is_empty() {
                o.pid = Some(pid);
            }
            o
        };
        let mut owners: BTreeMap<cgroup::Owner, Usage> = BTreeMap::new();
        for pr in &d.processes {
            if let Some(used) = pr.used_memory_bytes {
                add(&mut owners.entry(owner(pr.pid)).or_default().memory_bytes, Some(used as f64));
            }
        }
        for u in &d.process_utilization {
            let usage = owners.entry(owner(u.pid)).or_default();
            add(&mut usage.sm_percent, u.sm_percent);
            add(&mut usage.memory_percent, u.memory_percent);
        }
        for (o, usage) in owners {
            batch.push(
                tags(Point::new("gpu", now))
                    .tag("container_id", o.container_id.unwrap_or_default())
                    .tag("pod_uid", o.pod_uid.unwrap_or_default())
                    .tag("job", o.slurm_job.unwrap_or_default())
                    .tag("pid", o.pid.map(|p| p.to_string()).unwrap_or_default())
                    .field_opt("process_memory_used_bytes", usage.memory_bytes)
                    .field_opt("process_sm_utilization_ratio", usage.sm_percent.map(|p| p / 100.0))
                    .field_opt("process_memory_utilization_ratio", usage.memory_percent.map(|p| p / 100.0)),
            );
        }
    }

    /// dcgm-exporter's readings: the profiling fields of GPUs without NVML's GPM readings when NVML
    /// answered (`devices`), every reading when it did not. A GPU's `serial` is added by its UUID from
    /// NVML where dcgm-exporter gives none. A failure is logged, never failing the collection: NVML's
    /// readings and the Xids stand without it.
    fn dcgm_exporter_points(&self, devices: Option<&[Device]>, now: i64, batch: &mut Batch) {
        let Some(exporter) = &self.dcgm_exporter else { return };
        let readings = match devices {
            Some(_) => dcgm_exporter::Readings::Profiling,
            None => dcgm_exporter::Readings::All,
        };
        let points = match exporter.read(now, readings) {
            Ok(points) => points,
            Err(error) => {
                tracing::warn!(%error, "Reading dcgm-exporter failed");
                return;
            }
        };
        let devices = devices.unwrap_or_default();
        for mut p in points {
            let uuid = p.tags.iter().find(|(k, _)| k == "uuid").map(|(_, v)| v.clone());
            let device = uuid.as_deref().and_then(|u| devices.iter().find(|d| d.uuid == u));
            if device.is_some_and(|d| d.gpm.is_some()) {
                continue;
            }
            if !p.tags.iter().any(|(k, _)| k == "serial")
                && let Some(serial) = uuid.as_deref().and_then(|u| self.known.serial(u))
            {
                p.tags.push(("serial".into(), serial.to_string()));
            }
            batch.push(p);
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
        // Without NVML, the kernel log's Xids and dcgm-exporter's readings keep the source going.
        let goes_on = self.kernel_log.is_some() || self.dcgm_exporter.is_some();
        let (devices, nvml_xids) = match &mut self.backend {
            Ok(w) => {
                let (devices, xids) = w.read(self.wait);
                (devices.map_err(|f| failure(f, goes_on)), xids)
            }
            Err(reason) if !goes_on => return Err(SourceError::Unavailable(reason.clone())),
            Err(reason) => {
                let rest = match self.kernel_log.is_some() {
                    true => "Xids from the kernel log only",
                    false => "readings from dcgm-exporter only",
                };
                (Err(SourceError::Backend(format!("{reason}; {rest}"))), Vec::new())
            }
        };
        if let Err(SourceError::Unavailable(_)) = &devices {
            return devices.map(|_| ());
        }
        if let Ok(devices) = &devices {
            let mut works = BTreeMap::new();
            for d in devices {
                let from = batch.points.len();
                self.device_points(d, now, batch);
                // Each process's cgroup is read once, for the workload labels and the per-owner series.
                let pids = d.processes.iter().map(|p| p.pid).chain(d.process_utilization.iter().map(|u| u.pid));
                let cgroups: BTreeMap<u32, cgroup::Owner> =
                    pids.map(|pid| (pid, cgroup::owner(&self.proc, pid))).collect();
                let owners: Vec<cgroup::Owner> =
                    d.processes.iter().filter_map(|p| cgroups.get(&p.pid)).filter(|o| !o.is_empty()).cloned().collect();
                let work =
                    self.attribution.labels(attribution::GpuRef { uuid: &d.uuid, index: Some(d.index) }, &owners);
                let mut points = batch.points.split_off(from);
                self.attribute(&mut points, &work);
                works.insert(d.uuid.clone(), work);
                batch.points.append(&mut points);
                // Per owner already: the workload labels would only repeat the owner's.
                self.process_points(d, now, batch, &cgroups);
                if self.dcgm_names {
                    dcgm::points(d, &self.hostname, now, batch);
                }
            }
            self.known = xid::Known::new(devices, works, &self.known);
        }
        if let Ok(devices) = &devices {
            self.allocation_points(devices, now, batch);
        }
        self.presence.points(devices.as_deref().ok(), now, batch);
        self.dcgm_exporter_points(devices.as_deref().ok(), now, batch);
        let (xids, sxids) = match &mut self.kernel_log {
            Some(log) => {
                let e = log.errors();
                (e.xids, e.sxids)
            }
            None => (nvml_xids, Vec::new()),
        };
        let attributed = self.attribution.carries("gpu_xid_errors_total");
        self.counters.xid_points(xids, &self.known, attributed, now, batch);
        self.counters.sxid_points(sxids, now, batch);
        devices.map(|_| ())
    }
}

/// A failed device reading as the collection reports it. `Unavailable` stops the source, so it is
/// reported only where the source has nothing else to read (`goes_on`: a kernel log, dcgm-exporter).
fn failure(f: worker::Failure, goes_on: bool) -> SourceError {
    match f {
        worker::Failure::Backend(BackendError::Unavailable(r)) if !goes_on => SourceError::Unavailable(r),
        worker::Failure::Backend(BackendError::Unavailable(r) | BackendError::Failed(r)) => SourceError::Backend(r),
        worker::Failure::Hung(d) => {
            SourceError::Backend(format!("gpu backend call has not returned after {:.1}s", d.as_secs_f64()))
        }
        worker::Failure::Stopped => SourceError::Backend("gpu backend thread stopped".into()),
    }
}

#[cfg(test)]
mod tests;
