//! The NVML backend against the scenario-driven stand-in for `libnvidia-ml.so.1` (collector/fake-nvml),
//! loaded through `[collector.gpu] nvml_library` as on a real machine.
//!
//! NVML, and so the stand-in, is one state per process, read from `ARGUS_FAKE_NVML_SCENARIO` when it
//! starts: each test runs its checks in a fresh process of this test binary (`in_own_process`) with
//! its scenario in the environment.

use argus_collector::batch::Batch;
use argus_collector::config::{Config, GpuBackendKind};
use argus_collector::source::gpu::fake::Fake;
use argus_collector::source::gpu::nvml::Nvml;
use argus_collector::source::gpu::{Device, GpuBackend};
use argus_collector::source::{self, Source, SourceError};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Set in a child process to the library's path.
const CHILD: &str = "ARGUS_NVML_FAKE_TEST_LIBRARY";
const SCENARIO: &str = "ARGUS_FAKE_NVML_SCENARIO";

/// The series NVML's GPM gives, which need two collections.
const GPM: &[&str] = &[
    "gpu_sm_activity_ratio",
    "gpu_sm_occupancy_ratio",
    "gpu_tensor_activity_ratio",
    "gpu_dram_activity_ratio",
    "gpu_fp64_activity_ratio",
    "gpu_fp32_activity_ratio",
    "gpu_fp16_activity_ratio",
    "gpu_gpm_pcie_transmit_bytes_per_second",
    "gpu_gpm_pcie_receive_bytes_per_second",
    "gpu_gpm_nvlink_transmit_bytes_per_second",
    "gpu_gpm_nvlink_receive_bytes_per_second",
];

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

// === the 8×H100 node ===

