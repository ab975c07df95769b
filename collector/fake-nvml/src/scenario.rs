//! The scenario file (docs/format/fake-nvml-scenario.md): what each GPU reads, in NVML's own units,
//! and which calls fail or hang. A reading left out is one the board does not have: its call answers
//! `NVML_ERROR_NOT_SUPPORTED`, as NVML does on a GPU without that feature.

use nvml_wrapper_sys::bindings as nv;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The scenario versions this library reads.
pub const VERSION: u32 = 1;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub version: u32,
    /// Where the figures came from (kept in the file for people; not used).
    #[serde(default, rename = "source")]
    pub _source: Option<String>,
    /// What `nvmlSystemGetDriverVersion` answers. nvml-wrapper picks its field-id numbering from it.
    #[serde(default = "default_driver_version")]
    pub driver_version: String,
    pub devices: Vec<Device>,
    /// Xid errors pending from the start, delivered once to each event set the GPU is registered in.
    #[serde(default)]
    pub xid_events: Vec<XidEvent>,
    #[serde(default)]
    pub failures: Vec<Failure>,
}

fn default_driver_version() -> String {
    "550.54.15".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    pub name: String,
    pub uuid: String,
    /// "00000000:18:00.0" (domain:bus:device.function, hexadecimal).
    pub pci_bus_id: String,
    #[serde(default)]
    pub pci_device_id: u32,
    #[serde(default)]
    pub pci_subsystem_id: u32,
    pub utilization_percent: Option<Utilization>,
    pub memory_bytes: Option<Memory>,
    pub temperature_gpu_celsius: Option<u32>,
    pub power_usage_milliwatts: Option<u32>,
    pub enforced_power_limit_milliwatts: Option<u32>,
    pub total_energy_millijoules: Option<u64>,
    #[serde(default)]
    pub clocks_mhz: Clocks,
    pub clocks_event_reasons: Option<u64>,
    pub pcie_throughput_kib_per_second: Option<PcieThroughput>,
    pub pcie_replay_counter: Option<u32>,
    /// One entry per fan; none: `NOT_SUPPORTED` (SXM boards have no fan of their own).
    #[serde(default)]
    pub fan_speeds_percent: Vec<u32>,
    /// 0 (P0) to 15; 32 is NVML's "unknown".
    pub performance_state: Option<u32>,
    pub total_ecc_errors: Option<TotalEcc>,
    pub retired_pages: Option<RetiredPages>,
    /// NVML field values by field id (`NVML_FI_*`), e.g. `"142"` for `NVML_FI_DEV_REMAPPED_COR`. An
    /// id not listed answers `NOT_SUPPORTED` in its own slot; the call itself succeeds.
    #[serde(default)]
    pub field_values: BTreeMap<u32, serde_json::Number>,
    #[serde(default)]
    pub nvlinks: Vec<NvLink>,
    pub mig: Option<Mig>,
    #[serde(default)]
    pub processes: Vec<Process>,
    /// The board's serial number; GeForce boards have none.
    pub serial: Option<String>,
    #[serde(default)]
    pub pcie_link: PcieLink,
    /// `nvmlDeviceGetViolationStatus` by policy, in nanoseconds since the driver loaded.
    #[serde(default)]
    pub violation_time_ns: ViolationTime,
    /// GPM metric values by `NVML_GPM_METRIC_*` id, e.g. `"2"` for `NVML_GPM_METRIC_SM_UTIL`. Present
    /// (even empty): the GPU supports GPM (Hopper and later); an id not listed answers `NOT_SUPPORTED`
    /// in its own slot.
    pub gpm_metrics: Option<BTreeMap<u32, f64>>,
    /// `nvmlDeviceGetProcessUtilization`'s samples; `[]`: supported, no process busy (`NOT_FOUND`).
    pub process_utilization: Option<Vec<ProcessUtilization>>,
}

/// `nvmlDeviceGetCurrPcieLinkGeneration`, `…CurrPcieLinkWidth`, `…MaxPcieLinkGeneration`,
/// `…MaxPcieLinkWidth`; each one left out answers `NOT_SUPPORTED`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieLink {
    pub generation: Option<u32>,
    pub generation_max: Option<u32>,
    pub width: Option<u32>,
    pub width_max: Option<u32>,
}

/// Time held back by each performance policy; the policies not listed answer `NOT_SUPPORTED`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ViolationTime {
    pub power: Option<u64>,
    pub thermal: Option<u64>,
}

