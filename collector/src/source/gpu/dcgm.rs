//! dcgm-exporter's names and labels, written beside ours when `dcgm_names` is on, so dashboards and
//! alert rules built on dcgm-exporter keep working during a migration.
//!
//! Names and units follow dcgm-exporter's counters lists (etc/default-counters.csv,
//! etc/dcp-metrics-included.csv): clocks in MHz, framebuffer in MiB, energy in mJ, utilization in
//! percent, violation times in ns (NVML's nanoseconds, passed through by DCGM; older lists said µs),
//! profiling (`DCGM_FI_PROF_*`) activities as ratios and throughputs in bytes/s (the NVLink pair is
//! not in the lists but is the PCIe pair's DCGM sibling, which dcgm-exporter exports once listed). PCIe
//! link generation and width are in neither list and are written under Argus' names only. Labels:
//! `gpu`, `UUID`, `device`, `modelName`, `Hostname`, `pci_bus_id`. Each series is written as measurement `DCGM_FI_DEV` (or
//! `DCGM_FI_PROF`) with the rest of the name as field, which the `{measurement}_{field}` mapping turns
//! back into the exact name over either wire format.
//!
//! `DCGM_FI_DEV_XID_ERRORS` (the last Xid as a gauge) is left out on purpose: `gpu_xid_errors_total`
//! counts every one.

use super::backend::Device;
use crate::batch::{Batch, Point};

const MIB: f64 = 1024.0 * 1024.0;

pub fn points(d: &Device, hostname: &str, now: i64, batch: &mut Batch) {
    let tags = |p: Point| {
        p.tag("gpu", d.index.to_string())
            .tag("UUID", &d.uuid)
            .tag("device", format!("nvidia{}", d.index))
            .tag("modelName", &d.name)
            .tag("Hostname", hostname)
            .tag("pci_bus_id", &d.pci_bus_id)
    };
    let mhz = |hz: Option<f64>| hz.map(|v| v / 1e6);
    let mib = |b: Option<u64>| b.map(|v| (v as f64 / MIB).floor());
    let num = |v: Option<u64>| v.map(|x| x as f64);
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    let mut dev = tags(Point::new("DCGM_FI_DEV", now))
        .field_opt("GPU_UTIL", d.utilization_gpu_percent)
        .field_opt("MEM_COPY_UTIL", d.utilization_memory_percent)
        .field_opt("FB_FREE", mib(d.memory_free_bytes))
        .field_opt("FB_USED", mib(d.memory_used_bytes))
        .field_opt("FB_TOTAL", mib(d.memory_total_bytes))
        .field_opt("GPU_TEMP", d.temperature_celsius)
        .field_opt("MEMORY_TEMP", d.memory_temperature_celsius)
        .field_opt("POWER_USAGE", d.power_watts)
        .field_opt("POWER_MGMT_LIMIT", d.power_limit_watts)
        .field_opt("TOTAL_ENERGY_CONSUMPTION", d.energy_joules.map(|j| (j * 1000.0).round()))
        .field_opt("SM_CLOCK", mhz(d.sm_clock_hz))
        .field_opt("MEM_CLOCK", mhz(d.memory_clock_hz))
        .field_opt("PCIE_REPLAY_COUNTER", num(d.pcie_replay_total))
        .field_opt("POWER_VIOLATION", d.power_violation_seconds.map(|s| (s * 1e9).round()))
        .field_opt("THERMAL_VIOLATION", d.thermal_violation_seconds.map(|s| (s * 1e9).round()))
        .field_opt("CLOCK_THROTTLE_REASONS", num(d.throttle_reasons))
        .field_opt("FAN_SPEED", d.fan_speed_percent)
        .field_opt("PSTATE", d.performance_state.map(f64::from));
    if let Some(e) = &d.ecc {
        dev = dev
            .field("ECC_SBE_VOL_TOTAL", e.corrected_volatile as f64)
            .field("ECC_DBE_VOL_TOTAL", e.uncorrected_volatile as f64)
            .field("ECC_SBE_AGG_TOTAL", e.corrected_aggregate as f64)
            .field("ECC_DBE_AGG_TOTAL", e.uncorrected_aggregate as f64);
    }
    if let Some(r) = &d.retired_pages {
        dev = dev
            .field("RETIRED_SBE", r.single_bit as f64)
            .field("RETIRED_DBE", r.double_bit as f64)
            .field("RETIRED_PENDING", flag(r.pending));
    }
    if let Some(r) = &d.remapped_rows {
        dev = dev
            .field("CORRECTABLE_REMAPPED_ROWS", r.correctable as f64)
            .field("UNCORRECTABLE_REMAPPED_ROWS", r.uncorrectable as f64)
            .field("ROW_REMAP_FAILURE", flag(r.failed));
    }
    let nvlink: u64 = d.nvlinks.iter().filter_map(|l| Some(l.tx_bytes_total? + l.rx_bytes_total?)).sum();
    if d.nvlinks.iter().any(|l| l.tx_bytes_total.is_some()) {
        dev = dev.field("NVLINK_BANDWIDTH_TOTAL", nvlink as f64);
    }
    batch.push(dev);
    if let Some(g) = &d.gpm {
        batch.push(
            tags(Point::new("DCGM_FI_PROF", now))
                .field_opt("SM_ACTIVE", g.sm_activity_ratio)
                .field_opt("SM_OCCUPANCY", g.sm_occupancy_ratio)
                .field_opt("PIPE_TENSOR_ACTIVE", g.tensor_activity_ratio)
                .field_opt("DRAM_ACTIVE", g.dram_activity_ratio)
                .field_opt("PIPE_FP64_ACTIVE", g.fp64_activity_ratio)
                .field_opt("PIPE_FP32_ACTIVE", g.fp32_activity_ratio)
                .field_opt("PIPE_FP16_ACTIVE", g.fp16_activity_ratio)
                .field_opt("PCIE_TX_BYTES", g.pcie_tx_bytes_per_second)
                .field_opt("PCIE_RX_BYTES", g.pcie_rx_bytes_per_second)
                .field_opt("NVLINK_TX_BYTES", g.nvlink_tx_bytes_per_second)
                .field_opt("NVLINK_RX_BYTES", g.nvlink_rx_bytes_per_second),
        );
    }
}