#[test]
fn h100_node_reads_what_the_json_backend_reads_and_xids_come_from_the_event_set() {
    in_own_process(
        "h100_node_reads_what_the_json_backend_reads_and_xids_come_from_the_event_set",
        &fixture("nvml/h100x8.json"),
        |lib| {
            let mut gpu = gpu_source(lib, "20s", "gpu/sys", "dcgm_names = true");
            let first = collect(gpu.as_mut()).expect("collection").to_exposition();

            // GPM needs a sample from an earlier collection: none the first time.
            let gpm: Vec<&str> =
                first.lines().filter(|l| GPM.contains(&metric(l)) || l.starts_with("DCGM_FI_PROF")).collect();
            assert!(gpm.is_empty(), "GPM readings from a single sample: {gpm:#?}");

            // The Xids queued in the scenario arrive through NVML's event set (no kernel log configured).
            let xids: Vec<&str> = first.lines().filter(|l| metric(l) == "gpu_xid").collect();
            assert_eq!(xids.len(), 2, "{xids:#?}");
            assert!(
                xids[0].contains(r#"code="48""#)
                    && xids[0].contains(r#"gpu="1""#)
                    && xids[0].contains(r#"serial="1654922010498""#)
                    && xids[0].ends_with("\"NVML: Xid 48\"")
            );
            assert!(
                xids[1].contains(r#"code="94""#)
                    && xids[1].contains(r#"gpu="1""#)
                    && xids[1].ends_with("\"NVML: Xid 94\"")
            );

            // From the second collection on, GPUs 0 and 1 are the JSON fixture's: the same series as its
            // golden output, GPM and per-process utilization included. Xids are compared above, and
            // dcgm-exporter's names below.
            let second = collect(gpu.as_mut()).expect("second collection").to_exposition();
            let golden =
                std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gpu-h100.txt"))
                    .expect("golden gpu-h100.txt");
            let keep = |l: &&str| !metric(l).starts_with("gpu_xid") && !metric(l).starts_with("DCGM_");
            let expected: Vec<&str> = golden.lines().filter(|l| l.contains(r#"gpu=""#)).filter(keep).collect();
            let actual: Vec<&str> =
                second.lines().filter(|l| l.contains(r#"gpu="0""#) || l.contains(r#"gpu="1""#)).filter(keep).collect();
            assert_eq!(actual, expected, "gpus 0 and 1 differ from the golden output of the JSON backend");
            assert!(second.contains(r#"gpu_xid_errors_total{code="48", gpu="1", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 2"#));
            assert!(!second.contains("gpu_xid{"), "each Xid is delivered once:\n{second}");

            // All eight GPUs, in index order with the scenario's UUIDs and serials, each with the same
            // readings as GPU 0 and 18 NVLinks with byte counters.
            let scenario: Value =
                serde_json::from_str(&std::fs::read_to_string(fixture("nvml/h100x8.json")).unwrap()).unwrap();
            let names_of = |gpu: usize| -> BTreeSet<&str> {
                let label = format!(r#"gpu="{gpu}""#);
                // Xids and per-process series depend on what happens on the GPU, not on what it reads.
                second
                    .lines()
                    .filter(|l| l.contains(&label) && !l.starts_with("gpu_xid") && !l.starts_with("gpu_process_"))
                    .map(metric)
                    .collect()
            };
            let gpu0 = names_of(0);
            for name in GPM.iter().chain(&["DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_NVLINK_TX_BYTES"]) {
                assert!(gpu0.contains(name), "{name} missing on gpu 0:\n{second}");
            }
            for (i, d) in scenario["devices"].as_array().unwrap().iter().enumerate() {
                let uuid = d["uuid"].as_str().unwrap();
                let serial = d["serial"].as_str().unwrap();
                let line = format!(
                    r#"gpu_power_watts{{device="nvidia{i}", gpu="{i}", model="NVIDIA H100 80GB HBM3", serial="{serial}", uuid="{uuid}"}} "#
                );
                let watts = d["power_usage_milliwatts"].as_f64().unwrap() / 1000.0;
                assert!(second.contains(&format!("{line}{watts}\n")), "gpu {i}: no {line}{watts}");
                assert_eq!(names_of(i), gpu0, "gpu {i} reads other fields than gpu 0");
                let label = format!(r#"gpu="{i}""#);
                let links =
                    second.lines().filter(|l| l.starts_with("gpu_nvlink_transmit_bytes_total{") && l.contains(&label));
                assert_eq!(links.count(), 18, "gpu {i}");
                let kib = d["nvlinks"][17]["throughput_kib"]["data_rx"].as_u64().unwrap();
                let rx = format!(r#"gpu_nvlink_receive_bytes_total{{device="nvidia{i}", gpu="{i}", link="17", "#);
                assert!(
                    second.lines().any(|l| l.starts_with(&rx) && l.ends_with(&format!(" {}", kib * 1024))),
                    "gpu {i}"
                );
                let present = format!(
                    r#"gpu_present{{device="nvidia{i}", gpu="{i}", model="NVIDIA H100 80GB HBM3", serial="{serial}", uuid="{uuid}"}} 1"#
                );
                assert!(second.contains(&present), "{present}");
            }
            assert_counts(&second, 8, 8);
            // dcgm-exporter's units: violation time in ns, profiling throughput in bytes/s.
            assert!(second.contains(r#"DCGM_FI_DEV_POWER_VIOLATION{Hostname="node-7", UUID="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10", device="nvidia0", gpu="0", modelName="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:18:00.0"} 1843250000000"#), "{second}");
            assert!(second.contains(r#"DCGM_FI_PROF_NVLINK_TX_BYTES{Hostname="node-7", UUID="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10", device="nvidia0", gpu="0", modelName="NVIDIA H100 80GB HBM3", pci_bus_id="00000000:18:00.0"} 193273528320"#), "{second}");

            // GPM keeps answering: each collection frees the sample it compared against (the library
            // refuses a third live sample per GPU).
            for n in 3..=6 {
                let text = collect(gpu.as_mut()).expect("collection").to_exposition();
                let sm = text.lines().filter(|l| metric(l) == "gpu_sm_activity_ratio").count();
                assert_eq!(sm, 8, "collection {n}:\n{text}");
            }
        },
    );
}

#[test]
fn a100_has_no_gpm_and_every_other_reading() {
    in_own_process("a100_has_no_gpm_and_every_other_reading", &fixture("nvml/a100.json"), |lib| {
        let mut gpu = gpu_source(lib, "20s", "gpu/no-such-sys", "dcgm_names = true");
        for n in 1..=2 {
            let text = collect(gpu.as_mut()).expect("an A100 collects without errors").to_exposition();
            let names: BTreeSet<&str> = text.lines().map(metric).collect();
            for absent in GPM.iter().chain(&["DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES"]) {
                assert!(!names.contains(absent), "collection {n}: {absent} present:\n{text}");
            }
            for present in [
                "gpu_memory_temperature_celsius",
                "gpu_nvlink_transmit_bytes_total",
                "gpu_power_violation_seconds_total",
                "gpu_thermal_violation_seconds_total",
                "gpu_pcie_link_width_max",
                "gpu_process_sm_utilization_ratio",
                "gpu_present",
                "DCGM_FI_DEV_THERMAL_VIOLATION",
            ] {
                assert!(names.contains(present), "collection {n}: {present} missing:\n{text}");
            }
            let links = text.lines().filter(|l| metric(l) == "gpu_nvlink_receive_bytes_total").count();
            assert_eq!(links, 12, "{text}");
            assert!(text.contains(r#"gpu_process_sm_utilization_ratio{device="nvidia0", gpu="0", job="4242", model="NVIDIA A100-SXM4-80GB", serial="1323621051862", uuid="GPU-072b19bd-4ccf-63cf-6435-cf462aff833d"} 0.81"#), "{text}");
            assert!(text.contains(r#"gpu_nvlink_transmit_bytes_total{device="nvidia0", gpu="0", link="11", model="NVIDIA A100-SXM4-80GB", serial="1323621051862", slurm_job="4242", uuid="GPU-072b19bd-4ccf-63cf-6435-cf462aff833d"} 3174411264000"#), "{text}");
        }
    });
}

/// The Slurm job whose processes use a GPU labels that GPU's series, on the families
/// `[collector.gpu.attribution] families` names only: a point's other fields keep their labels. The
/// per-owner process series keep their own `job` label and get no GPU-level one.
#[test]
fn the_slurm_job_using_a_gpu_labels_the_families_asked_for() {
    in_own_process("the_slurm_job_using_a_gpu_labels_the_families_asked_for", &fixture("nvml/a100.json"), |lib| {
        let only = "[collector.gpu.attribution]\nkubernetes = false\nscontrol = \"/no/such/scontrol\"\n\
                    families = [\"gpu_utilization_ratio\", \"gpu_nvlink_*\"]";
        let mut gpu = gpu_source(lib, "20s", "gpu/no-such-sys", only);
        let text = collect(gpu.as_mut()).expect("collects").to_exposition();
        let gpu0 = |l: &&str| l.contains(r#"gpu="0""#);
        let labelled: BTreeSet<&str> =
            text.lines().filter(gpu0).filter(|l| l.contains(r#"slurm_job="4242""#)).map(metric).collect();
        let expected: BTreeSet<&str> = [
            "gpu_utilization_ratio",
            "gpu_nvlink_active",
            "gpu_nvlink_transmit_bytes_total",
            "gpu_nvlink_receive_bytes_total",
            "gpu_nvlink_replay_errors_total",
            "gpu_nvlink_recovery_errors_total",
            "gpu_nvlink_crc_errors_total",
        ]
        .into();
        assert_eq!(labelled, expected, "{text}");
        for name in ["gpu_temperature_celsius", "gpu_power_watts", "gpu_process_sm_utilization_ratio"] {
            assert!(
                text.lines().filter(gpu0).any(|l| metric(l) == name && !l.contains("slurm_job")),
                "{name} without the job's label:\n{text}"
            );
        }
    });
}

// === the JSON backend's fixtures, and recordings of real drivers, through the C library ===

/// Each fake-backend fixture (and a real recording, once one is committed under `gpu/recorded/`) turned
/// into a scenario reads back as the same devices and Xids through NVML, but for what NVML is not asked.
#[test]
fn json_fixtures_read_back_through_nvml() {
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(fixture("gpu"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    fixtures.push(fixture("gpu/recorded/nvml.json"));
    fixtures.retain(|p| p.exists());
    fixtures.sort();
    assert!(fixtures.len() >= 2, "{fixtures:?}");
    let dir = tempfile::tempdir().unwrap();
    for f in &fixtures {
        let fake = Fake::load(f).unwrap();
        let scenario = dir.path().join(f.file_name().unwrap());
        std::fs::write(&scenario, scenario_from_fixture(&fake).to_string()).unwrap();
        let out = run_child("json_fixture_reads_back", &scenario, &[("ARGUS_NVML_FAKE_TEST_FIXTURE", f.as_os_str())]);
        let child = in_this_binary("json_fixture_reads_back");
        assert!(out.contains(&format!("test {child} ... ok")), "{}: {out}", f.display());
    }
}

/// The child half of the test above; on its own it reads h100.json.
#[test]
fn json_fixture_reads_back() {
    let f = std::env::var_os("ARGUS_NVML_FAKE_TEST_FIXTURE").map_or_else(|| fixture("gpu/h100.json"), PathBuf::from);
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.json");
    std::fs::write(&scenario, scenario_from_fixture(&Fake::load(&f).unwrap()).to_string()).unwrap();
    in_own_process("json_fixture_reads_back", &scenario, |lib| {
        let fake = Fake::load(&f).unwrap();
        let mut nvml = Nvml::open(lib).expect("nvml over the fake library");
        // GPM readings need a second sample: the first reading has none.
        let first = nvml.devices().expect("devices");
        let expected: Vec<Device> = fake.devices.iter().map(as_nvml_reads).collect();
        let without_gpm: Vec<Device> = expected.iter().cloned().map(|d| Device { gpm: None, ..d }).collect();
        assert_eq!(first, without_gpm, "{}", f.display());
        let devices = nvml.devices().expect("devices");
        assert_eq!(devices, expected, "{}", f.display());
        let xids: Vec<(Option<u32>, Option<String>, u64)> =
            nvml.xid_events().into_iter().map(|e| (e.gpu, e.pci_bus_id, e.code)).collect();
        let want: Vec<(Option<u32>, Option<String>, u64)> =
            fake.xid_events.iter().filter(|e| e.gpu.is_some()).map(|e| (e.gpu, e.pci_bus_id.clone(), e.code)).collect();
        assert_eq!(xids, want, "{}", f.display());
    });
}

/// A fixture device as the NVML backend reads it: with MIG instances numbered by their index
/// (nvml-wrapper has no call for their instance ids).
fn as_nvml_reads(d: &Device) -> Device {
    let mut d = d.clone();
    for (i, m) in d.mig_instances.iter_mut().enumerate() {
        m.gpu_instance_id = i as u32;
        m.compute_instance_id = 0;
    }
    d
}

/// A fake-backend fixture (or a recording, which has its shape) as a scenario: each reading in the
/// unit NVML answers in. docs/format/fake-nvml-scenario.md lists the same mapping.
fn scenario_from_fixture(fake: &Fake) -> Value {
    let devices: Vec<Value> = fake
        .devices
        .iter()
        .map(|d| {
            let mut s = json!({"name": d.name, "uuid": d.uuid, "pci_bus_id": d.pci_bus_id, "serial": d.serial});
            let mut set = |k: &str, v: Value| {
                s[k] = v;
            };
            if let (Some(g), Some(m)) = (d.utilization_gpu_percent, d.utilization_memory_percent) {
                set("utilization_percent", json!({"gpu": g as u32, "memory": m as u32}));
            }
            if let (Some(t), Some(u), Some(f)) = (d.memory_total_bytes, d.memory_used_bytes, d.memory_free_bytes) {
                set("memory_bytes", json!({"total": t, "used": u, "free": f}));
            }
            let opt = |v: Option<f64>, scale: f64| v.map_or(Value::Null, |x| json!((x * scale).round() as u64));
            set("temperature_gpu_celsius", opt(d.temperature_celsius, 1.0));
            set("power_usage_milliwatts", opt(d.power_watts, 1000.0));
            set("enforced_power_limit_milliwatts", opt(d.power_limit_watts, 1000.0));
            set("total_energy_millijoules", opt(d.energy_joules, 1000.0));
            set("clocks_mhz", json!({"sm": opt(d.sm_clock_hz, 1e-6), "memory": opt(d.memory_clock_hz, 1e-6)}));
            set("clocks_event_reasons", json!(d.throttle_reasons));
            if let (Some(tx), Some(rx)) = (d.pcie_tx_bytes_per_second, d.pcie_rx_bytes_per_second) {
                set("pcie_throughput_kib_per_second", json!({"tx": tx as u64 / 1024, "rx": rx as u64 / 1024}));
            }
            set("pcie_replay_counter", json!(d.pcie_replay_total));
            set(
                "pcie_link",
                json!({"generation": d.pcie_link_generation, "generation_max": d.pcie_link_generation_max,
                       "width": d.pcie_link_width, "width_max": d.pcie_link_width_max}),
            );
            set(
                "violation_time_ns",
                json!({"power": opt(d.power_violation_seconds, 1e9), "thermal": opt(d.thermal_violation_seconds, 1e9)}),
            );
            set("fan_speeds_percent", json!(d.fan_speed_percent.map(|f| vec![f as u32]).unwrap_or_default()));
            set("performance_state", json!(d.performance_state));
            set("total_ecc_errors", json!(d.ecc));
            if let Some(r) = &d.retired_pages {
                let pages = |n: u64| (0..n).map(|i| 0x1000 * (i + 1)).collect::<Vec<u64>>();
                set(
                    "retired_pages",
                    json!({"multiple_single_bit": pages(r.single_bit), "double_bit": pages(r.double_bit), "pending": r.pending}),
                );
            }
            let mut fields = serde_json::Map::new();
            if let Some(r) = &d.remapped_rows {
                let flag = |b: bool| json!(u8::from(b));
                for (id, v) in
                    [("142", json!(r.correctable)), ("143", json!(r.uncorrectable)), ("144", flag(r.pending)), ("145", flag(r.failed))]
                {
                    fields.insert(id.into(), v);
                }
            }
            if let Some(t) = d.memory_temperature_celsius {
                fields.insert("82".into(), json!(t));
            }
            set("field_values", Value::Object(fields));
            let links: Vec<Value> = d
                .nvlinks
                .iter()
                .map(|l| {
                    let throughput = match (l.tx_bytes_total, l.rx_bytes_total) {
                        (Some(tx), Some(rx)) => json!({"data_tx": tx / 1024, "data_rx": rx / 1024}),
                        _ => Value::Null,
                    };
                    json!({"link": l.link, "active": l.active, "errors": {
                        "replay": l.replay_errors_total, "recovery": l.recovery_errors_total,
                        "crc_flit": l.crc_errors_total, "crc_data": l.crc_errors_total.map(|_| 0),
                    }, "throughput_kib": throughput})
                })
                .collect();
            set("nvlinks", json!(links));
            if let Some(on) = d.mig_enabled {
                let migs: Vec<Value> = d
                    .mig_instances
                    .iter()
                    .map(|m| {
                        let memory = match (m.memory_total_bytes, m.memory_used_bytes) {
                            (Some(t), Some(u)) => json!({"total": t, "used": u, "free": t - u}),
                            _ => Value::Null,
                        };
                        json!({"uuid": m.uuid, "name": format!("{} MIG {}", d.name, m.profile), "memory_bytes": memory})
                    })
                    .collect();
                set("mig", json!({"current": u8::from(on), "pending": u8::from(on), "devices": migs}));
            }
            let procs: Vec<Value> = d
                .processes
                .iter()
                .map(|p| json!({"pid": p.pid, "used_memory_bytes": p.used_memory_bytes, "gpu_instance_id": p.gpu_instance_id}))
                .collect();
            set("processes", json!(procs));
            let busy: Vec<Value> = d
                .process_utilization
                .iter()
                .map(|p| json!({"pid": p.pid, "sm_percent": p.sm_percent.map(|x| x.round() as u32),
                                "memory_percent": p.memory_percent.map(|x| x.round() as u32)}))
                .collect();
            set("process_utilization", json!(busy));
            if let Some(g) = &d.gpm {
                // NVML's ids (nvml.h nvmlGpmMetricId_t) and units: percent and MiB/s.
                let pct = |r: Option<f64>| r.map(|x| (x * 100.0 * 1e6).round() / 1e6);
                let mib = |b: Option<f64>| b.map(|x| x / 1048576.0);
                set(
                    "gpm_metrics",
                    json!({"2": pct(g.sm_activity_ratio), "3": pct(g.sm_occupancy_ratio), "5": pct(g.tensor_activity_ratio),
                           "10": pct(g.dram_activity_ratio), "11": pct(g.fp64_activity_ratio), "12": pct(g.fp32_activity_ratio),
                           "13": pct(g.fp16_activity_ratio), "20": mib(g.pcie_tx_bytes_per_second),
                           "21": mib(g.pcie_rx_bytes_per_second), "61": mib(g.nvlink_tx_bytes_per_second),
                           "60": mib(g.nvlink_rx_bytes_per_second)}),
                );
            }
            strip_nulls(s)
        })
        .collect();
    let xids: Vec<Value> =
        fake.xid_events.iter().filter_map(|e| e.gpu.map(|gpu| json!({"gpu": gpu, "code": e.code}))).collect();
    json!({"version": 1, "source": "converted from a fake-backend fixture by nvml_fake.rs", "devices": devices, "xid_events": xids})
}

/// A null reading is one the board lacks: the key is left out of the scenario.
fn strip_nulls(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k, strip_nulls(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(strip_nulls).collect()),
        v => v,
    }
}

// === what a board does not support, lost GPUs, hanging calls ===

#[test]
fn unsupported_readings_are_left_out_without_failing_the_collection() {
    in_own_process(
        "unsupported_readings_are_left_out_without_failing_the_collection",
        &fixture("nvml/rtx4090.json"),
        |lib| {
            let mut gpu = gpu_source(lib, "20s", "gpu/sys-workstation", "dcgm_names = true");
            collect(gpu.as_mut()).expect("first collection");
            // The second collection would have GPM readings, on a board with GPM.
            let text = collect(gpu.as_mut()).expect("collection").to_exposition();
            let names: BTreeSet<&str> = text.lines().map(metric).collect();
            for present in [
                "gpu_fan_speed_ratio",
                "gpu_power_watts",
                "gpu_energy_joules_total",
                "gpu_performance_state",
                "gpu_pcie_link_generation",
                "gpu_process_memory_used_bytes",
            ] {
                assert!(names.contains(present), "{present} missing:\n{text}");
            }
            let absent = [
                "gpu_ecc_errors_corrected_total",
                "gpu_remapped_rows_pending",
                "gpu_retired_pages_pending",
                "gpu_pcie_replays_total",
                "gpu_nvlink_active",
                "gpu_nvlink_transmit_bytes_total",
                "gpu_mig_enabled",
                "gpu_memory_temperature_celsius",
                "gpu_power_violation_seconds_total",
                "gpu_thermal_violation_seconds_total",
                "gpu_process_sm_utilization_ratio",
                "gpu_process_memory_utilization_ratio",
                "DCGM_FI_DEV_MEMORY_TEMP",
                "DCGM_FI_DEV_POWER_VIOLATION",
                // Event registration is refused: the scenario's Xid never arrives.
                "gpu_xid",
                "gpu_xid_errors_total",
            ];
            for absent in absent.iter().chain(GPM).chain(&["DCGM_FI_PROF_SM_ACTIVE"]) {
                assert!(!names.contains(absent), "{absent} present:\n{text}");
            }
            assert!(!text.contains("serial="), "a GeForce has no serial number:\n{text}");
            assert!(text.contains(r#"gpu_fan_speed_ratio{device="nvidia0", gpu="0", model="NVIDIA GeForce RTX 4090", uuid="GPU-6f8a1c2d-3e4b-4c5d-8e9f-0a1b2c3d4e5f"} 0.37"#), "{text}");
            // The bus's one GPU (its HDMI audio function is not one) is the one NVML lists.
            assert!(text.contains(r#"gpu_present{device="nvidia0", gpu="0", model="NVIDIA GeForce RTX 4090", uuid="GPU-6f8a1c2d-3e4b-4c5d-8e9f-0a1b2c3d4e5f"} 1"#), "{text}");
            assert_counts(&text, 1, 1);
        },
    );
}

#[test]
fn a_lost_gpu_is_left_out_and_the_others_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = with_failures(
        &dir,
        json!([
            {"function": "*", "gpu": 2, "return": "GPU_IS_LOST"},
            {"function": "nvmlDeviceGetPowerUsage", "gpu": 5, "return": "GPU_IS_LOST"},
        ]),
    );
    in_own_process("a_lost_gpu_is_left_out_and_the_others_are_read", &scenario, |lib| {
        let mut gpu = gpu_source(lib, "20s", "gpu/sys", "");
        let text = collect(gpu.as_mut()).expect("one lost GPU does not fail the collection").to_exposition();
        let gpus: BTreeSet<&str> = text
            .lines()
            .filter(|l| metric(l) == "gpu_processes")
            .filter_map(|l| l.split(r#"gpu=""#).nth(1)?.split('"').next())
            .collect();
        assert_eq!(gpus, BTreeSet::from(["0", "1", "3", "4", "5", "6", "7"]));
        let powered: BTreeSet<&str> = text
            .lines()
            .filter(|l| metric(l) == "gpu_power_watts")
            .filter_map(|l| l.split(r#"gpu=""#).nth(1)?.split('"').next())
            .collect();
        assert_eq!(powered, BTreeSet::from(["0", "1", "3", "4", "6", "7"]));
        // Lost since the start: the bus has it, NVML never named it.
        assert!(text.contains("gpu_present{pci_bus_id=\"0000:3a:00.0\"} 0\n"), "{text}");
        assert_counts(&text, 8, 7);
    });
}

/// A GPU falling off the bus during the run: NVML stops listing it, and `gpu_present` turns 0 under the
/// labels it had, so an alert on `gpu_present == 0` fires for the board by its serial number.
#[test]
fn a_gpu_that_falls_off_the_bus_is_not_present_under_its_last_labels() {
    let dir = tempfile::tempdir().unwrap();
    let lost_after = Duration::from_secs(3);
    let scenario = with_failures(
        &dir,
        json!([{"function": "*", "gpu": 3, "return": "GPU_IS_LOST", "after_ms": lost_after.as_millis() as u64}]),
    );
    in_own_process("a_gpu_that_falls_off_the_bus_is_not_present_under_its_last_labels", &scenario, |lib| {
        let before_start = Instant::now();
        let mut gpu = gpu_source(lib, "20s", "gpu/sys", "");
        let started = Instant::now();
        let labels = r#"device="nvidia3", gpu="3", model="NVIDIA H100 80GB HBM3", serial="1654922010503", uuid="GPU-1d3a5c8f-2e4b-4d6c-8f7a-8b9c0d1e2f30""#;

        let text = collect(gpu.as_mut()).expect("collection").to_exposition();
        assert!(before_start.elapsed() < lost_after, "the first collection came too late to see GPU 3");
        assert!(text.contains(&format!("gpu_present{{{labels}}} 1\n")), "{text}");

        std::thread::sleep(
            (started + lost_after + Duration::from_millis(100)).saturating_duration_since(Instant::now()),
        );
        let text = collect(gpu.as_mut()).expect("a lost GPU does not fail the collection").to_exposition();
        assert!(text.contains(&format!("gpu_present{{{labels}}} 0\n")), "{text}");
        assert!(!text.contains(r#"gpu_power_watts{device="nvidia3""#), "{text}");
        assert_counts(&text, 8, 7);
    });
}

/// One reading a driver refuses (the whole GPM call on one GPU, the serial number on another) leaves
/// out that reading alone.
#[test]
fn a_refused_reading_leaves_out_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = with_failures(
        &dir,
        json!([
            {"function": "nvmlGpmMetricsGet", "gpu": 4, "return": "UNKNOWN"},
            {"function": "nvmlDeviceGetSerial", "gpu": 6, "return": "NOT_SUPPORTED"},
            {"function": "nvmlDeviceGetViolationStatus", "gpu": 7, "return": "NO_PERMISSION"},
        ]),
    );
    in_own_process("a_refused_reading_leaves_out_only_itself", &scenario, |lib| {
        let mut gpu = gpu_source(lib, "20s", "gpu/sys", "");
        collect(gpu.as_mut()).expect("first collection");
        let text = collect(gpu.as_mut()).expect("refused readings do not fail the collection").to_exposition();
        let gpus_with = |name: &str| -> BTreeSet<String> {
            text.lines()
                .filter(|l| metric(l) == name)
                .filter_map(|l| Some(l.split(r#"gpu=""#).nth(1)?.split('"').next()?.to_string()))
                .collect()
        };
        let all_but = |gpu: &str| -> BTreeSet<String> { (0..8).map(|i| i.to_string()).filter(|i| i != gpu).collect() };
        assert_eq!(gpus_with("gpu_sm_activity_ratio"), all_but("4"));
        assert_eq!(gpus_with("gpu_power_violation_seconds_total"), all_but("7"));
        assert_eq!(gpus_with("gpu_power_watts").len(), 8);
        assert!(text.contains(r#"gpu_power_watts{device="nvidia6", gpu="6", model="NVIDIA H100 80GB HBM3", uuid="GPU-4a6d8fbc-5b7e-4a9f-9cad-1e2f30415263"}"#), "{text}");
    });
}

/// Per-process utilization is attributed to the process's container, pod or job, summed per owner,
/// and each sample is read once: the backend asks for the samples taken since the newest it has seen.
#[test]
fn process_utilization_is_attributed_per_owner_and_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(fixture("nvml/h100x8.json")).unwrap()).unwrap();
    // GPU 0's samples were all taken before the collector started; the others' are taken at every call.
    for p in s["devices"][0]["process_utilization"].as_array_mut().unwrap() {
        p["timestamp_us"] = json!(1_700_000_000_000_000u64);
    }
    // GPU 2 is time-sliced between a Slurm job and an unowned process.
    s["devices"][2]["process_utilization"] = json!([
        {"pid": 5120, "sm_percent": 55, "memory_percent": 30},
        {"pid": 7002, "sm_percent": 35, "memory_percent": 20}
    ]);
    let scenario = dir.path().join("scenario.json");
    std::fs::write(&scenario, s.to_string()).unwrap();
    in_own_process("process_utilization_is_attributed_per_owner_and_read_once", &scenario, |lib| {
        let mut gpu = gpu_source(lib, "20s", "gpu/sys", "");
        let utilization = |text: &str, gpu: &str| -> String {
            let label = format!(r#"gpu="{gpu}""#);
            let lines: Vec<&str> = text
                .lines()
                .filter(|l| l.starts_with("gpu_process_") && l.contains("utilization") && l.contains(&label))
                .collect();
            lines.join("\n")
        };
        let first = collect(gpu.as_mut()).expect("collection").to_exposition();
        expect_test::expect![[r#"
            gpu_process_memory_utilization_ratio{container_id="4c1bd5a1b5f3a7cbd7e2e9c33e2a0a7b0f6d3f6a2e1d5c4b3a29181716151413", device="nvidia0", gpu="0", model="NVIDIA H100 80GB HBM3", pod_uid="0f3c2a1e-8b7d-4c6e-9f1a-2b3c4d5e6f70", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0.49
            gpu_process_memory_utilization_ratio{device="nvidia0", gpu="0", model="NVIDIA H100 80GB HBM3", pid="6001", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0.01
            gpu_process_sm_utilization_ratio{container_id="4c1bd5a1b5f3a7cbd7e2e9c33e2a0a7b0f6d3f6a2e1d5c4b3a29181716151413", device="nvidia0", gpu="0", model="NVIDIA H100 80GB HBM3", pod_uid="0f3c2a1e-8b7d-4c6e-9f1a-2b3c4d5e6f70", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0.89
            gpu_process_sm_utilization_ratio{device="nvidia0", gpu="0", model="NVIDIA H100 80GB HBM3", pid="6001", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0.03"#]]
        .assert_eq(&utilization(&first, "0"));
        expect_test::expect![[r#"
            gpu_process_memory_utilization_ratio{device="nvidia2", gpu="2", job="4242", model="NVIDIA H100 80GB HBM3", serial="1654922010502", uuid="GPU-0c2f4b7e-1d3a-4c5b-9e6f-7a8b9c0d1e2f"} 0.3
            gpu_process_memory_utilization_ratio{device="nvidia2", gpu="2", model="NVIDIA H100 80GB HBM3", pid="7002", serial="1654922010502", uuid="GPU-0c2f4b7e-1d3a-4c5b-9e6f-7a8b9c0d1e2f"} 0.2
            gpu_process_sm_utilization_ratio{device="nvidia2", gpu="2", job="4242", model="NVIDIA H100 80GB HBM3", serial="1654922010502", uuid="GPU-0c2f4b7e-1d3a-4c5b-9e6f-7a8b9c0d1e2f"} 0.55
            gpu_process_sm_utilization_ratio{device="nvidia2", gpu="2", model="NVIDIA H100 80GB HBM3", pid="7002", serial="1654922010502", uuid="GPU-0c2f4b7e-1d3a-4c5b-9e6f-7a8b9c0d1e2f"} 0.35"#]]
        .assert_eq(&utilization(&first, "2"));

        let second = collect(gpu.as_mut()).expect("collection").to_exposition();
        assert_eq!(utilization(&second, "0"), "", "GPU 0's samples were read already");
        assert_eq!(utilization(&second, "2"), utilization(&first, "2"), "new samples every call on GPU 2");
        // The memory the processes hold is read every time.
        assert!(
            second.contains(
                r#"gpu_process_memory_used_bytes{device="nvidia0", gpu="0", model="NVIDIA H100 80GB HBM3", pid="6001""#
            ),
            "{second}"
        );
    });
}

/// Nothing in the backend bounds an NVML call: a hung one holds `devices()` for as long as it hangs.
/// The gpu source waits for the backend only until shortly before its timeout, reports the collection
/// failed, and reads again once the call has come back.
#[test]
fn a_hanging_call_fails_the_collection_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let scenario =
        with_failures(&dir, json!([{"function": "nvmlDeviceGetPowerUsage", "gpu": 5, "hang_ms": 3000, "times": 2}]));
    in_own_process("a_hanging_call_fails_the_collection_at_its_timeout", &scenario, |lib| {
        let mut nvml = Nvml::open(lib).unwrap();
        let started = Instant::now();
        let devices = nvml.devices().expect("devices");
        assert!(started.elapsed() >= Duration::from_secs(3), "{:?}", started.elapsed());
        assert_eq!(devices.len(), 8);
        assert_eq!(devices[5].power_watts, Some(633.0));

        let mut gpu = gpu_source(lib, "1s", "gpu/sys", "");
        let started = Instant::now();
        let r = collect(gpu.as_mut());
        let waited = started.elapsed();
        assert!(matches!(r, Err(SourceError::Backend(_))), "{r:?}");
        assert!(waited < Duration::from_millis(1500), "{waited:?}");
        std::thread::sleep(Duration::from_millis(3200) - waited);
        let text = collect(gpu.as_mut()).expect("collection after the call came back").to_exposition();
        assert_eq!(text.lines().filter(|l| metric(l) == "gpu_power_watts").count(), 8, "{text}");
    });
}

// === the nvml_library setting ===

#[test]
fn nvml_library_must_name_a_file_and_only_with_the_nvml_backend() {
    let check = |gpu: &str| match Config::parse(&format!("[collector]\n[collector.gpu]\n{gpu}\n"), "argus.toml")
        .and_then(|c| c.validate("argus.toml"))
    {
        Ok(v) => format!("{:?}", v.gpu.map(|g| g.settings.backend)),
        Err(e) => e.to_string(),
    };
    let lib = fixture("nvml/h100x8.json");
    assert_eq!(check(&format!("nvml_library = {:?}", lib)), format!("Some(NvmlLibrary({lib:?}))"));
    assert_eq!(check(""), "Some(Nvml)");
    assert_eq!(
        check(r#"nvml_library = "/no/such/libnvidia-ml.so.1""#),
        "argus.toml: collector.gpu.nvml_library: /no/such/libnvidia-ml.so.1: No such file or directory (os error 2)"
    );
    assert_eq!(
        check(&format!("nvml_library = {:?}", fixture("nvml"))),
        format!("argus.toml: collector.gpu.nvml_library: {}: not a file", fixture("nvml").display())
    );
    assert_eq!(
        check(&format!("backend = \"fake\"\nfake_fixture = \"x.json\"\nnvml_library = {lib:?}")),
        r#"argus.toml: collector.gpu.nvml_library: only read by backend = "nvml""#
    );
}

// === helpers ===

/// The gpu source as the agent builds it from a config naming the fake library, on a node whose
/// `/sys` is the fixture tree `sysfs` (under tests/fixtures), with `gpu` added to `[collector.gpu]`.
fn gpu_source(lib: &Path, timeout: &str, sysfs: &str, gpu: &str) -> Box<dyn Source> {
    let toml = format!(
        "[collector]\nprocfs_root = {:?}\nsysfs_root = {:?}\n[collector.labels]\nhost = \"node-7\"\n\
         [collector.gpu]\nnvml_library = {lib:?}\nkernel_log = \"\"\ntimeout = {timeout:?}\n{gpu}\n\
         [collector.host]\nenabled = false\n[collector.disk]\nenabled = false\n\
         [collector.net]\nenabled = false\n[collector.events]\nenabled = false\n",
        fixture("gpu/proc"),
        fixture(sysfs),
    );
    let valid = Config::parse(&toml, "test.toml").and_then(|c| c.validate("test.toml")).expect("config");
    assert!(matches!(&valid.gpu.as_ref().unwrap().settings.backend, GpuBackendKind::NvmlLibrary(p) if p == lib));
    let mut sources = source::build(&valid);
    assert_eq!(sources.len(), 1);
    sources.remove(0).source
}

fn collect(source: &mut dyn Source) -> Result<Batch, SourceError> {
    let mut b = Batch::new();
    source.collect(10_000, &mut b).map(|()| b)
}

/// Checks the node's `gpu_expected_count` and `gpu_found_count` in exposition `text`.
fn assert_counts(text: &str, expected: u32, found: u32) {
    assert!(text.contains(&format!("\ngpu_expected_count{{}} {expected}\n")), "expected {expected}:\n{text}");
    assert!(text.contains(&format!("\ngpu_found_count{{}} {found}\n")), "found {found}:\n{text}");
}

/// The metric name of an exposition line.
fn metric(line: &str) -> &str {
    line.split(['{', ' ']).next().unwrap_or_default()
}

/// The 8×H100 scenario with `failures` added, written into `dir`.
fn with_failures(dir: &tempfile::TempDir, failures: Value) -> PathBuf {
    let mut s: Value = serde_json::from_str(&std::fs::read_to_string(fixture("nvml/h100x8.json")).unwrap()).unwrap();
    s["failures"] = failures;
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, s.to_string()).unwrap();
    path
}

/// Runs `check` with the fake library's path in a child process whose NVML reads `scenario`; `test` is
/// the calling test's name, which the child runs alone.
fn in_own_process(test: &str, scenario: &Path, check: impl FnOnce(&Path)) {
    if let Some(lib) = std::env::var_os(CHILD) {
        check(Path::new(&lib));
        return;
    }
    let out = run_child(test, scenario, &[]);
    let test = in_this_binary(test);
    assert!(out.contains(&format!("test {test} ... ok")), "{test} did not run in its own process:\n{out}");
}

/// The name the test harness knows a test of this module by: its path below the test crate.
fn in_this_binary(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_crate, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    }
}

fn run_child(test: &str, scenario: &Path, env: &[(&str, &std::ffi::OsStr)]) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([&in_this_binary(test), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, library())
        .env(SCENARIO, scenario)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test} failed in its own process:\n{text}");
    text
}

/// The fake library, built (or found up to date) by cargo in this test binary's target directory.
fn library() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        // <target>/<profile>/deps/nvml_fake-<hash>
        let profile = exe.parent().and_then(Path::parent).expect("test binary in <target>/<profile>/deps");
        let target = profile.parent().expect("target directory");
        let lib = profile.join("libargus_fake_nvml.so");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "--quiet", "-p", "argus-fake-nvml", "--target-dir"]).arg(target);
        if profile.file_name().is_some_and(|p| p == "release") {
            build.arg("--release");
        }
        match build.current_dir(env!("CARGO_MANIFEST_DIR")).status() {
            Ok(s) if s.success() => {}
            other if lib.exists() => eprintln!("building argus-fake-nvml: {other:?}; using {}", lib.display()),
            other => panic!("building argus-fake-nvml: {other:?}"),
        }
        assert!(lib.exists(), "{} missing after the build", lib.display());
        lib
    })
    .clone()
}