/// One process's utilization sample.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessUtilization {
    pub pid: u32,
    pub sm_percent: u32,
    pub memory_percent: u32,
    #[serde(default)]
    pub encoder_percent: u32,
    #[serde(default)]
    pub decoder_percent: u32,
    /// When the sample was taken (CPU time, µs since the Unix epoch); default the time of the call, so
    /// every call has a sample newer than the last one's.
    pub timestamp_us: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Utilization {
    pub gpu: u32,
    pub memory: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub total: u64,
    pub used: u64,
    pub free: u64,
    #[serde(default)]
    pub reserved: u64,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Clocks {
    pub graphics: Option<u32>,
    pub sm: Option<u32>,
    pub memory: Option<u32>,
    pub video: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieThroughput {
    pub tx: u32,
    pub rx: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotalEcc {
    pub corrected_volatile: u64,
    pub uncorrected_volatile: u64,
    pub corrected_aggregate: u64,
    pub uncorrected_aggregate: u64,
}

/// Retired page addresses by cause; their timestamps read as 0.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetiredPages {
    #[serde(default)]
    pub multiple_single_bit: Vec<u64>,
    #[serde(default)]
    pub double_bit: Vec<u64>,
    #[serde(default)]
    pub pending: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvLink {
    pub link: u32,
    pub active: bool,
    #[serde(default)]
    pub errors: NvLinkErrors,
    /// The link's data counters (`NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX`/`_RX` with the link as scope
    /// id); left out: `NOT_SUPPORTED` in those slots.
    pub throughput_kib: Option<NvLinkThroughput>,
}

/// KiB of payload since the driver loaded, as NVML counts them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvLinkThroughput {
    pub data_tx: u64,
    pub data_rx: u64,
}

/// `nvmlDeviceGetNvLinkErrorCounter` per counter; one left out answers `NOT_SUPPORTED`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvLinkErrors {
    pub replay: Option<u64>,
    pub recovery: Option<u64>,
    pub crc_flit: Option<u64>,
    pub crc_data: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Mig {
    /// 1 enabled, 0 disabled.
    pub current: u32,
    pub pending: u32,
    /// What `nvmlDeviceGetMaxMigDeviceCount` answers (7 on A100 and H100); the slots past `devices`
    /// answer `NOT_FOUND`, as empty slots do.
    #[serde(default = "default_max_mig_devices")]
    pub max_devices: u32,
    #[serde(default)]
    pub devices: Vec<MigDevice>,
}

fn default_max_mig_devices() -> u32 {
    7
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigDevice {
    pub uuid: String,
    /// As NVML names a MIG device: "NVIDIA A100-SXM4-80GB MIG 3g.40gb".
    pub name: String,
    pub memory_bytes: Option<Memory>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    pub pid: u32,
    /// Absent or null: NVML's "not available" (as under Windows WDDM or without permission).
    #[serde(default)]
    pub used_memory_bytes: Option<u64>,
    #[serde(default)]
    pub gpu_instance_id: Option<u32>,
    #[serde(default)]
    pub compute_instance_id: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidEvent {
    pub gpu: u32,
    pub code: u64,
}

/// A call that fails or hangs. `function` is an exported name or `"*"` (every call); `gpu` limits it
/// to one GPU (and that GPU's MIG devices), and also covers `nvmlDeviceGetHandleByIndex_v2` for that
/// index. The call sleeps `hang_ms` first, then answers `return`, or its reading when `return` is unset;
/// `times` limits the rule to that many matching calls (default: all of them); `after_ms` holds the
/// rule back until that long after `nvmlInit` (a GPU that falls off the bus during the run).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Failure {
    pub function: String,
    #[serde(default)]
    pub gpu: Option<u32>,
    #[serde(default, rename = "return")]
    pub answer: Option<String>,
    #[serde(default)]
    pub hang_ms: Option<u64>,
    #[serde(default)]
    pub times: Option<u32>,
    #[serde(default)]
    pub after_ms: Option<u64>,
}

/// A [`Failure`] with its answer resolved to an `nvmlReturn_t`.
#[derive(Debug, Clone)]
pub struct Rule {
    pub function: String,
    pub gpu: Option<u32>,
    pub answer: Option<nv::nvmlReturn_t>,
    pub hang: Option<Duration>,
    /// Matching calls left; `None`: every one.
    pub remaining: Option<u32>,
    /// How long after `nvmlInit` the rule starts to apply.
    pub after: Duration,
}

impl Scenario {
    pub fn load(path: &Path) -> Result<Scenario, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Scenario::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Scenario, String> {
        let s: Scenario = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if s.version != VERSION {
            return Err(format!("version {}: this library reads version {VERSION}", s.version));
        }
        for d in &s.devices {
            parse_bus_id(&d.pci_bus_id)
                .ok_or_else(|| format!("{}: pci_bus_id {:?} is not DDDD:BB:DD.F", d.uuid, d.pci_bus_id))?;
        }
        for d in &s.devices {
            for id in d.gpm_metrics.iter().flat_map(BTreeMap::keys) {
                if *id == 0 || *id >= nv::nvmlGpmMetricId_t_NVML_GPM_METRIC_MAX {
                    return Err(format!("{}: gpm_metrics: {id} is not an NVML_GPM_METRIC_* id", d.uuid));
                }
            }
        }
        for e in &s.xid_events {
            if e.gpu as usize >= s.devices.len() {
                return Err(format!("xid_events: gpu {} does not exist", e.gpu));
            }
        }
        s.rules()?;
        Ok(s)
    }

    pub fn rules(&self) -> Result<Vec<Rule>, String> {
        self.failures
            .iter()
            .map(|f| {
                if f.function != "*" && !crate::EXPORTS.contains(&f.function.as_str()) {
                    return Err(format!("failures: {:?} is not a function this library exports", f.function));
                }
                let answer = f.answer.as_deref().map(return_code).transpose()?;
                if answer.is_none() && f.hang_ms.is_none() {
                    return Err(format!("failures: {:?} needs \"return\" or \"hang_ms\"", f.function));
                }
                Ok(Rule {
                    function: f.function.clone(),
                    gpu: f.gpu,
                    answer,
                    hang: f.hang_ms.map(Duration::from_millis),
                    remaining: f.times,
                    after: Duration::from_millis(f.after_ms.unwrap_or(0)),
                })
            })
            .collect()
    }
}

/// "00000000:18:00.0" → (domain, bus, device).
pub fn parse_bus_id(id: &str) -> Option<(u32, u32, u32)> {
    let (domain, rest) = id.split_once(':')?;
    let (bus, rest) = rest.split_once(':')?;
    let (device, function) = rest.split_once('.')?;
    u32::from_str_radix(function, 16).ok()?;
    Some((
        u32::from_str_radix(domain, 16).ok()?,
        u32::from_str_radix(bus, 16).ok()?,
        u32::from_str_radix(device, 16).ok()?,
    ))
}

/// `NVML_ERROR_<NAME>` by its name without the prefix, e.g. "GPU_IS_LOST".
fn return_code(name: &str) -> Result<nv::nvmlReturn_t, String> {
    RETURN_CODES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, c)| *c)
        .ok_or_else(|| format!("failures: unknown return {name:?}"))
}

pub const RETURN_CODES: &[(&str, nv::nvmlReturn_t)] = &[
    ("SUCCESS", nv::nvmlReturn_enum_NVML_SUCCESS),
    ("UNINITIALIZED", nv::nvmlReturn_enum_NVML_ERROR_UNINITIALIZED),
    ("INVALID_ARGUMENT", nv::nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT),
    ("NOT_SUPPORTED", nv::nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED),
    ("NO_PERMISSION", nv::nvmlReturn_enum_NVML_ERROR_NO_PERMISSION),
    ("NOT_FOUND", nv::nvmlReturn_enum_NVML_ERROR_NOT_FOUND),
    ("INSUFFICIENT_SIZE", nv::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE),
    ("INSUFFICIENT_POWER", nv::nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_POWER),
    ("DRIVER_NOT_LOADED", nv::nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED),
    ("TIMEOUT", nv::nvmlReturn_enum_NVML_ERROR_TIMEOUT),
    ("IRQ_ISSUE", nv::nvmlReturn_enum_NVML_ERROR_IRQ_ISSUE),
    ("CORRUPTED_INFOROM", nv::nvmlReturn_enum_NVML_ERROR_CORRUPTED_INFOROM),
    ("GPU_IS_LOST", nv::nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST),
    ("RESET_REQUIRED", nv::nvmlReturn_enum_NVML_ERROR_RESET_REQUIRED),
    ("OPERATING_SYSTEM", nv::nvmlReturn_enum_NVML_ERROR_OPERATING_SYSTEM),
    ("LIB_RM_VERSION_MISMATCH", nv::nvmlReturn_enum_NVML_ERROR_LIB_RM_VERSION_MISMATCH),
    ("IN_USE", nv::nvmlReturn_enum_NVML_ERROR_IN_USE),
    ("MEMORY", nv::nvmlReturn_enum_NVML_ERROR_MEMORY),
    ("NO_DATA", nv::nvmlReturn_enum_NVML_ERROR_NO_DATA),
    ("NOT_READY", nv::nvmlReturn_enum_NVML_ERROR_NOT_READY),
    ("GPU_NOT_FOUND", nv::nvmlReturn_enum_NVML_ERROR_GPU_NOT_FOUND),
    ("UNKNOWN", nv::nvmlReturn_enum_NVML_ERROR_UNKNOWN),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> String {
        match Scenario::parse(text) {
            Ok(s) => format!("ok: {} devices, {} rules", s.devices.len(), s.rules().map(|r| r.len()).unwrap_or(0)),
            Err(e) => e,
        }
    }

    const DEV: &str = r#"{"name": "n", "uuid": "GPU-1", "pci_bus_id": "00000000:18:00.0"}"#;

    #[test]
    fn parse_checks_version_bus_ids_events_and_failures() {
        assert_eq!(check(&format!(r#"{{"version": 1, "devices": [{DEV}]}}"#)), "ok: 1 devices, 0 rules");
        assert_eq!(check(r#"{"version": 2, "devices": []}"#), "version 2: this library reads version 1");
        assert_eq!(
            check(r#"{"version": 1, "devices": [{"name": "n", "uuid": "GPU-1", "pci_bus_id": "18:00"}]}"#),
            r#"GPU-1: pci_bus_id "18:00" is not DDDD:BB:DD.F"#
        );
        assert_eq!(
            check(&format!(r#"{{"version": 1, "devices": [{DEV}], "xid_events": [{{"gpu": 1, "code": 79}}]}}"#)),
            "xid_events: gpu 1 does not exist"
        );
        assert_eq!(
            check(
                r#"{"version": 1, "devices": [], "failures": [{"function": "nvmlDeviceGetPower", "return": "NOT_SUPPORTED"}]}"#
            ),
            r#"failures: "nvmlDeviceGetPower" is not a function this library exports"#
        );
        assert_eq!(
            check(r#"{"version": 1, "devices": [], "failures": [{"function": "*", "return": "LOST"}]}"#),
            r#"failures: unknown return "LOST""#
        );
        assert_eq!(
            check(r#"{"version": 1, "devices": [], "failures": [{"function": "*", "gpu": 0}]}"#),
            r#"failures: "*" needs "return" or "hang_ms""#
        );
        assert_eq!(
            check(
                r#"{"version": 1, "devices": [], "failures": [{"function": "nvmlDeviceGetPowerUsage", "hang_ms": 5}]}"#
            ),
            "ok: 0 devices, 1 rules"
        );
        assert!(check(r#"{"version": 1, "devices": [], "bogus": 1}"#).starts_with("unknown field `bogus`"));
    }

    #[test]
    fn gpm_metric_ids_are_nvml_ones_and_rules_may_start_later() {
        let gpm = |ids: &str| {
            check(&format!(
                r#"{{"version": 1, "devices": [{{"name": "n", "uuid": "GPU-1", "pci_bus_id": "00000000:18:00.0", "gpm_metrics": {ids}}}]}}"#
            ))
        };
        assert_eq!(gpm(r#"{"2": 91.5, "61": 184320}"#), "ok: 1 devices, 0 rules");
        assert_eq!(gpm("{}"), "ok: 1 devices, 0 rules");
        assert_eq!(gpm(r#"{"0": 1}"#), "GPU-1: gpm_metrics: 0 is not an NVML_GPM_METRIC_* id");
        assert_eq!(gpm(r#"{"210": 1}"#), "GPU-1: gpm_metrics: 210 is not an NVML_GPM_METRIC_* id");
        let later = Scenario::parse(&format!(
            r#"{{"version": 1, "devices": [{DEV}], "failures": [{{"function": "*", "gpu": 0, "return": "GPU_IS_LOST", "after_ms": 2500}}]}}"#
        ))
        .and_then(|s| s.rules())
        .unwrap();
        assert_eq!(later[0].after, Duration::from_millis(2500));
    }

    #[test]
    fn bus_ids_are_hexadecimal() {
        assert_eq!(parse_bus_id("00000000:2A:00.0"), Some((0, 0x2a, 0)));
        assert_eq!(parse_bus_id("0001:C1:1f.7"), Some((1, 0xc1, 0x1f)));
        assert_eq!(parse_bus_id("0000:2A:00"), None);
    }
}
