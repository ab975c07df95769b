//! GPM (GPU Performance Monitoring, Hopper and later): NVML computes its metrics between two samples
//! of a GPU's counters, so each GPU's last sample is kept until the next collection. The first
//! collection after the start (or after GPM stopped answering) has no earlier sample and yields none.

use super::super::backend::Gpm;
use nvml_wrapper::GpmSample;
use nvml_wrapper::enums::gpm::GpmMetricId;

/// What is asked for, in the order [`Sampler::read`] reads the answers back.
const METRICS: [GpmMetricId; 11] = [
    GpmMetricId::SmUtil,
    GpmMetricId::SmOccupancy,
    GpmMetricId::AnyTensorUtil,
    GpmMetricId::DramBwUtil,
    GpmMetricId::Fp64Util,
    GpmMetricId::Fp32Util,
    GpmMetricId::Fp16Util,
    GpmMetricId::PcieTxPerSec,
    GpmMetricId::PcieRxPerSec,
    GpmMetricId::NvlinkTotalTxPerSec,
    GpmMetricId::NvlinkTotalRxPerSec,
];

/// NVML's throughputs are in MiB/s.
const MIB: f64 = 1024.0 * 1024.0;

/// One GPU's last sample.
#[derive(Debug, Default)]
pub struct Sampler {
    previous: Option<GpmSample<'static>>,
}

impl Sampler {
    /// Takes a sample and returns the metrics since the previous one. A GPU without GPM (before
    /// Hopper, or a driver without it) answers nothing and keeps no sample.
    pub fn read(&mut self, nvml: &'static nvml_wrapper::Nvml, d: &nvml_wrapper::Device<'static>) -> Option<Gpm> {
        if !d.gpm_support().unwrap_or(false) {
            self.previous = None;
            return None;
        }
        let Ok(sample) = d.gpm_sample() else {
            self.previous = None;
            return None;
        };
        // The earlier sample is freed when this returns, after the metrics are read from it.
        let previous = self.previous.replace(sample)?;
        let current = self.previous.as_ref()?;
        let results = nvml_wrapper::gpm::gpm_metrics_get(nvml, &previous, current, &METRICS).ok()?;
        let v: Vec<Option<f64>> = results.into_iter().map(|r| r.ok().map(|m| m.value)).collect();
        let get = |i: usize| v.get(i).copied().flatten();
        let ratio = |i: usize| get(i).map(|percent| percent / 100.0);
        let bytes = |i: usize| get(i).map(|mib| mib * MIB);
        let gpm = Gpm {
            sm_activity_ratio: ratio(0),
            sm_occupancy_ratio: ratio(1),
            tensor_activity_ratio: ratio(2),
            dram_activity_ratio: ratio(3),
            fp64_activity_ratio: ratio(4),
            fp32_activity_ratio: ratio(5),
            fp16_activity_ratio: ratio(6),
            pcie_tx_bytes_per_second: bytes(7),
            pcie_rx_bytes_per_second: bytes(8),
            nvlink_tx_bytes_per_second: bytes(9),
            nvlink_rx_bytes_per_second: bytes(10),
        };
        (gpm != Gpm::default()).then_some(gpm)
    }
}
