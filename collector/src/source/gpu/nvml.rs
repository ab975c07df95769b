//! The NVML backend (nvml-wrapper 0.13, which loads libnvidia-ml.so at run time, so the collector
//! builds and runs on machines without NVIDIA's library; there `init` fails and the source reports
//! itself unavailable once).
//!
//! The library is the system's `libnvidia-ml.so` unless `[collector.gpu] nvml_library` names a file
//! (a driver installed outside the loader's path, or the scenario-driven stand-in of
//! `collector/fake-nvml`, which runs this backend in tests on machines without a GPU).
//!
//! Each reading is asked for separately and a failure leaves that reading out: NVML answers
//! NotSupported for whatever a board lacks (fans on SXM boards, retired pages after Volta, remapped
//! rows before Ampere, GPM before Hopper, a serial number on GeForce). A GPU NVML reports lost (fallen
//! off the bus) is left out of the collection while the others are read; its Xid 79 reaches the
//! kernel log, and the gpu source writes it as not present.
//!
//! Two readings need the previous collection: GPM metrics are computed between the GPU's last sample
//! and a new one (`nvml/gpm.rs`), and process utilization asks for the samples NVML took since the
//! last ones seen. Both are kept per GPU, by UUID, and dropped with a GPU that is no longer read.

use super::backend::{
    BackendError, Device, Ecc, GpuBackend, MigInstance, NvLink, Process, ProcessUtilization, RetiredPages, XidEvent,
};
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::{
    Clock, EccCounter, MemoryError, PcieUtilCounter, PerformancePolicy, RetirementCause, TemperatureSensor,
};
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::event::EventSet;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

mod fields;
mod gpm;

/// NVLink links a GPU may have (NVML_NVLINK_MAX_LINKS is 18 on Hopper).
const MAX_LINKS: u32 = 18;

pub struct Nvml {
    nvml: &'static nvml_wrapper::Nvml,
    events: Option<EventSet<'static>>,
    /// GPUs NVML last answered GpuLost for, so each loss is logged once.
    lost: BTreeSet<u32>,
    /// What the next collection needs of this one, per GPU UUID.
    gpus: BTreeMap<String, GpuState>,
}

/// One GPU's readings that span two collections.
#[derive(Debug, Default)]
struct GpuState {
    gpm: gpm::Sampler,
    /// The newest process utilization sample seen (CPU time, µs).
    utilization_seen_us: u64,
}

impl Nvml {
    /// Opens the system's `libnvidia-ml.so`.
    pub fn init() -> Result<Nvml, BackendError> {
        Nvml::init_from(None)
    }

    /// Opens the library at `path`: a driver's `libnvidia-ml.so.1` outside the loader's path, or a
    /// stand-in.
    pub fn open(path: &Path) -> Result<Nvml, BackendError> {
        Nvml::init_from(Some(path))
    }

    fn init_from(library: Option<&Path>) -> Result<Nvml, BackendError> {
        let mut builder = nvml_wrapper::Nvml::builder();
        if let Some(path) = library {
            builder.lib_path(path.as_os_str());
        }
        let nvml = builder.init().map_err(|e| match e {
            NvmlError::LibloadingError(e) => BackendError::Unavailable(format!("no NVIDIA management library: {e}")),
            e => BackendError::Unavailable(format!("nvml init failed: {e}")),
        })?;
        // Devices and event sets borrow the library handle; the source lives as long as the process, so
        // the handle is leaked once instead of making the backend self-referential.
        let nvml: &'static nvml_wrapper::Nvml = Box::leak(Box::new(nvml));
        let events = register_xid_events(nvml);
        Ok(Nvml { nvml, events, lost: BTreeSet::new(), gpus: BTreeMap::new() })
    }
}

fn register_xid_events(nvml: &'static nvml_wrapper::Nvml) -> Option<EventSet<'static>> {
    let mut set = nvml.create_event_set().ok()?;
    let count = nvml.device_count().ok()?;
    for i in 0..count {
        let Ok(dev) = nvml.device_by_index(i) else { continue };
        set = match dev.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
            Ok(s) => s,
            // The set is consumed on failure too: Xid events stay with the kernel log.
            Err(e) => {
                tracing::info!(gpu = i, error = %e.error, "NVML Xid events not available");
                return None;
            }
        };
    }
    Some(set)
}

impl GpuBackend for Nvml {
    fn devices(&mut self) -> Result<Vec<Device>, BackendError> {
        let count = self.nvml.device_count().map_err(|e| BackendError::Failed(format!("device count: {e}")))?;
        let mut out = Vec::with_capacity(count as usize);
        let mut previous = std::mem::take(&mut self.gpus);
        for i in 0..count {
            // A GPU fallen off the bus fails its handle, or the first call on it.
            let read = self.nvml.device_by_index(i).and_then(|dev| match dev.uuid() {
                Err(NvmlError::GpuLost) => Err(NvmlError::GpuLost),
                uuid => Ok((uuid.unwrap_or_default(), dev)),
            });
            let (uuid, dev) = match read {
                Ok(read) => read,
                Err(NvmlError::GpuLost) => {
                    if self.lost.insert(i) {
                        tracing::warn!(gpu = i, "NVML reports the GPU lost; its readings are left out");
                    }
                    continue;
                }
                Err(e) => return Err(BackendError::Failed(format!("gpu {i}: {e}"))),
            };
            if self.lost.remove(&i) {
                tracing::info!(gpu = i, "NVML answers for the GPU again");
            }
            let key = if uuid.is_empty() { format!("index {i}") } else { uuid.clone() };
            let mut state = previous.remove(&key).unwrap_or_default();
            out.push(read_device(self.nvml, i, uuid, &dev, &mut state));
            self.gpus.insert(key, state);
        }
        Ok(out)
    }

