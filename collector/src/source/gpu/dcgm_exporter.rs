//! dcgm-exporter, read by the `gpu` source. Before Hopper, NVML has no GPM: SM activity and occupancy,
//! the tensor and FP pipes' activity, DRAM activity and the profiled PCIe and NVLink bytes come only
//! from DCGM's profiling module, which a co-located dcgm-exporter serves (`[collector.gpu]
//! dcgm_exporter_url`, off by default). Its page is read at each collection and written under Argus'
//! names and labels (docs/metrics.md, "dcgm-exporter mapping").
//!
//! The readings NVML already gives (`DCGM_FI_DEV_*`) are not written twice: they are mapped only where
//! NVML is unavailable ([`Readings::All`]), and then per GPU with the GPU's labels alone, as NVML's own
//! series have them (a pod's labels would start a new series whenever the pod changes, and a counter's
//! `increase()` would miss what happened in between). `DCGM_FI_DEV_XID_ERRORS` (the last Xid, as a
//! gauge) is never mapped: the kernel log counts every Xid. DCGM's blank values (a field not supported,
//! not found or not permitted) are absent readings, never numbers.
use super::THROTTLE_REASONS;
use crate::batch::Point;
use crate::source::scrape::exposition::{self, ParseError, Sample};
use std::collections::HashMap;
use std::time::Duration;

/// Bodies past this are refused: a dcgm-exporter page is some 100 KiB for eight GPUs.
const MAX_BODY: usize = 8 << 20;
const ACCEPT: &str = "text/plain;version=0.0.4;q=0.9,*/*;q=0.1";

/// Which of dcgm-exporter's fields to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Readings {
    /// The profiling fields (`DCGM_FI_PROF_*`) only: NVML is read for the rest.
    Profiling,
    /// Every field in [`FIELDS`]: NVML is not available.
    All,
}

