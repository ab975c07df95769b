//! What a GPU backend reports: one [`Device`] snapshot per GPU and the Xid events seen since the last
//! call. The types are plain data with serde, so the fake backend's JSON fixtures are these structs.
//!
//! Every reading is optional: what a GPU or driver does not support is absent, never zero, and a
//! fixture that leaves a reading out (one written before the reading existed) still loads.

use serde::{Deserialize, Serialize};

/// A source of GPU readings: NVML on real machines, JSON fixtures in tests.
pub trait GpuBackend: Send {
    /// One snapshot per GPU, in index order.
    fn devices(&mut self) -> Result<Vec<Device>, BackendError>;

    /// Xid errors reported since the last call (NVML's event set). Never blocks.
    fn xid_events(&mut self) -> Vec<XidEvent>;
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// No NVIDIA library or driver on this machine: reported once, then the source stops.
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Failed(String),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Device {
    pub index: u32,
    pub uuid: String,
    /// Product name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// e.g. "00000000:18:00.0"
    pub pci_bus_id: String,
    /// The board's serial number (the sticker on it); GeForce boards have none.
    pub serial: Option<String>,
    /// Percent of time over the last sample period a kernel ran (nvidia-smi's "GPU-Util").
    pub utilization_gpu_percent: Option<f64>,
    /// Percent of time device memory was read or written.
    pub utilization_memory_percent: Option<f64>,
    pub memory_total_bytes: Option<u64>,
    pub memory_used_bytes: Option<u64>,
    pub memory_free_bytes: Option<u64>,
    pub temperature_celsius: Option<f64>,
    pub memory_temperature_celsius: Option<f64>,
    pub power_watts: Option<f64>,
    pub power_limit_watts: Option<f64>,
    /// Energy since the driver was loaded (Volta and later).
    pub energy_joules: Option<f64>,
    pub sm_clock_hz: Option<f64>,
    pub memory_clock_hz: Option<f64>,
    /// NVML's clocks-event (throttle) reason bitmask.
    pub throttle_reasons: Option<u64>,
    pub pcie_tx_bytes_per_second: Option<f64>,
    pub pcie_rx_bytes_per_second: Option<f64>,
    pub pcie_replay_total: Option<u64>,
    /// The PCIe link's current and maximum generation (1…6) and width (lanes).
    pub pcie_link_generation: Option<u32>,
    pub pcie_link_generation_max: Option<u32>,
    pub pcie_link_width: Option<u32>,
    pub pcie_link_width_max: Option<u32>,
    /// Time the clocks were held back by the power limit, and by temperature, since the driver loaded.
    pub power_violation_seconds: Option<f64>,
    pub thermal_violation_seconds: Option<f64>,
    pub fan_speed_percent: Option<f64>,
    /// 0 (P0, fastest) to 15.
    pub performance_state: Option<u32>,
    pub ecc: Option<Ecc>,
    pub retired_pages: Option<RetiredPages>,
    pub remapped_rows: Option<RemappedRows>,
    #[serde(default)]
    pub nvlinks: Vec<NvLink>,
    pub mig_enabled: Option<bool>,
    #[serde(default)]
    pub mig_instances: Vec<MigInstance>,
    #[serde(default)]
    pub processes: Vec<Process>,
    /// How busy each process kept the GPU over the last sample period (processes that were busy).
    #[serde(default)]
    pub process_utilization: Vec<ProcessUtilization>,
    /// NVML GPM profiling metrics (Hopper and later), computed between two collections.
    pub gpm: Option<Gpm>,
}

/// ECC error counts: volatile since the driver loaded, aggregate over the board's life.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ecc {
    pub corrected_volatile: u64,
    pub uncorrected_volatile: u64,
    pub corrected_aggregate: u64,
    pub uncorrected_aggregate: u64,
}

/// Dynamic page retirement (before Ampere).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetiredPages {
    pub single_bit: u64,
    pub double_bit: u64,
    pub pending: bool,
}

/// Row remapping (Ampere and later).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RemappedRows {
    pub correctable: u64,
    pub uncorrectable: u64,
    pub pending: bool,
    pub failed: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvLink {
    pub link: u32,
    pub active: bool,
    pub tx_bytes_total: Option<u64>,
    pub rx_bytes_total: Option<u64>,
    pub replay_errors_total: Option<u64>,
    pub recovery_errors_total: Option<u64>,
    pub crc_errors_total: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MigInstance {
    pub gpu_instance_id: u32,
    pub compute_instance_id: u32,
    pub uuid: String,
    /// e.g. "1g.10gb"
    pub profile: String,
    pub memory_used_bytes: Option<u64>,
    pub memory_total_bytes: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Process {
    pub pid: u32,
    pub used_memory_bytes: Option<u64>,
    pub gpu_instance_id: Option<u32>,
}

/// One process's share of the GPU over the last sample period.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessUtilization {
    pub pid: u32,
    /// Percent of the period the process's kernels ran on the SMs.
    pub sm_percent: Option<f64>,
    /// Percent of the period the process read or wrote device memory.
    pub memory_percent: Option<f64>,
}

/// Ratios are 0…1 over the interval between two GPM samples; throughputs are its average.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gpm {
    pub sm_activity_ratio: Option<f64>,
    pub sm_occupancy_ratio: Option<f64>,
    pub tensor_activity_ratio: Option<f64>,
    pub dram_activity_ratio: Option<f64>,
    pub fp64_activity_ratio: Option<f64>,
    pub fp32_activity_ratio: Option<f64>,
    pub fp16_activity_ratio: Option<f64>,
    pub pcie_tx_bytes_per_second: Option<f64>,
    pub pcie_rx_bytes_per_second: Option<f64>,
    /// All NVLinks together.
    pub nvlink_tx_bytes_per_second: Option<f64>,
    pub nvlink_rx_bytes_per_second: Option<f64>,
}

/// One Xid error of one GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidEvent {
    /// The GPU's index, when known; the kernel log names a PCI address instead (`pci_bus_id`).
    pub gpu: Option<u32>,
    pub pci_bus_id: Option<String>,
    pub code: u64,
    /// The kernel log line, or a description for NVML events.
    pub message: String,
}
