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

/// What the NVML backend does not read yet (see the note at the top of nvml.rs), so a JSON fixture's
/// figures for them have no NVML counterpart.
const NOT_READ: &[&str] = &[
    "gpu_memory_temperature_celsius",
    "gpu_nvlink_transmit_bytes_total",
    "gpu_nvlink_receive_bytes_total",
    "gpu_sm_activity_ratio",
    "gpu_sm_occupancy_ratio",
    "gpu_tensor_activity_ratio",
    "gpu_dram_activity_ratio",
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
            let mut gpu = gpu_source(lib, "20s");
            let first = collect(gpu.as_mut()).expect("collection");
            let text = first.to_exposition();

            // GPUs 0 and 1 are the JSON fixture's: the same series as its golden output, less what NVML
            // is not asked for. Xid events are compared apart from their text.
            let golden =
                std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/gpu-h100.txt"))
                    .expect("golden gpu-h100.txt");
            let keep = |l: &&str| !NOT_READ.contains(&metric(l)) && metric(l) != "gpu_xid";
            let expected: Vec<&str> = golden.lines().filter(keep).collect();
            let actual: Vec<&str> =
                text.lines().filter(|l| l.contains(r#"gpu="0""#) || l.contains(r#"gpu="1""#)).filter(keep).collect();
            assert_eq!(actual, expected, "gpus 0 and 1 differ from the golden output of the JSON backend");

            // The Xids queued in the scenario arrive through NVML's event set (no kernel log configured).
            let xids: Vec<&str> = text.lines().filter(|l| metric(l) == "gpu_xid").collect();
            assert_eq!(xids.len(), 2, "{xids:#?}");
            assert!(
                xids[0].contains(r#"code="48""#)
                    && xids[0].contains(r#"gpu="1""#)
                    && xids[0].ends_with("\"NVML: Xid 48\"")
            );
            assert!(
                xids[1].contains(r#"code="94""#)
                    && xids[1].contains(r#"gpu="1""#)
                    && xids[1].ends_with("\"NVML: Xid 94\"")
            );

            // All eight GPUs, in index order with the scenario's UUIDs, each with the same readings as GPU 0.
            let scenario: Value =
                serde_json::from_str(&std::fs::read_to_string(fixture("nvml/h100x8.json")).unwrap()).unwrap();
            let names_of = |gpu: usize| -> BTreeSet<&str> {
                let label = format!(r#"gpu="{gpu}""#);
                // Xids and per-process memory depend on what happens on the GPU, not on what it reads.
                text.lines()
                    .filter(|l| l.contains(&label) && !l.starts_with("gpu_xid") && !l.starts_with("gpu_process_memory"))
                    .map(metric)
                    .collect()
            };
            let gpu0 = names_of(0);
            for (i, d) in scenario["devices"].as_array().unwrap().iter().enumerate() {
                let uuid = d["uuid"].as_str().unwrap();
                let line = format!(
                    r#"gpu_power_watts{{device="nvidia{i}", gpu="{i}", model="NVIDIA H100 80GB HBM3", uuid="{uuid}"}} "#
                );
                let watts = d["power_usage_milliwatts"].as_f64().unwrap() / 1000.0;
                assert!(text.contains(&format!("{line}{watts}\n")), "gpu {i}: no {line}{watts}");
                assert_eq!(names_of(i), gpu0, "gpu {i} reads other fields than gpu 0");
            }

            // Each Xid is delivered once: the counters stay, no new events.
            let second = collect(gpu.as_mut()).expect("second collection");
            let text = second.to_exposition();
            assert!(!text.contains("gpu_xid{"), "{text}");
            assert!(text.contains(
                r#"gpu_xid_errors_total{code="48", gpu="1", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 2"#
            ));
        },
    );
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
        assert!(out.contains("test json_fixture_reads_back ... ok"), "{}: {out}", f.display());
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
        let devices = nvml.devices().expect("devices");
        let expected: Vec<Device> = fake.devices.iter().map(as_nvml_reads).collect();
        assert_eq!(devices, expected, "{}", f.display());
        let xids: Vec<(Option<u32>, Option<String>, u64)> =
            nvml.xid_events().into_iter().map(|e| (e.gpu, e.pci_bus_id, e.code)).collect();
        let want: Vec<(Option<u32>, Option<String>, u64)> =
            fake.xid_events.iter().filter(|e| e.gpu.is_some()).map(|e| (e.gpu, e.pci_bus_id.clone(), e.code)).collect();
        assert_eq!(xids, want, "{}", f.display());
    });
}

/// A fixture device as the NVML backend reads it: without the readings it does not ask for, and with
/// MIG instances numbered by their index (nvml-wrapper has no call for their instance ids).
fn as_nvml_reads(d: &Device) -> Device {
    let mut d = d.clone();
    d.memory_temperature_celsius = None;
    d.gpm = None;
    for l in &mut d.nvlinks {
        l.tx_bytes_total = None;
        l.rx_bytes_total = None;
    }
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
            let mut s = json!({"name": d.name, "uuid": d.uuid, "pci_bus_id": d.pci_bus_id});
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
            if let Some(r) = &d.remapped_rows {
                set(
                    "field_values",
                    json!({"142": r.correctable, "143": r.uncorrectable, "144": u8::from(r.pending), "145": u8::from(r.failed)}),
                );
            }
            let links: Vec<Value> = d
                .nvlinks
                .iter()
                .map(|l| {
                    json!({"link": l.link, "active": l.active, "errors": {
                        "replay": l.replay_errors_total, "recovery": l.recovery_errors_total,
                        "crc_flit": l.crc_errors_total, "crc_data": l.crc_errors_total.map(|_| 0),
                    }})
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
            let mut gpu = gpu_source(lib, "20s");
            let text = collect(gpu.as_mut()).expect("collection").to_exposition();
            let names: BTreeSet<&str> = text.lines().map(metric).collect();
            for present in
                ["gpu_fan_speed_ratio", "gpu_power_watts", "gpu_energy_joules_total", "gpu_performance_state"]
            {
                assert!(names.contains(present), "{present} missing:\n{text}");
            }
            for absent in [
                "gpu_ecc_errors_corrected_total",
                "gpu_remapped_rows_pending",
                "gpu_retired_pages_pending",
                "gpu_pcie_replays_total",
                "gpu_nvlink_active",
                "gpu_mig_enabled",
                // Event registration is refused: the scenario's Xid never arrives.
                "gpu_xid",
                "gpu_xid_errors_total",
            ] {
                assert!(!names.contains(absent), "{absent} present:\n{text}");
            }
            assert!(text.contains(r#"gpu_fan_speed_ratio{device="nvidia0", gpu="0", model="NVIDIA GeForce RTX 4090", uuid="GPU-6f8a1c2d-3e4b-4c5d-8e9f-0a1b2c3d4e5f"} 0.37"#), "{text}");
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
        let mut gpu = gpu_source(lib, "20s");
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

        let mut gpu = gpu_source(lib, "1s");
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

/// The gpu source as the agent builds it from a config naming the fake library.
fn gpu_source(lib: &Path, timeout: &str) -> Box<dyn Source> {
    let toml = format!(
        "[collector]\nprocfs_root = {:?}\n[collector.labels]\nhost = \"node-7\"\n\
         [collector.gpu]\nnvml_library = {lib:?}\nkernel_log = \"\"\ntimeout = {timeout:?}\n\
         [collector.host]\nenabled = false\n[collector.disk]\nenabled = false\n\
         [collector.net]\nenabled = false\n[collector.events]\nenabled = false\n",
        fixture("gpu/proc"),
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
    assert!(out.contains(&format!("test {test} ... ok")), "{test} did not run in its own process:\n{out}");
}

fn run_child(test: &str, scenario: &Path, env: &[(&str, &std::ffi::OsStr)]) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
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
