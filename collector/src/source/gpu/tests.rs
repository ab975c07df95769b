use super::*;
use crate::source::golden;
use std::io::Write;
use std::sync::mpsc;
use std::time::Instant;

fn gpu(fixture: &str, dcgm_names: bool) -> Gpu {
    let backend = fake::Fake::load(&golden::fixture(fixture)).map(|b| Box::new(b) as Box<dyn GpuBackend>);
    let timeout = Duration::from_secs(10);
    Gpu::new(
        backend.map_err(|e| e.to_string()),
        timeout,
        &golden::fixture("gpu/proc"),
        dcgm_names,
        "node-7".into(),
        None,
    )
}

fn h100() -> fake::Fake {
    fake::Fake::load(&golden::fixture("gpu/h100.json")).unwrap()
}

/// An empty kernel log in a temporary directory, and a way to append to it.
struct Log {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl Log {
    fn new() -> Log {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kern.log");
        std::fs::write(&path, "").unwrap();
        Log { _dir: dir, path }
    }

    fn open(&self) -> Option<kmsg::KernelLog> {
        kmsg::KernelLog::open(&self.path)
    }

    fn append(&self, text: &str) {
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.path).unwrap();
        f.write_all(text.as_bytes()).unwrap();
    }
}

const XID_79: &str = "[ 88.1] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus.\n";

/// The exposition lines of the Xid and SXid series.
fn xid_lines(b: &Batch) -> String {
    let text = b.to_exposition();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("gpu_xid") || l.starts_with("gpu_nvswitch")).collect();
    lines.join("\n") + "\n"
}

/// A backend whose first `devices()` succeeds and whose later ones fail: a GPU falling off the bus.
struct FailsAfterFirst {
    inner: fake::Fake,
    calls: u32,
}

impl GpuBackend for FailsAfterFirst {
    fn devices(&mut self) -> Result<Vec<Device>, BackendError> {
        self.calls += 1;
        if self.calls > 1 {
            return Err(BackendError::Failed("gpu 0: Unknown Error".into()));
        }
        self.inner.devices()
    }

    fn xid_events(&mut self) -> Vec<XidEvent> {
        Vec::new()
    }
}

/// A backend whose `devices()` blocks until the test lets it go (drops the sender): a hung NVML call.
struct Hangs {
    inner: fake::Fake,
    release: mpsc::Receiver<()>,
}

impl GpuBackend for Hangs {
    fn devices(&mut self) -> Result<Vec<Device>, BackendError> {
        let _ = self.release.recv();
        self.inner.devices()
    }

    fn xid_events(&mut self) -> Vec<XidEvent> {
        Vec::new()
    }
}

#[test]
fn golden_gpu_h100() {
    let mut g = gpu("gpu/h100.json", false);
    let mut first = Batch::new();
    g.collect(10_000, &mut first).unwrap();
    golden::check("gpu-h100", &first);
    golden::check_text("gpu-h100", "lp", &first.to_line_protocol());

    // The Xids were served once: the counters stay, no new events.
    let mut second = Batch::new();
    g.collect(20_000, &mut second).unwrap();
    let text = second.to_exposition();
    assert!(
        text.contains(
            r#"gpu_xid_errors_total{code="48", gpu="1", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 2"#
        ),
        "{text}"
    );
    assert!(!text.contains("gpu_xid{"), "{text}");
}

#[test]
fn golden_gpu_a100_mig_with_dcgm_names() {
    let mut g = gpu("gpu/a100-mig.json", true);
    let mut b = Batch::new();
    g.collect(10_000, &mut b).unwrap();
    golden::check("gpu-a100-mig-dcgm", &b);
}

#[test]
fn no_nvidia_library_is_unavailable_every_time_and_writes_nothing() {
    let mut g = Gpu::new(
        Err("no NVIDIA management library".into()),
        Duration::from_secs(1),
        Path::new("/proc"),
        false,
        String::new(),
        None,
    );
    let mut b = Batch::new();
    for _ in 0..2 {
        assert!(matches!(g.collect(1, &mut b), Err(SourceError::Unavailable(_))));
    }
    assert!(b.is_empty());
}