    fn xid_events(&mut self) -> Vec<XidEvent> {
        let mut out = Vec::new();
        let Some(set) = &self.events else { return out };
        // wait(0) returns at once: Timeout when nothing is pending.
        while let Ok(ev) = set.wait(0) {
            let code = match ev.event_data {
                Some(XidError::Value(v)) => v,
                _ => continue,
            };
            let gpu = ev.device.index().ok();
            let pci = ev.device.pci_info().ok().map(|p| p.bus_id);
            out.push(XidEvent { gpu, pci_bus_id: pci, code, message: format!("NVML: Xid {code}") });
        }
        out
    }
}

fn read_device(
    nvml: &'static nvml_wrapper::Nvml,
    index: u32,
    uuid: String,
    d: &nvml_wrapper::Device<'static>,
    state: &mut GpuState,
) -> Device {
    let util = d.utilization_rates().ok();
    let mem = d.memory_info().ok();
    let ecc = || -> Result<Ecc, NvmlError> {
        Ok(Ecc {
            corrected_volatile: d.total_ecc_errors(MemoryError::Corrected, EccCounter::Volatile)?,
            uncorrected_volatile: d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Volatile)?,
            corrected_aggregate: d.total_ecc_errors(MemoryError::Corrected, EccCounter::Aggregate)?,
            uncorrected_aggregate: d.total_ecc_errors(MemoryError::Uncorrected, EccCounter::Aggregate)?,
        })
    };
    let retired = || -> Result<RetiredPages, NvmlError> {
        Ok(RetiredPages {
            single_bit: d.retired_pages(RetirementCause::MultipleSingleBitEccErrors)?.len() as u64,
            double_bit: d.retired_pages(RetirementCause::DoubleBitEccError)?.len() as u64,
            pending: d.are_pages_pending_retired()?,
        })
    };
    let violation = |policy| d.violation_status(policy).ok().map(|v| v.violation_time as f64 / 1e9);
    let mig_enabled = d.mig_mode().ok().map(|m| m.current == 1);
    Device {
        index,
        uuid,
        name: d.name().unwrap_or_default(),
        pci_bus_id: d.pci_info().map(|p| p.bus_id).unwrap_or_default(),
        serial: d.serial().ok().filter(|s| !s.is_empty()),
        utilization_gpu_percent: util.as_ref().map(|u| f64::from(u.gpu)),
        utilization_memory_percent: util.as_ref().map(|u| f64::from(u.memory)),
        memory_total_bytes: mem.as_ref().map(|m| m.total),
        memory_used_bytes: mem.as_ref().map(|m| m.used),
        memory_free_bytes: mem.as_ref().map(|m| m.free),
        temperature_celsius: d.temperature(TemperatureSensor::Gpu).ok().map(f64::from),
        memory_temperature_celsius: fields::memory_temperature(d),
        power_watts: d.power_usage().ok().map(|mw| f64::from(mw) / 1000.0),
        power_limit_watts: d.enforced_power_limit().ok().map(|mw| f64::from(mw) / 1000.0),
        energy_joules: d.total_energy_consumption().ok().map(|mj| mj as f64 / 1000.0),
        sm_clock_hz: d.clock_info(Clock::SM).ok().map(|mhz| f64::from(mhz) * 1e6),
        memory_clock_hz: d.clock_info(Clock::Memory).ok().map(|mhz| f64::from(mhz) * 1e6),
        throttle_reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
        pcie_tx_bytes_per_second: d.pcie_throughput(PcieUtilCounter::Send).ok().map(|kb| f64::from(kb) * 1024.0),
        pcie_rx_bytes_per_second: d.pcie_throughput(PcieUtilCounter::Receive).ok().map(|kb| f64::from(kb) * 1024.0),
        pcie_replay_total: d.pcie_replay_counter().ok().map(u64::from),
        pcie_link_generation: d.current_pcie_link_gen().ok(),
        pcie_link_generation_max: d.max_pcie_link_gen().ok(),
        pcie_link_width: d.current_pcie_link_width().ok(),
        pcie_link_width_max: d.max_pcie_link_width().ok(),
        power_violation_seconds: violation(PerformancePolicy::Power),
        thermal_violation_seconds: violation(PerformancePolicy::Thermal),
        fan_speed_percent: d.fan_speed(0).ok().map(f64::from),
        performance_state: d.performance_state().ok().and_then(|p| pstate(p as u32)),
        ecc: ecc().ok(),
        retired_pages: retired().ok(),
        remapped_rows: fields::remapped_rows(d),
        nvlinks: nvlinks(nvml, d),
        mig_enabled,
        mig_instances: if mig_enabled == Some(true) { mig_instances(d) } else { Vec::new() },
        processes: processes(d),
        process_utilization: process_utilization(d, &mut state.utilization_seen_us),
        gpm: state.gpm.read(nvml, d),
    }
}

