use super::*;
use crate::source::golden;

fn gpu(fixture: &str, dcgm_names: bool) -> Gpu {
    let backend = fake::Fake::load(&golden::fixture(fixture)).map(|b| Box::new(b) as Box<dyn GpuBackend>);
    Gpu::new(backend.map_err(|e| e.to_string()), &golden::fixture("gpu/proc"), dcgm_names, "node-7".into(), None)
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
        text.contains(r#"gpu_xid_errors_total{code="48", gpu="1", uuid="GPU-a7c3e9d1-2b44-4e0a-8c5f-6d9e8f7a1b20"} 2"#),
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
    let mut g = Gpu::new(Err("no NVIDIA management library".into()), Path::new("/proc"), false, String::new(), None);
    let mut b = Batch::new();
    for _ in 0..2 {
        assert!(matches!(g.collect(1, &mut b), Err(SourceError::Unavailable(_))));
    }
    assert!(b.is_empty());
}

#[test]
fn kernel_log_xids_map_to_gpus_by_pci_address_and_replace_nvml_events() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kern.log");
    std::fs::write(&path, "").unwrap();
    let backend = fake::Fake::load(&golden::fixture("gpu/h100.json")).unwrap();
    let log = kmsg::KernelLog::open(&path);
    let mut g = Gpu::new(Ok(Box::new(backend)), &golden::fixture("gpu/proc"), false, String::new(), log);
    std::fs::write(
        &path,
        "[ 88.1] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus.\n\
         [ 88.2] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus.\n\
         [ 90.0] NVRM: Xid (PCI:0000:99:00): 13, Graphics Exception on a GPU we do not see\n",
    )
    .unwrap();
    let mut b = Batch::new();
    g.collect(5_000, &mut b).unwrap();
    let text = b.to_exposition();
    let xid_lines: Vec<&str> = text.lines().filter(|l| l.starts_with("gpu_xid")).collect();
    expect_test::expect![[r#"
        gpu_xid_errors_total{code="13", pci_bus_id="0000:99:00"} 0
        gpu_xid_errors_total{code="13", pci_bus_id="0000:99:00"} 1
        gpu_xid_errors_total{code="79", gpu="0", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 0
        gpu_xid_errors_total{code="79", gpu="0", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} 2
        gpu_xid{code="13", pci_bus_id="0000:99:00"} "[ 90.0] NVRM: Xid (PCI:0000:99:00): 13, Graphics Exception on a GPU we do not see"
        gpu_xid{code="79", gpu="0", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} "[ 88.1] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus."
        gpu_xid{code="79", gpu="0", uuid="GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10"} "[ 88.2] NVRM: Xid (PCI:0000:18:00): 79, pid=4101, name=python, GPU has fallen off the bus."
    "#]]
    .assert_eq(&(xid_lines.join("\n") + "\n"));
}