#[test]
fn kernel_log_xids_map_to_gpus_by_pci_address_and_replace_nvml_events() {
    let log = Log::new();
    let mut g = Gpu::for_tests(Box::new(h100()), &golden::fixture("gpu/proc"), false).with_kernel_log(&log.path);
    log.append(
        "[ 88.1] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus.\n\
         [ 88.2] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus.\n\
         [ 90.0] NVRM: Xid (PCI:0000:99:00): 13, Graphics Exception on a GPU we do not see\n",
    );
    let mut b = Batch::new();
    g.collect(5_000, &mut b).unwrap();
    expect_test::expect![[r#"
        gpu_xid_errors_total{code="13", pci_bus_id="0000:99:00"} 0
        gpu_xid_errors_total{code="13", pci_bus_id="0000:99:00"} 1
        gpu_xid_errors_total{code="79", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0
        gpu_xid_errors_total{code="79", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 2
        gpu_xid{code="13", pci_bus_id="0000:99:00"} "[ 90.0] NVRM: Xid (PCI:0000:99:00): 13, Graphics Exception on a GPU we do not see"
        gpu_xid{code="79", count="2", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} "[ 88.1] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus."
    "#]]
    .assert_eq(&xid_lines(&b));
}

#[test]
fn without_nvml_the_kernel_log_is_read_where_the_driver_is_loaded() {
    let log = Log::new();
    let procfs = tempfile::tempdir().unwrap();
    let settings = |kernel_log: &Path| GpuSettings {
        backend: GpuBackendKind::Fake(procfs.path().join("no-such-fixture.json")),
        dcgm_names: false,
        kernel_log: Some(kernel_log.to_path_buf()),
        sysfs_root: procfs.path().join("sys"),
        expected_gpus: None,
        dcgm_exporter_url: None,
    };
    let timeout = Duration::from_secs(1);

    // No NVIDIA driver: a machine without GPUs, where the source stops as before.
    let mut g = Gpu::build(&settings(&log.path), timeout, procfs.path(), &BTreeMap::new(), None);
    log.append(XID_79);
    let mut b = Batch::new();
    assert!(matches!(g.collect(1_000, &mut b), Err(SourceError::Unavailable(_))));
    assert!(b.is_empty());

    // The driver is loaded but NVML cannot start (a library of another version): Xids still flow, and
    // every collection reports the failure without stopping the source.
    std::fs::create_dir_all(procfs.path().join("driver/nvidia")).unwrap();
    let mut g = Gpu::build(&settings(&log.path), timeout, procfs.path(), &BTreeMap::new(), None);
    log.append(XID_79);
    let mut b = Batch::new();
    let err = g.collect(2_000, &mut b).unwrap_err();
    assert!(matches!(err, SourceError::Backend(_)), "{err:?}");
    expect_test::expect![[r#"
        gpu_xid_errors_total{code="79", pci_bus_id="0000:18:00"} 0
        gpu_xid_errors_total{code="79", pci_bus_id="0000:18:00"} 1
        gpu_xid{code="79", pci_bus_id="0000:18:00"} "[ 88.1] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus."
    "#]]
    .assert_eq(&xid_lines(&b));
    log.append(XID_79);
    let mut b = Batch::new();
    assert!(matches!(g.collect(3_000, &mut b), Err(SourceError::Backend(_))));
    assert!(xid_lines(&b).contains(r#"gpu_xid_errors_total{code="79", pci_bus_id="0000:18:00"} 2"#), "{b:?}");
}

#[test]
fn xids_keep_their_gpu_when_devices_fail() {
    let log = Log::new();
    let backend = FailsAfterFirst { inner: h100(), calls: 0 };
    let mut g = Gpu::for_tests(Box::new(backend), &golden::fixture("gpu/proc"), false).with_kernel_log(&log.path);
    g.collect(1_000, &mut Batch::new()).unwrap();
    log.append(XID_79);
    let mut b = Batch::new();
    let err = g.collect(2_000, &mut b).unwrap_err();
    expect_test::expect!["gpu 0: Unknown Error"].assert_eq(&err.to_string());
    assert!(!b.to_exposition().contains("gpu_power_watts"), "no device readings on a failed collection");
    expect_test::expect![[r#"
        gpu_xid_errors_total{code="79", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0
        gpu_xid_errors_total{code="79", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 1
        gpu_xid{code="79", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} "[ 88.1] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus."
    "#]]
    .assert_eq(&xid_lines(&b));
}

#[test]
fn a_hung_nvml_call_never_holds_back_xids() {
    let log = Log::new();
    let (release, hold) = mpsc::channel();
    let timeout = Duration::from_secs(1);
    let backend: Box<dyn GpuBackend> = Box::new(Hangs { inner: h100(), release: hold });
    let mut g = Gpu::new(Ok(backend), timeout, &golden::fixture("gpu/proc"), false, String::new(), log.open());

    // The call hangs: the collection gives up on it before the source's timeout, with the Xids.
    log.append(XID_79);
    let started = Instant::now();
    let mut b = Batch::new();
    let err = g.collect(1_000, &mut b).unwrap_err();
    let took = started.elapsed();
    assert!(took < timeout, "took {took:?}, past the timeout");
    assert!(err.to_string().starts_with("gpu backend call has not returned after 0."), "{err}");
    assert!(xid_lines(&b).contains(r#"gpu_xid{code="79", pci_bus_id="0000:18:00"}"#), "{b:?}");

    // Still hung: the next collection does not wait for it again, and its Xids are written.
    log.append(XID_79);
    let started = Instant::now();
    let mut b = Batch::new();
    assert!(g.collect(2_000, &mut b).is_err());
    assert!(started.elapsed() < timeout / 2, "waited {:?} for a call already given up on", started.elapsed());
    assert!(xid_lines(&b).contains(r#"gpu_xid_errors_total{code="79", pci_bus_id="0000:18:00"} 2"#), "{b:?}");

    // The call returns: devices are read again.
    drop(release);
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut b = Batch::new();
    while g.collect(3_000, &mut b).is_err() {
        assert!(Instant::now() < deadline, "the backend never came back");
        std::thread::sleep(Duration::from_millis(20));
        b = Batch::new();
    }
    assert!(b.to_exposition().contains("gpu_power_watts{"), "{b:?}");
}

#[test]
fn a_burst_of_one_xid_is_one_event_with_its_count() {
    let log = Log::new();
    let mut g = Gpu::for_tests(Box::new(h100()), &golden::fixture("gpu/proc"), false).with_kernel_log(&log.path);
    let storm: String = (0..5000)
        .map(|i| format!("[{i}.0] NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception: ESR 0x405840=0x{i:x}\n"))
        .collect();
    log.append(&storm);
    log.append("[9000.0] NVRM: Xid (PCI:0000:2a:00): 31, Ch 00000010, intr 00000000. MMU Fault\n");
    let mut b = Batch::new();
    g.collect(1_000, &mut b).unwrap();
    expect_test::expect![[r#"
        gpu_xid_errors_total{code="13", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0
        gpu_xid_errors_total{code="13", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 5000
        gpu_xid_errors_total{code="31", gpu="1", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0
        gpu_xid_errors_total{code="31", gpu="1", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 1
        gpu_xid{code="13", count="5000", gpu="0", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} "[0.0] NVRM: Xid (PCI:0000:18:00): 13, Graphics Exception: ESR 0x405840=0x0"
        gpu_xid{code="31", gpu="1", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} "[9000.0] NVRM: Xid (PCI:0000:2a:00): 31, Ch 00000010, intr 00000000. MMU Fault"
    "#]]
    .assert_eq(&xid_lines(&b));

    // The next burst is counted on top, in an event of its own.
    log.append(&storm[..storm.len() / 2]);
    let mut b = Batch::new();
    g.collect(2_000, &mut b).unwrap();
    let lines = xid_lines(&b);
    assert!(lines.contains(r#"gpu_xid{code="13", count="#), "{lines}");
    assert_eq!(lines.lines().filter(|l| l.starts_with("gpu_xid{")).count(), 1, "{lines}");
    let total = lines.lines().find(|l| l.starts_with(r#"gpu_xid_errors_total{code="13""#)).unwrap();
    let n: u64 = total.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n > 5000 && n < 10_000, "{total}");
}

#[test]
fn sxids_are_counted_by_nvswitch_code_and_severity() {
    let log = Log::new();
    let mut g = Gpu::for_tests(Box::new(h100()), &golden::fixture("gpu/proc"), false).with_kernel_log(&log.path);
    log.append(
        "[4021.1] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)\n\
         [4021.1] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Severity 0 Engine instance 32 Sub-engine instance 00\n\
         [4021.1] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Data {0x000001c0, 0x00bd5c8a, 0x00000500}\n\
         [4022.7] nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Fatal, Link 10 LTSSM Fault Up\n\
         [4022.7] nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Severity 1 Engine instance 10 Sub-engine instance 00\n\
         [4022.9] nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Fatal, Link 11 LTSSM Fault Up\n",
    );
    let mut b = Batch::new();
    g.collect(1_000, &mut b).unwrap();
    expect_test::expect![[r#"
        gpu_nvswitch_sxid_errors_total{code="12028", nvswitch="0000:05:00.0", severity="non_fatal"} 0
        gpu_nvswitch_sxid_errors_total{code="12028", nvswitch="0000:05:00.0", severity="non_fatal"} 1
        gpu_nvswitch_sxid_errors_total{code="20034", nvswitch="0000:86:00.0", severity="fatal"} 0
        gpu_nvswitch_sxid_errors_total{code="20034", nvswitch="0000:86:00.0", severity="fatal"} 2
        gpu_nvswitch_sxid{code="12028", nvswitch="0000:05:00.0", severity="non_fatal"} "[4021.1] nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)"
        gpu_nvswitch_sxid{code="20034", count="2", nvswitch="0000:86:00.0", severity="fatal"} "[4022.7] nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Fatal, Link 10 LTSSM Fault Up"
    "#]]
    .assert_eq(&xid_lines(&b));
}

/// The exposition lines of `gpu_present` and the node's expected and found counts.
fn presence_lines(b: &Batch) -> String {
    let text = b.to_exposition();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("gpu_present") || l.starts_with("gpu_expected") || l.starts_with("gpu_found"))
        .collect();
    lines.join("\n") + "\n"
}

/// A backend whose GPU 1 falls off the bus after the first reading.
struct LosesGpu1 {
    inner: fake::Fake,
    calls: u32,
}

impl GpuBackend for LosesGpu1 {
    fn devices(&mut self) -> Result<Vec<Device>, BackendError> {
        self.calls += 1;
        let mut devices = self.inner.devices()?;
        if self.calls > 1 {
            devices.retain(|d| d.index != 1);
        }
        Ok(devices)
    }

    fn xid_events(&mut self) -> Vec<XidEvent> {
        Vec::new()
    }
}

#[test]
fn gpus_on_the_bus_or_seen_before_are_expected_and_present_only_while_nvml_lists_them() {
    let backend = LosesGpu1 { inner: h100(), calls: 0 };
    let mut g = Gpu::for_tests(Box::new(backend), &golden::fixture("gpu/proc"), false)
        .with_sysfs(&golden::fixture("gpu/sys"), None);

    // NVML lists two of the bus's eight GPUs: those two under their labels, the others by address.
    let mut b = Batch::new();
    g.collect(1_000, &mut b).unwrap();
    expect_test::expect![[r#"
        gpu_expected_count{} 8
        gpu_found_count{} 2
        gpu_present{device="nvidia0", gpu="0", model="NVIDIA H100 80GB HBM3", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 1
        gpu_present{device="nvidia1", gpu="1", model="NVIDIA H100 80GB HBM3", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 1
        gpu_present{pci_bus_id="0000:3a:00.0"} 0
        gpu_present{pci_bus_id="0000:5d:00.0"} 0
        gpu_present{pci_bus_id="0000:9a:00.0"} 0
        gpu_present{pci_bus_id="0000:ab:00.0"} 0
        gpu_present{pci_bus_id="0000:ba:00.0"} 0
        gpu_present{pci_bus_id="0000:db:00.0"} 0
    "#]]
    .assert_eq(&presence_lines(&b));

    // GPU 1 is gone from NVML's list: 0 under the labels it had.
    let mut b = Batch::new();
    g.collect(2_000, &mut b).unwrap();
    let lines = presence_lines(&b);
    assert!(lines.contains(r#"gpu_present{device="nvidia1", gpu="1", model="NVIDIA H100 80GB HBM3", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0"#), "{lines}");
    assert!(lines.contains("gpu_expected_count{} 8\ngpu_found_count{} 1\n"), "{lines}");
    assert!(!b.to_exposition().contains(r#"gpu_power_watts{device="nvidia1""#), "{b:?}");
}

#[test]
fn a_gpu_seen_once_stays_expected_off_the_bus_and_expected_gpus_counts_the_unnamed() {
    // No GPU on this bus (a container without /sys): the GPUs NVML listed are expected all the same.
    let backend = LosesGpu1 { inner: h100(), calls: 0 };
    let mut g = Gpu::for_tests(Box::new(backend), &golden::fixture("gpu/proc"), false)
        .with_sysfs(&golden::fixture("gpu/no-such-sys"), Some(4));
    g.collect(1_000, &mut Batch::new()).unwrap();
    let mut b = Batch::new();
    g.collect(2_000, &mut b).unwrap();
    expect_test::expect![[r#"
        gpu_expected_count{} 4
        gpu_found_count{} 1
        gpu_present{device="nvidia0", gpu="0", model="NVIDIA H100 80GB HBM3", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 1
        gpu_present{device="nvidia1", gpu="1", model="NVIDIA H100 80GB HBM3", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0
    "#]]
    .assert_eq(&presence_lines(&b));
}

#[test]
fn when_nvml_fails_every_expected_gpu_is_not_present() {
    let backend = FailsAfterFirst { inner: h100(), calls: 0 };
    let mut g = Gpu::for_tests(Box::new(backend), &golden::fixture("gpu/proc"), false)
        .with_sysfs(&golden::fixture("gpu/sys-workstation"), None);
    let mut b = Batch::new();
    g.collect(1_000, &mut b).unwrap();
    assert!(presence_lines(&b).contains("gpu_expected_count{} 3\ngpu_found_count{} 2\n"), "{b:?}");
    let mut b = Batch::new();
    assert!(g.collect(2_000, &mut b).is_err());
    expect_test::expect![[r#"
        gpu_expected_count{} 3
        gpu_found_count{} 0
        gpu_present{device="nvidia0", gpu="0", model="NVIDIA H100 80GB HBM3", serial="1654922009721", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0
        gpu_present{device="nvidia1", gpu="1", model="NVIDIA H100 80GB HBM3", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0
        gpu_present{pci_bus_id="0000:01:00.0"} 0
    "#]]
    .assert_eq(&presence_lines(&b));
}

#[test]
fn process_utilization_is_summed_per_owner_like_memory() {
    let mut fake = h100();
    // Time-sliced: a Slurm job's process shares GPU 1 with an unowned one, and one busy process has
    // no memory reading.
    fake.devices[1].process_utilization = vec![
        backend::ProcessUtilization { pid: 5120, sm_percent: Some(60.0), memory_percent: Some(30.0) },
        backend::ProcessUtilization { pid: 6001, sm_percent: Some(25.0), memory_percent: None },
    ];
    let mut g = Gpu::for_tests(Box::new(fake), &golden::fixture("gpu/proc"), false);
    let mut b = Batch::new();
    g.collect(1_000, &mut b).unwrap();
    let text = b.to_exposition();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("gpu_process_") && l.contains(r#"gpu="1""#)).collect();
    expect_test::expect![[r#"
        gpu_process_memory_utilization_ratio{device="nvidia1", gpu="1", job="4242", model="NVIDIA H100 80GB HBM3", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0.3
        gpu_process_sm_utilization_ratio{device="nvidia1", gpu="1", job="4242", model="NVIDIA H100 80GB HBM3", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0.6
        gpu_process_sm_utilization_ratio{device="nvidia1", gpu="1", model="NVIDIA H100 80GB HBM3", pid="6001", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0.25
    "#]]
    .assert_eq(&(lines.join("\n") + "\n"));
}

#[test]
fn the_bus_and_expected_gpus_come_from_the_config() {
    let config = |collector: &str, gpu: &str| {
        let toml = format!(
            "[collector]\n{collector}\n[collector.gpu]\nbackend = \"fake\"\nfake_fixture = {:?}\nkernel_log = \"\"\n{gpu}\n",
            golden::fixture("gpu/h100.json")
        );
        let valid = crate::config::Config::parse(&toml, "argus.toml").and_then(|c| c.validate("argus.toml"));
        valid.unwrap().gpu.unwrap()
    };
    let defaults = config("", "");
    assert_eq!((defaults.settings.sysfs_root.as_path(), defaults.settings.expected_gpus), (Path::new("/sys"), None));

    let source = config(&format!("sysfs_root = {:?}", golden::fixture("gpu/sys")), "expected_gpus = 10");
    let mut g = Gpu::build(&source.settings, source.timeout, &golden::fixture("gpu/proc"), &BTreeMap::new(), None);
    let mut b = Batch::new();
    g.collect(1_000, &mut b).unwrap();
    let lines = presence_lines(&b);
    assert!(lines.starts_with("gpu_expected_count{} 10\ngpu_found_count{} 2\n"), "{lines}");
    assert_eq!(lines.matches("} 0\n").count(), 6, "{lines}");
}

/// A backend on which Slurm job 4242 (pid 5120 in the fixture's cgroups) runs on GPU 1 for the first
/// `job_reads` device readings, then has exited.
struct JobEnds {
    inner: fake::Fake,
    job_reads: u32,
    calls: u32,
}

impl GpuBackend for JobEnds {
    fn devices(&mut self) -> Result<Vec<Device>, BackendError> {
        self.calls += 1;
        let mut devices = self.inner.devices()?;
        if self.calls <= self.job_reads {
            devices[1].processes =
                vec![backend::Process { pid: 5120, used_memory_bytes: Some(1 << 30), gpu_instance_id: None }];
        }
        Ok(devices)
    }

    fn xid_events(&mut self) -> Vec<XidEvent> {
        Vec::new()
    }
}

#[test]
fn an_xid_carries_the_job_its_gpu_served_when_it_was_logged() {
    use crate::config::{AttributionSettings, Kubernetes, SlurmSettings};
    let log = Log::new();
    let backend = JobEnds { inner: h100(), job_reads: 1, calls: 0 };
    let mut g = Gpu::for_tests(Box::new(backend), &golden::fixture("gpu/proc"), false).with_kernel_log(&log.path);
    // Slurm from the processes' cgroups; no controller to ask for user and partition.
    let slurm = SlurmSettings { scontrol: "/nonexistent/scontrol".into(), ..SlurmSettings::default() };
    let settings = AttributionSettings { kubernetes: Kubernetes::Off, slurm: Some(slurm), ..Default::default() };
    g.attribution = attribution::Attribution::new(&settings);
    let xid_13 = "[ 90.0] NVRM: Xid (PCI:0000:2a:00): 13, pid=5120, name=python, Graphics Exception\n";
    let mut lines = Vec::new();
    // 1: the job runs and faults. 2: it has exited by this reading, its Xid logged before: still its
    // own. 3: the job is gone from both readings: its counter's last sample. 4: an Xid on the idle
    // GPU is no one's.
    for (t, xid) in [(1_000, true), (2_000, true), (3_000, false), (4_000, true)] {
        if xid {
            log.append(xid_13);
        }
        let mut b = Batch::new();
        g.collect(t, &mut b).unwrap();
        let gpu1: Vec<String> =
            xid_lines(&b).lines().filter(|l| l.contains(r#"gpu="1""#)).map(|l| format!("{t}: {l}")).collect();
        lines.extend(gpu1);
    }
    expect_test::expect![[r#"
        1000: gpu_xid_errors_total{code="13", gpu="1", serial="1654922010498", slurm_job="4242", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0
        1000: gpu_xid_errors_total{code="13", gpu="1", serial="1654922010498", slurm_job="4242", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 1
        1000: gpu_xid{code="13", gpu="1", serial="1654922010498", slurm_job="4242", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} "[ 90.0] NVRM: Xid (PCI:0000:2a:00): 13, pid=5120, name=python, Graphics Exception"
        2000: gpu_xid_errors_total{code="13", gpu="1", serial="1654922010498", slurm_job="4242", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 2
        2000: gpu_xid{code="13", gpu="1", serial="1654922010498", slurm_job="4242", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} "[ 90.0] NVRM: Xid (PCI:0000:2a:00): 13, pid=5120, name=python, Graphics Exception"
        3000: gpu_xid_errors_total{code="13", gpu="1", serial="1654922010498", slurm_job="4242", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 2
        4000: gpu_xid_errors_total{code="13", gpu="1", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 0
        4000: gpu_xid_errors_total{code="13", gpu="1", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 1
        4000: gpu_xid{code="13", gpu="1", serial="1654922010498", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} "[ 90.0] NVRM: Xid (PCI:0000:2a:00): 13, pid=5120, name=python, Graphics Exception"
    "#]]
    .assert_eq(&(lines.join("\n") + "\n"));
}