/// How one dcgm-exporter field becomes a field of measurement `gpu` (series `gpu_<field>`).
#[derive(Debug, Clone, Copy)]
enum To {
    /// A profiling ratio or rate, per GPU or MIG instance, with its instance and workload labels.
    Profiling(&'static str),
    /// A reading NVML also gives: per GPU, converted to Argus' unit.
    Device(&'static str, Unit),
    /// Framebuffer MiB: per GPU under the first name; per MIG instance under the second, where Argus
    /// has a series for it.
    Memory(&'static str, Option<&'static str>),
    /// The clocks-event reasons bitmask: one `gpu_throttle_reason` per reason, 1 while it holds.
    ClocksEventReasons,
}

/// dcgm-exporter's unit of a field Argus writes in another.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Same,
    /// 0–100 → a ratio.
    Percent,
    Megahertz,
    Millijoules,
}

impl Unit {
    fn apply(self, v: f64) -> f64 {
        match self {
            Unit::Same => v,
            Unit::Percent => v / 100.0,
            Unit::Megahertz => v * 1e6,
            Unit::Millijoules => v / 1000.0,
        }
    }
}

const MIB: f64 = 1024.0 * 1024.0;

/// The fields mapped, by dcgm-exporter's name (docs/metrics.md lists the same).
const FIELDS: &[(&str, To)] = &[
    ("DCGM_FI_PROF_SM_ACTIVE", To::Profiling("sm_activity_ratio")),
    ("DCGM_FI_PROF_SM_OCCUPANCY", To::Profiling("sm_occupancy_ratio")),
    ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", To::Profiling("tensor_activity_ratio")),
    ("DCGM_FI_PROF_DRAM_ACTIVE", To::Profiling("dram_activity_ratio")),
    ("DCGM_FI_PROF_PIPE_FP64_ACTIVE", To::Profiling("fp64_activity_ratio")),
    ("DCGM_FI_PROF_PIPE_FP32_ACTIVE", To::Profiling("fp32_activity_ratio")),
    ("DCGM_FI_PROF_PIPE_FP16_ACTIVE", To::Profiling("fp16_activity_ratio")),
    ("DCGM_FI_PROF_PCIE_TX_BYTES", To::Profiling("gpm_pcie_transmit_bytes_per_second")),
    ("DCGM_FI_PROF_PCIE_RX_BYTES", To::Profiling("gpm_pcie_receive_bytes_per_second")),
    ("DCGM_FI_PROF_NVLINK_TX_BYTES", To::Profiling("gpm_nvlink_transmit_bytes_per_second")),
    ("DCGM_FI_PROF_NVLINK_RX_BYTES", To::Profiling("gpm_nvlink_receive_bytes_per_second")),
    ("DCGM_FI_DEV_GPU_UTIL", To::Device("utilization_ratio", Unit::Percent)),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", To::Device("memory_utilization_ratio", Unit::Percent)),
    ("DCGM_FI_DEV_FB_TOTAL", To::Memory("memory_total_bytes", Some("mig_memory_total_bytes"))),
    ("DCGM_FI_DEV_FB_USED", To::Memory("memory_used_bytes", Some("mig_memory_used_bytes"))),
    ("DCGM_FI_DEV_FB_FREE", To::Memory("memory_free_bytes", None)),
    ("DCGM_FI_DEV_GPU_TEMP", To::Device("temperature_celsius", Unit::Same)),
    ("DCGM_FI_DEV_MEMORY_TEMP", To::Device("memory_temperature_celsius", Unit::Same)),
    ("DCGM_FI_DEV_POWER_USAGE", To::Device("power_watts", Unit::Same)),
    ("DCGM_FI_DEV_POWER_MGMT_LIMIT", To::Device("power_limit_watts", Unit::Same)),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", To::Device("energy_joules_total", Unit::Millijoules)),
    ("DCGM_FI_DEV_SM_CLOCK", To::Device("sm_clock_hertz", Unit::Megahertz)),
    ("DCGM_FI_DEV_MEM_CLOCK", To::Device("memory_clock_hertz", Unit::Megahertz)),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", To::Device("pcie_replays_total", Unit::Same)),
    ("DCGM_FI_DEV_FAN_SPEED", To::Device("fan_speed_ratio", Unit::Percent)),
    ("DCGM_FI_DEV_PSTATE", To::Device("performance_state", Unit::Same)),
    // The older and the newer (DCGM 3.3) name of one field.
    ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", To::ClocksEventReasons),
    ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", To::ClocksEventReasons),
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", To::Device("ecc_errors_corrected_total", Unit::Same)),
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", To::Device("ecc_errors_uncorrected_total", Unit::Same)),
    ("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", To::Device("ecc_errors_corrected_aggregate_total", Unit::Same)),
    ("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", To::Device("ecc_errors_uncorrected_aggregate_total", Unit::Same)),
    ("DCGM_FI_DEV_RETIRED_SBE", To::Device("retired_pages_single_bit", Unit::Same)),
    ("DCGM_FI_DEV_RETIRED_DBE", To::Device("retired_pages_double_bit", Unit::Same)),
    ("DCGM_FI_DEV_RETIRED_PENDING", To::Device("retired_pages_pending", Unit::Same)),
    ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", To::Device("remapped_rows_correctable", Unit::Same)),
    ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", To::Device("remapped_rows_uncorrectable", Unit::Same)),
    ("DCGM_FI_DEV_ROW_REMAP_PENDING", To::Device("remapped_rows_pending", Unit::Same)),
    ("DCGM_FI_DEV_ROW_REMAP_FAILURE", To::Device("remapped_rows_failed", Unit::Same)),
];

/// dcgm-exporter's labels naming the GPU, and Argus' names for them. `UUID` is `uuid` in its 1.x
/// compatibility mode; `DCGM_FI_DEV_SERIAL` is there when its counters file makes the serial a label.
/// Every other label is dropped: `Hostname`/`hostname` (the collector's `host` wins), `pci_bus_id`,
/// `DCGM_FI_DRIVER_VERSION` and the other label fields.
const GPU_LABELS: &[(&str, &str)] = &[
    ("gpu", "gpu"),
    ("UUID", "uuid"),
    ("uuid", "uuid"),
    ("device", "device"),
    ("modelName", "model"),
    ("DCGM_FI_DEV_SERIAL", "serial"),
];

/// A MIG instance's labels.
const INSTANCE_LABELS: &[(&str, &str)] = &[("GPU_I_ID", "gpu_instance"), ("GPU_I_PROFILE", "mig_profile")];

/// The labels of the workload on a GPU or instance (Kubernetes mode, HPC job mapping): kept on the
/// profiling series, which measure that workload.
const WORKLOAD_LABELS: &[(&str, &str)] = &[
    ("pod", "pod"),
    ("namespace", "namespace"),
    ("container", "container"),
    ("pod_uid", "pod_uid"),
    ("hpc_job", "hpc_job"),
];

/// dcgm-exporter's page as Argus' `gpu` points at `now`, or the page's first malformed line.
pub(crate) fn map(text: &str, now: i64, readings: Readings) -> Result<Vec<Point>, ParseError> {
    let mut out = Rows::default();
    for s in exposition::parse(text)? {
        let Some(&(_, to)) = FIELDS.iter().find(|(name, _)| *name == s.name) else { continue };
        if blank(s.value) || !s.value.is_finite() || !names_gpu(&s) {
            continue;
        }
        match (to, readings) {
            (To::Profiling(field), _) => {
                out.add(labels(&s, &[GPU_LABELS, INSTANCE_LABELS, WORKLOAD_LABELS]), field, s.value)
            }
            (_, Readings::Profiling) => {}
            (To::Device(field, unit), Readings::All) => out.add(labels(&s, &[GPU_LABELS]), field, unit.apply(s.value)),
            (To::Memory(gpu, mig), Readings::All) => match (instance(&s), mig) {
                (false, _) => out.add(labels(&s, &[GPU_LABELS]), gpu, s.value * MIB),
                (true, Some(mig)) => out.add(labels(&s, &[GPU_LABELS, INSTANCE_LABELS]), mig, s.value * MIB),
                (true, None) => {}
            },
            (To::ClocksEventReasons, Readings::All) => {
                // A bitmask: an integer, as f64 exactly (NVML's reasons end at bit 8).
                let mask = s.value as u64;
                for (bit, reason) in THROTTLE_REASONS {
                    let mut l = labels(&s, &[GPU_LABELS]);
                    l.push(("reason".into(), reason.to_string()));
                    out.add(l, "throttle_reason", if mask & bit != 0 { 1.0 } else { 0.0 });
                }
            }
        }
    }
    Ok(out.into_points(now))
}

/// Whether `s` names a GPU at all: a sample without `gpu` or its UUID belongs to no series of ours.
fn names_gpu(s: &Sample) -> bool {
    s.labels.iter().any(|(k, v)| matches!(k.as_str(), "gpu" | "UUID" | "uuid") && !v.is_empty())
}

/// Whether `s` is a MIG instance's.
fn instance(s: &Sample) -> bool {
    s.labels.iter().any(|(k, v)| k == "GPU_I_ID" && !v.is_empty())
}

/// `s`'s labels in `tables`, under Argus' names, in the tables' order; empty values (dcgm-exporter's
/// "no pod") left out.
fn labels(s: &Sample, tables: &[&[(&str, &str)]]) -> Labels {
    let mut out = Labels::new();
    for (from, to) in tables.iter().flat_map(|t| t.iter()) {
        let Some((_, v)) = s.labels.iter().find(|(k, v)| k == from && !v.is_empty()) else { continue };
        if !out.iter().any(|(k, _)| k == to) {
            out.push((to.to_string(), v.clone()));
        }
    }
    out
}

/// DCGM's blank values (dcgm_structs.h): `DCGM_INT32_BLANK` (0x7ffffff0), `DCGM_FP64_BLANK` (2^47), each
/// with NOT_FOUND, NOT_SUPPORTED and NOT_PERMISSIONED after it, and the same four of
/// `DCGM_INT64_BLANK` (0x7ffffffffffffff0), which read as 2^63 once parsed. dcgm-exporter's own check
/// takes the int32 ones in int64 fields too, as here.
fn blank(v: f64) -> bool {
    const INT32: f64 = 2_147_483_632.0;
    const FP64: f64 = 140_737_488_355_328.0;
    const INT64: f64 = 9_223_372_036_854_775_808.0;
    (INT32..=INT32 + 3.0).contains(&v) || (FP64..=FP64 + 3.0).contains(&v) || v >= INT64
}

/// Labels under Argus' names, in the order of the label tables.
type Labels = Vec<(String, String)>;

/// Points being built: one per label set, in the order first seen, each field once (the first value).
#[derive(Default)]
struct Rows {
    index: HashMap<Labels, usize>,
    rows: Vec<(Labels, Vec<(&'static str, f64)>)>,
}

impl Rows {
    fn add(&mut self, labels: Labels, field: &'static str, v: f64) {
        let i = *self.index.entry(labels.clone()).or_insert_with(|| {
            self.rows.push((labels, Vec::new()));
            self.rows.len() - 1
        });
        let fields = &mut self.rows[i].1;
        if !fields.iter().any(|(f, _)| *f == field) {
            fields.push((field, v));
        }
    }

    fn into_points(self, now: i64) -> Vec<Point> {
        self.rows
            .into_iter()
            .map(|(labels, fields)| {
                let p = labels.iter().fold(Point::new("gpu", now), |p, (k, v)| p.tag(k, v.as_str()));
                fields.into_iter().fold(p, |p, (f, v)| p.field(f, v))
            })
            .collect()
    }
}

/// Why dcgm-exporter's page could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DcgmExporterError {
    #[error("dcgm-exporter at {url}: {reason}")]
    Http { url: String, reason: String },
    #[error("dcgm-exporter at {url}: no answer within {after:?}")]
    Timeout { url: String, after: Duration },
    #[error("dcgm-exporter at {url}: status {status}")]
    Status { url: String, status: u16 },
    #[error("dcgm-exporter at {url}: body larger than {MAX_BODY} bytes")]
    TooLarge { url: String },
    #[error("dcgm-exporter at {url}: {source}")]
    Parse { url: String, source: ParseError },
    /// Called where it cannot wait on the collector's runtime: outside it, or on a single-threaded one
    /// that nothing else drives while this thread waits.
    #[error("dcgm-exporter at {url}: not read from a blocking thread of the collector's runtime")]
    NoRuntime { url: String },
}

/// A co-located dcgm-exporter, read by the gpu source at each collection.
pub(crate) struct DcgmExporter {
    url: String,
    timeout: Duration,
    client: reqwest::Client,
}

impl DcgmExporter {
    /// An exporter at `url` (validated with the configuration), each read given up after `timeout`,
    /// which should leave the gpu source time within its own.
    pub(crate) fn new(url: &str, timeout: Duration) -> Result<DcgmExporter, DcgmExporterError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| DcgmExporterError::Http { url: url.to_string(), reason: crate::source::scrape::causes(&e) })?;
        Ok(DcgmExporter { url: url.to_string(), timeout, client })
    }