/// PerformanceState's variants are declared P0..P15 then Unknown, so the discriminant is the P number.
fn pstate(discriminant: u32) -> Option<u32> {
    (discriminant <= 15).then_some(discriminant)
}

fn nvlinks(nvml: &nvml_wrapper::Nvml, d: &nvml_wrapper::Device<'_>) -> Vec<NvLink> {
    let mut out = Vec::new();
    for link in 0..MAX_LINKS {
        let l = d.link_wrapper_for(link);
        // A link the board does not have answers InvalidArgument or NotSupported.
        let Ok(active) = l.is_active() else { continue };
        let crc = match (l.error_counter(ErrorCounter::DlCrcFlit), l.error_counter(ErrorCounter::DlCrcData)) {
            (Ok(a), Ok(b)) => Some(a + b),
            (Ok(a), Err(_)) | (Err(_), Ok(a)) => Some(a),
            _ => None,
        };
        out.push(NvLink {
            link,
            active,
            tx_bytes_total: None,
            rx_bytes_total: None,
            replay_errors_total: l.error_counter(ErrorCounter::DlReplay).ok(),
            recovery_errors_total: l.error_counter(ErrorCounter::DlRecovery).ok(),
            crc_errors_total: crc,
        });
    }
    let links: Vec<u32> = out.iter().map(|l| l.link).collect();
    for (l, (tx, rx)) in out.iter_mut().zip(fields::nvlink_bytes(nvml, d, &links)) {
        (l.tx_bytes_total, l.rx_bytes_total) = (tx, rx);
    }
    out
}

fn mig_instances(d: &nvml_wrapper::Device<'_>) -> Vec<MigInstance> {
    let Ok(count) = d.mig_device_count() else { return Vec::new() };
    let mut out = Vec::new();
    for i in 0..count {
        let Ok(m) = d.mig_device_by_index(i) else { continue };
        let mem = m.memory_info().ok();
        out.push(MigInstance {
            // nvml-wrapper 0.13 has no call for a MIG handle's GPU/compute instance ids; the MIG
            // device index stands in (the uuid label identifies the instance exactly).
            gpu_instance_id: i,
            compute_instance_id: 0,
            uuid: m.uuid().unwrap_or_default(),
            profile: m.name().map(|n| mig_profile(&n).to_string()).unwrap_or_default(),
            memory_used_bytes: mem.as_ref().map(|x| x.used),
            memory_total_bytes: mem.as_ref().map(|x| x.total),
        });
    }
    out
}

/// The profile in a MIG device's name: NVML names one "NVIDIA A100-SXM4-80GB MIG 3g.40gb".
fn mig_profile(name: &str) -> &str {
    name.rsplit_once(" MIG ").map_or(name, |(_, profile)| profile.trim())
}

fn processes(d: &nvml_wrapper::Device<'_>) -> Vec<Process> {
    d.running_compute_processes()
        .unwrap_or_default()
        .into_iter()
        .map(|p| Process {
            pid: p.pid,
            used_memory_bytes: match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            },
            gpu_instance_id: p.gpu_instance_id,
        })
        .collect()
}

/// The latest sample of each process busy since the last one seen (NVML answers NotFound when none
/// was); `seen_us` moves on to the newest.
fn process_utilization(d: &nvml_wrapper::Device<'_>, seen_us: &mut u64) -> Vec<ProcessUtilization> {
    let mut samples = d.process_utilization_stats(*seen_us).unwrap_or_default();
    samples.sort_by_key(|s| (s.pid, s.timestamp));
    *seen_us = samples.iter().map(|s| s.timestamp).fold(*seen_us, u64::max);
    let mut out: Vec<ProcessUtilization> = Vec::new();
    for s in samples {
        let u = ProcessUtilization {
            pid: s.pid,
            sm_percent: Some(f64::from(s.sm_util)),
            memory_percent: Some(f64::from(s.mem_util)),
        };
        // Sorted by time within a process: a later sample of the same process replaces the earlier.
        match out.last_mut() {
            Some(last) if last.pid == s.pid => *last = u,
            _ => out.push(u),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn mig_profile_is_the_end_of_the_mig_device_name() {
        assert_eq!(super::mig_profile("NVIDIA A100-SXM4-80GB MIG 3g.40gb"), "3g.40gb");
        assert_eq!(super::mig_profile("NVIDIA H100 80GB HBM3 MIG 1g.10gb+me"), "1g.10gb+me");
        assert_eq!(super::mig_profile("3g.40gb"), "3g.40gb");
    }
}
