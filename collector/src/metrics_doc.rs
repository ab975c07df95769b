//! Holds the code to docs/metrics.md: every series the collector writes on the fixtures is listed
//! there, and every collector metric listed there is written by some fixture (except those no fixture
//! board has, named below with the reason).

use crate::batch::Batch;
use crate::config::Config;
use crate::metrics::{DropLabels, SelfMetrics, SinkLabel, SourceLabel};
use crate::source::disk::{Disk, statvfs::RecordedStatfs};
use crate::source::gpu::{GpuBackend, fake::Fake};
use crate::source::{Source, golden, host::Host, net::Net};
use std::collections::BTreeSet;
use std::path::Path;

/// Listed, but on no fixture board: fans (SXM boards have none) and retired pages (before Ampere;
/// the fixtures are H100 and A100); and the kubelet's allocations.
const NOT_ON_FIXTURES: &[&str] = &[
    // Written only with a kubelet's answer: collector/tests/it/attribution_podresources.rs.
    "gpu_allocated",
    "gpu_fan_speed_ratio",
    "DCGM_FI_DEV_FAN_SPEED",
    "gpu_retired_pages_single_bit",
    "gpu_retired_pages_double_bit",
    "gpu_retired_pages_pending",
    "DCGM_FI_DEV_RETIRED_SBE",
    "DCGM_FI_DEV_RETIRED_DBE",
    "DCGM_FI_DEV_RETIRED_PENDING",
];

fn emitted() -> BTreeSet<String> {
    let cfg = Config::default().validate("-").unwrap();
    let mut b = Batch::new();
    // Host and disk twice, the second time on the tree copied two seconds later, so the gauges
    // computed between two readings appear (the later tree lacks some files: those errors are expected).
    let mut host = Host::new(&golden::fixture("node/proc"));
    host.with_root(&golden::fixture("node/proc"));
    host.collect(1_000, &mut b).unwrap();
    host.with_root(&golden::fixture("node-later/proc"));
    let _ = host.collect(3_000, &mut b);
    let recorded = std::fs::read_to_string(golden::fixture("node/statvfs.json")).unwrap();
    let statfs = RecordedStatfs(serde_json::from_str(&recorded).unwrap());
    let mut disk =
        Disk::with_statfs(&golden::fixture("node/proc"), cfg.disk.clone().unwrap().settings, Box::new(statfs));
    disk.collect(1_000, &mut b).unwrap();
    disk.set_root(&golden::fixture("node-later/proc"));
    let _ = disk.collect(3_000, &mut b);
    Net::new(&golden::fixture("node/proc"), &golden::fixture("infiniband/sys"), cfg.net.clone().unwrap().settings)
        .collect(1_000, &mut b)
        .unwrap();
    for f in ["gpu/h100.json", "gpu/a100-mig.json"] {
        let backend: Box<dyn GpuBackend> = Box::new(Fake::load(&golden::fixture(f)).unwrap());
        crate::source::gpu::Gpu::for_tests(backend, &golden::fixture("gpu/proc"), true).collect(1_000, &mut b).unwrap();
    }
    // NVSwitch errors come from the kernel log only.
    let kern = tempfile::NamedTempFile::new().unwrap();
    let backend: Box<dyn GpuBackend> = Box::new(Fake::load(&golden::fixture("gpu/h100.json")).unwrap());
    let mut gpu =
        crate::source::gpu::Gpu::for_tests(backend, &golden::fixture("gpu/proc"), false).with_kernel_log(kern.path());
    std::fs::write(kern.path(), "nvidia-nvswitch0: SXid (PCI:0000:86:00.0): 20034, Fatal, Link 10 LTSSM Fault Up\n")
        .unwrap();
    gpu.collect(1_000, &mut b).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let mut events = crate::source::events::Events::new(&crate::config::EventsSettings {
        files: vec![log.clone()],
        kernel_log: None,
    });
    std::fs::copy(golden::fixture("logs/train.log"), &log).unwrap();
    events.collect(1_000, &mut b).unwrap();
    training(&mut b);
    let target =
        crate::config::ScrapeTarget { url: "http://x/metrics".into(), labels: vec![("job".into(), "x".into())] };
    b.push(crate::source::scrape::scrape_point(&target, 1_000, true, std::time::Duration::from_millis(3), 10));
    let replay = crate::config::ReplaySettings {
        duty_cycle: golden::fixture("replay/pod_gpu_duty_cycle_anon.csv"),
        memory_used: Some(golden::fixture("replay/pod_gpu_memory_used_bytes_anon.csv")),
        gpus: 2,
    };
    crate::source::replay::Replay::load(&replay).collect(1_000, &mut b).unwrap();
    crate::emit::self_points("host", 1, std::time::Duration::from_millis(1), true, &mut b);
    let mut names: BTreeSet<String> =
        b.to_exposition().lines().map(|l| l[..l.find('{').unwrap()].to_string()).collect();

    let m = SelfMetrics::default();
    m.source_duration.get_or_create(&SourceLabel { source: "gpu".into() }).set(0.1);
    m.source_success.get_or_create(&SourceLabel { source: "gpu".into() }).set(1);
    m.points_sent.get_or_create(&SinkLabel { sink: "s".into() }).inc();
    m.points_spooled.get_or_create(&SinkLabel { sink: "s".into() }).inc();
    m.points_dropped.get_or_create(&DropLabels { sink: "s".into(), reason: "spool_full".into() }).inc();
    m.spool(&SinkLabel { sink: "s".into() }, 1, 1);
    for l in m.encode().lines().filter(|l| !l.starts_with('#')) {
        names.insert(l[..l.find(['{', ' ']).unwrap()].to_string());
    }
    names
}

/// Every `train` series: a report with every field, a checkpoint start and end, the stall gauges.
fn training(b: &mut Batch) {
    use crate::source::training::{Checkpoint, Jobs, Progress};
    let all = Progress {
        step: Some(1.0),
        total_steps: Some(10.0),
        epoch: Some(0.1),
        loss: Some(2.0),
        eval_loss: Some(2.1),
        grad_norm: Some(1.0),
        learning_rate: Some(1e-4),
        samples_per_second: Some(8.0),
        steps_per_second: Some(1.0),
        tokens_per_second: Some(8192.0),
        mfu: Some(0.4),
        eta_seconds: Some(9.0),
    };
    let mut jobs = Jobs::default();
    b.push(jobs.observe("j", "0", &all, Some(Checkpoint::Start), 1_000));
    b.push(jobs.observe("j", "0", &Progress::default(), Some(Checkpoint::End), 2_000));
    let minute = std::time::Duration::from_secs(60);
    jobs.stall_points(3_000, minute, minute, b);
}

fn documented() -> BTreeSet<String> {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/metrics.md")).unwrap();
    let collector = &doc[doc.find("## Collector self metrics").unwrap()..];
    collector.lines().filter_map(|l| l.strip_prefix("| `")).map(|l| l[..l.find('`').unwrap()].to_string()).collect()
}

#[test]
fn docs_metrics_md_lists_exactly_what_the_collector_emits() {
    let emitted = emitted();
    let documented = documented();
    let undocumented: Vec<_> = emitted.difference(&documented).collect();
    assert!(undocumented.is_empty(), "emitted but not in docs/metrics.md: {undocumented:?}");
    let unseen: Vec<_> = documented.difference(&emitted).filter(|n| !NOT_ON_FIXTURES.contains(&n.as_str())).collect();
    assert!(unseen.is_empty(), "in docs/metrics.md but emitted by no fixture: {unseen:?}");
}