    /// Reads the page and maps it. Runs on the collection's blocking thread, waiting on the collector's
    /// (multi-threaded) runtime for the request: at most the timeout.
    pub(crate) fn read(&self, now: i64, readings: Readings) -> Result<Vec<Point>, DcgmExporterError> {
        let no_runtime = || DcgmExporterError::NoRuntime { url: self.url.clone() };
        let handle = tokio::runtime::Handle::try_current().map_err(|_| no_runtime())?;
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return Err(no_runtime());
        }
        let body = handle.block_on(self.fetch())?;
        map(&body, now, readings).map_err(|source| DcgmExporterError::Parse { url: self.url.clone(), source })
    }

    async fn fetch(&self) -> Result<String, DcgmExporterError> {
        let url = || self.url.clone();
        let http = |e: reqwest::Error| match e.is_timeout() {
            true => DcgmExporterError::Timeout { url: url(), after: self.timeout },
            false => DcgmExporterError::Http { url: url(), reason: crate::source::scrape::causes(&e) },
        };
        let mut resp = self.client.get(&self.url).header(reqwest::header::ACCEPT, ACCEPT).send().await.map_err(http)?;
        if !resp.status().is_success() {
            return Err(DcgmExporterError::Status { url: url(), status: resp.status().as_u16() });
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(http)? {
            if body.len() + chunk.len() > MAX_BODY {
                return Err(DcgmExporterError::TooLarge { url: url() });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(String::from_utf8_lossy(&body).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::Batch;
    use crate::source::golden;
    use expect_test::{Expect, expect};

    fn fixture(name: &str) -> String {
        std::fs::read_to_string(golden::fixture(&format!("dcgm-exporter/{name}"))).unwrap()
    }

    /// The series `map` writes, as exposition lines; nothing at all when it writes none.
    fn shown(text: &str, readings: Readings) -> String {
        let mut b = Batch::new();
        for p in map(text, 1_000, readings).unwrap() {
            b.push(p);
        }
        if b.is_empty() { String::new() } else { b.to_exposition() }
    }

    fn check(text: &str, readings: Readings, expect: Expect) {
        expect.assert_eq(&shown(text, readings));
    }

    #[test]
    fn profiling_fields_keep_instance_and_workload_labels() {
        check(
            r#"DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-1",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",GPU_I_PROFILE="3g.40gb",GPU_I_ID="2",Hostname="node-7",DCGM_FI_DRIVER_VERSION="535.129.03",container="trainer",namespace="ml",pod="train-0",pod_uid=""} 0.82"#,
            Readings::Profiling,
            expect![[r#"
                gpu_sm_activity_ratio{container="trainer", device="nvidia0", gpu="0", gpu_instance="2", mig_profile="3g.40gb", model="NVIDIA A100-SXM4-80GB", namespace="ml", pod="train-0", uuid="GPU-1"} 0.82
            "#]],
        );
        check(
            "DCGM_FI_PROF_NVLINK_TX_BYTES{gpu=\"1\",UUID=\"GPU-2\",DCGM_FI_DEV_SERIAL=\"1650923000001\"} 2.5e9\n\
             DCGM_FI_PROF_NVLINK_RX_BYTES{gpu=\"1\",UUID=\"GPU-2\",DCGM_FI_DEV_SERIAL=\"1650923000001\"} 2.4e9\n\
             DCGM_FI_PROF_SM_OCCUPANCY{gpu=\"1\",UUID=\"GPU-2\",DCGM_FI_DEV_SERIAL=\"1650923000001\"} 0.31",
            Readings::Profiling,
            expect![[r#"
                gpu_gpm_nvlink_receive_bytes_per_second{gpu="1", serial="1650923000001", uuid="GPU-2"} 2400000000
                gpu_gpm_nvlink_transmit_bytes_per_second{gpu="1", serial="1650923000001", uuid="GPU-2"} 2500000000
                gpu_sm_occupancy_ratio{gpu="1", serial="1650923000001", uuid="GPU-2"} 0.31
            "#]],
        );
    }

    #[test]
    fn device_readings_only_without_nvml_and_per_gpu() {
        let page = r#"DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",pod="a"} 46
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-1",GPU_I_ID="1",GPU_I_PROFILE="1g.10gb",pod="a"} 1410
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-1",GPU_I_ID="2",GPU_I_PROFILE="1g.10gb",pod="b"} 1410
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",GPU_I_ID="1",GPU_I_PROFILE="1g.10gb",pod="a"} 512
DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-1",GPU_I_ID="1",GPU_I_PROFILE="1g.10gb",pod="a"} 9000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-1"} 129931554972
DCGM_FI_DEV_CLOCKS_EVENT_REASONS{gpu="0",UUID="GPU-1"} 68
DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-1"} 79
"#;
        check(page, Readings::Profiling, expect![""]);
        check(
            page,
            Readings::All,
            expect![[r#"
                gpu_energy_joules_total{gpu="0", uuid="GPU-1"} 129931554.972
                gpu_mig_memory_used_bytes{gpu="0", gpu_instance="1", mig_profile="1g.10gb", uuid="GPU-1"} 536870912
                gpu_sm_clock_hertz{gpu="0", uuid="GPU-1"} 1410000000
                gpu_throttle_reason{gpu="0", reason="applications_clocks_setting", uuid="GPU-1"} 0
                gpu_throttle_reason{gpu="0", reason="display_clock_setting", uuid="GPU-1"} 0
                gpu_throttle_reason{gpu="0", reason="gpu_idle", uuid="GPU-1"} 0
                gpu_throttle_reason{gpu="0", reason="hw_power_brake_slowdown", uuid="GPU-1"} 0
                gpu_throttle_reason{gpu="0", reason="hw_slowdown", uuid="GPU-1"} 0
                gpu_throttle_reason{gpu="0", reason="hw_thermal_slowdown", uuid="GPU-1"} 1
                gpu_throttle_reason{gpu="0", reason="sw_power_cap", uuid="GPU-1"} 1
                gpu_throttle_reason{gpu="0", reason="sw_thermal_slowdown", uuid="GPU-1"} 0
                gpu_throttle_reason{gpu="0", reason="sync_boost", uuid="GPU-1"} 0
                gpu_utilization_ratio{gpu="0", uuid="GPU-1"} 0.46
            "#]],
        );
    }

    #[test]
    fn blanks_and_samples_without_a_gpu_are_left_out() {
        check(
            "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-1\"} 2147483633\n\
             DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-1\"} 140737488355330.000000\n\
             DCGM_FI_DEV_PCIE_REPLAY_COUNTER{gpu=\"0\",UUID=\"GPU-1\"} 9223372036854775793\n\
             DCGM_FI_DEV_MEM_CLOCK{gpu=\"0\",UUID=\"GPU-1\"} NaN\n\
             DCGM_FI_PROF_DRAM_ACTIVE 0.5\n\
             DCGM_FI_PROF_SM_ACTIVE{Hostname=\"node-7\"} 0.5\n\
             DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"0\",UUID=\"GPU-1\"} 2147483631\n\
             DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=\"1\",UUID=\"GPU-2\"} 2147483636",
            Readings::All,
            expect![[r#"
                gpu_energy_joules_total{gpu="0", uuid="GPU-1"} 2147483.631
                gpu_energy_joules_total{gpu="1", uuid="GPU-2"} 2147483.636
            "#]],
        );
    }

    #[test]
    fn a_malformed_page_is_an_error_naming_its_line() {
        let err =
            map("DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\"} 0.5\nDCGM_FI_PROF_SM_ACTIVE{gpu=\"1\" 0.5\n", 0, Readings::All)
                .unwrap_err();
        assert_eq!(err.to_string(), "line 2: label without '='");
    }

    /// Every fixture, both ways: NVML's absence adds the device readings and nothing else.
    #[test]
    fn real_pages() {
        // `profiling`: the series with the profiling fields alone; `all`: what every reading adds.
        let cases: &[(&str, Expect, Expect)] = &[
            (
                "readme-quickstart.txt",
                expect![""],
                expect![[r#"
                gpu_memory_clock_hertz{gpu="0", uuid="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 405000000
                gpu_sm_clock_hertz{gpu="0", uuid="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139000000
            "#]],
            ),
            (
                "readme-kubernetes.txt",
                expect![""],
                expect![[r#"
                gpu_memory_clock_hertz{gpu="0", uuid="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 405000000
                gpu_sm_clock_hertz{gpu="0", uuid="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"} 139000000
            "#]],
            ),
            (
                "pods.txt",
                expect![[r#"
                gpu_dram_activity_ratio{container="dcgmproftester11", device="nvidia0", gpu="0", namespace="default", pod="dcgmproftester", uuid="GPU-227ba87f-fcf3-c09a-dc3b-c72ea41297e3"} 0.000001
                gpu_fp16_activity_ratio{container="dcgmproftester11", device="nvidia0", gpu="0", namespace="default", pod="dcgmproftester", uuid="GPU-227ba87f-fcf3-c09a-dc3b-c72ea41297e3"} 0
                gpu_fp32_activity_ratio{container="dcgmproftester11", device="nvidia0", gpu="0", namespace="default", pod="dcgmproftester", uuid="GPU-227ba87f-fcf3-c09a-dc3b-c72ea41297e3"} 0
                gpu_fp64_activity_ratio{container="dcgmproftester11", device="nvidia0", gpu="0", namespace="default", pod="dcgmproftester", uuid="GPU-227ba87f-fcf3-c09a-dc3b-c72ea41297e3"} 0
                gpu_gpm_pcie_transmit_bytes_per_second{container="dcgmproftester11", device="nvidia0", gpu="0", namespace="default", pod="dcgmproftester", uuid="GPU-227ba87f-fcf3-c09a-dc3b-c72ea41297e3"} 421894
            "#]],
                expect![""],
            ),
            (
                "a30-mig.txt",
                expect![[r#"
                gpu_sm_activity_ratio{device="nvidia0", gpu="0", gpu_instance="3", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-265c9814-6156-355b-e589-ff2064894f16"} 0
                gpu_sm_activity_ratio{device="nvidia0", gpu="0", gpu_instance="4", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-265c9814-6156-355b-e589-ff2064894f16"} 0
                gpu_sm_activity_ratio{device="nvidia0", gpu="0", gpu_instance="5", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-265c9814-6156-355b-e589-ff2064894f16"} 0
                gpu_sm_activity_ratio{device="nvidia0", gpu="0", gpu_instance="6", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-265c9814-6156-355b-e589-ff2064894f16"} 0
                gpu_sm_activity_ratio{device="nvidia1", gpu="1", gpu_instance="3", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-2d20791a-b4a6-ba59-97f1-e95b99fe5b49"} 0
                gpu_sm_activity_ratio{device="nvidia1", gpu="1", gpu_instance="4", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-2d20791a-b4a6-ba59-97f1-e95b99fe5b49"} 0
                gpu_tensor_activity_ratio{device="nvidia0", gpu="0", gpu_instance="3", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-265c9814-6156-355b-e589-ff2064894f16"} 0
                gpu_tensor_activity_ratio{device="nvidia0", gpu="0", gpu_instance="4", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-265c9814-6156-355b-e589-ff2064894f16"} 0
                gpu_tensor_activity_ratio{device="nvidia0", gpu="0", gpu_instance="5", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-265c9814-6156-355b-e589-ff2064894f16"} 0
                gpu_tensor_activity_ratio{device="nvidia0", gpu="0", gpu_instance="6", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-265c9814-6156-355b-e589-ff2064894f16"} 0
                gpu_tensor_activity_ratio{device="nvidia1", gpu="1", gpu_instance="3", mig_profile="1g.6gb", model="NVIDIA A30", uuid="GPU-2d20791a-b4a6-ba59-97f1-e95b99fe5b49"} 0
            "#]],
                expect![""],
            ),
            (
                "a30-mig-pods.txt",
                expect![[r#"
                gpu_tensor_activity_ratio{device="nvidia0", gpu="0", gpu_instance="1", mig_profile="2g.12gb", model="NVIDIA A30", uuid="GPU-603a8873-0edd-c157-ce48-2078e8b1a935"} 0.022137
            "#]],
                expect![""],
            ),
            (
                "mixed-mig-pods.txt",
                expect![""],
                expect![[r#"
                gpu_memory_free_bytes{device="nvidia1", gpu="1", model="NVIDIA RTX 2000 Ada Generation", uuid="GPU-fc60126e-514d-3522-2828-c5daa8e99d85"} 11822694400
            "#]],
            ),
            (
                "profiling-and-device.txt",
                expect![[r#"
                gpu_dram_activity_ratio{device="nvidia0", gpu="0", uuid="GPU-45984919-9e67-f2ec-9b84-a96fefa525ff"} 0
                gpu_fp16_activity_ratio{device="nvidia0", gpu="0", uuid="GPU-45984919-9e67-f2ec-9b84-a96fefa525ff"} 0
                gpu_fp32_activity_ratio{device="nvidia0", gpu="0", uuid="GPU-45984919-9e67-f2ec-9b84-a96fefa525ff"} 0
                gpu_fp64_activity_ratio{device="nvidia0", gpu="0", uuid="GPU-45984919-9e67-f2ec-9b84-a96fefa525ff"} 0
                gpu_gpm_pcie_receive_bytes_per_second{device="nvidia0", gpu="0", uuid="GPU-45984919-9e67-f2ec-9b84-a96fefa525ff"} 0
                gpu_gpm_pcie_transmit_bytes_per_second{device="nvidia0", gpu="0", uuid="GPU-45984919-9e67-f2ec-9b84-a96fefa525ff"} 0
            "#]],
                expect![[r#"
                    gpu_energy_joules_total{device="nvidia1", gpu="1", uuid="GPU-08abd178-8a91-05c5-6a52-1ab4a05bcdaf"} 129931554.972
                    gpu_memory_clock_hertz{device="nvidia1", gpu="1", uuid="GPU-08abd178-8a91-05c5-6a52-1ab4a05bcdaf"} 877000000
                    gpu_memory_temperature_celsius{device="nvidia1", gpu="1", uuid="GPU-08abd178-8a91-05c5-6a52-1ab4a05bcdaf"} 54
                    gpu_power_watts{device="nvidia1", gpu="1", uuid="GPU-08abd178-8a91-05c5-6a52-1ab4a05bcdaf"} 167.362
                    gpu_sm_clock_hertz{device="nvidia1", gpu="1", uuid="GPU-08abd178-8a91-05c5-6a52-1ab4a05bcdaf"} 1380000000
                    gpu_temperature_celsius{device="nvidia1", gpu="1", uuid="GPU-08abd178-8a91-05c5-6a52-1ab4a05bcdaf"} 56
                "#]],
            ),
            (
                "t4-label-fields.txt",
                expect![""],
                expect![[r#"
                gpu_memory_total_bytes{device="nvidia0", gpu="0", model="Tesla T4", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 15842934784
                gpu_performance_state{device="nvidia0", gpu="0", model="Tesla T4", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 8
                gpu_power_limit_watts{device="nvidia0", gpu="0", model="Tesla T4", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 70
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="applications_clocks_setting", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 0
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="display_clock_setting", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 0
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="gpu_idle", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 1
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="hw_power_brake_slowdown", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 0
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="hw_slowdown", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 0
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="hw_thermal_slowdown", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 0
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="sw_power_cap", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 0
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="sw_thermal_slowdown", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 0
                gpu_throttle_reason{device="nvidia0", gpu="0", model="Tesla T4", reason="sync_boost", serial="1565220008176", uuid="GPU-9ef1b6d0-3643-5dd7-b823-c0ec20dcf2d5"} 0
            "#]],
            ),
        ];
        for (name, profiling, all) in cases {
            let page = fixture(name);
            let some = shown(&page, Readings::Profiling);
            profiling.assert_eq(&some);
            let added: String = shown(&page, Readings::All)
                .lines()
                .filter(|l| !some.lines().any(|s| s == *l))
                .map(|l| format!("{l}\n"))
                .collect();
            all.assert_eq(&added);
        }
    }

    /// Every fixture is listed above, and parses whole.
    #[test]
    fn every_fixture_is_a_valid_page() {
        let dir = golden::fixture("dcgm-exporter");
        let mut pages: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".txt"))
            .collect();
        pages.sort();
        assert_eq!(pages.len(), 8, "{pages:?}");
        for p in pages {
            let samples = exposition::parse(&fixture(&p)).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(!samples.is_empty(), "{p}");
        }
    }

    /// A stand-in for dcgm-exporter on loopback: `/metrics` serves `pods.txt`, `/fail` answers 500,
    /// `/slow` after 10 s, `/huge` more than `MAX_BODY`, `/broken` a malformed page.
    async fn exporter() -> String {
        use axum::routing::get;
        let page = fixture("pods.txt");
        let app = axum::Router::new()
            .route("/metrics", get(move || async move { page }))
            .route("/fail", get(|| async { (axum::http::StatusCode::INTERNAL_SERVER_ERROR, "dcgm: not initialized") }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(10)).await;
                    ""
                }),
            )
            .route("/huge", get(|| async { "#".repeat(MAX_BODY + 1) }))
            .route("/broken", get(|| async { "DCGM_FI_PROF_SM_ACTIVE{gpu=\"0\" 0.5\n" }));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(axum::serve(listener, app).into_future());
        format!("http://{addr}")
    }

    /// `read` as the gpu source calls it: on a blocking thread of the runtime.
    async fn read(url: String, timeout: Duration) -> Result<Vec<Point>, DcgmExporterError> {
        let e = DcgmExporter::new(&url, timeout).unwrap();
        tokio::task::spawn_blocking(move || e.read(1_000, Readings::Profiling)).await.unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_the_page_from_a_blocking_thread() {
        let base = exporter().await;
        let got = read(format!("{base}/metrics"), Duration::from_secs(5)).await.unwrap();
        assert!(!got.is_empty());
        assert_eq!(got, map(&fixture("pods.txt"), 1_000, Readings::Profiling).unwrap());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failures_name_the_exporter_and_the_cause() {
        let base = exporter().await;
        let err = |path: &str, timeout: Duration| {
            let url = format!("{base}{path}");
            async move { read(url, timeout).await.unwrap_err().to_string() }
        };
        let second = Duration::from_secs(5);
        assert_eq!(err("/fail", second).await, format!("dcgm-exporter at {base}/fail: status 500"));
        assert_eq!(
            err("/huge", second).await,
            format!("dcgm-exporter at {base}/huge: body larger than {MAX_BODY} bytes")
        );
        assert_eq!(err("/broken", second).await, format!("dcgm-exporter at {base}/broken: line 1: label without '='"));
        let started = std::time::Instant::now();
        assert_eq!(
            err("/slow", Duration::from_millis(300)).await,
            format!("dcgm-exporter at {base}/slow: no answer within 300ms")
        );
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let url = format!("http://{closed}/metrics");
        let refused = read(url.clone(), second).await.unwrap_err().to_string();
        assert!(refused.starts_with(&format!("dcgm-exporter at {url}: ")), "{refused}");
        assert!(refused.contains("Connection refused"), "{refused}");
    }

    /// Outside the runtime, or on a single-threaded one that nothing drives while the thread waits,
    /// `read` refuses rather than panicking or hanging.
    #[test]
    fn refuses_to_wait_where_nothing_drives_the_request() {
        let e = DcgmExporter::new("http://127.0.0.1:9400/metrics", Duration::from_secs(1)).unwrap();
        let no_runtime = "dcgm-exporter at http://127.0.0.1:9400/metrics: not read from a blocking thread of the collector's runtime";
        assert_eq!(e.read(0, Readings::All).unwrap_err().to_string(), no_runtime);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let got =
            rt.block_on(async move { tokio::task::spawn_blocking(move || e.read(0, Readings::All)).await.unwrap() });
        assert_eq!(got.unwrap_err().to_string(), no_runtime);
    }
}
