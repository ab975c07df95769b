use super::podresources::{Devices, Shared};
use super::*;
use expect_test::{Expect, expect};
use std::time::Instant;

const GPU0: &str = "GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10";
const GPU1: &str = "GPU-0c9f2b7e-3d41-4a8b-9e6f-7a1b2c3d4e5f";
const GPU2: &str = "GPU-7d2e4f60-1a3b-4c5d-8e9f-0a1b2c3d4e5f";
const GPU3: &str = "GPU-9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d";
const MIG: &str = "MIG-2f6c1c8e-0a3b-5d7e-9c1f-4b2a6d8e0f13";

fn holder(namespace: &str, pod: &str, container: &str) -> Holder {
    Holder { namespace: namespace.into(), pod: pod.into(), container: container.into() }
}

/// A node of four GPUs and a MIG device: GPU0 to one container, GPU1 shared by two pods, GPU2 by
/// two containers of one pod, index 3 (a plugin naming GPUs by index) to a batch pod, the MIG device
/// to an inference server; a MIG device and a GPU without holders.
fn devices() -> Devices {
    let allocated = [
        (GPU0, "nvidia.com/gpu", vec![holder("ml", "llama-0", "trainer")]),
        (GPU1, "nvidia.com/gpu.shared", vec![holder("dev", "nb-1", "nb"), holder("dev", "nb-2", "nb")]),
        (GPU2, "nvidia.com/gpu", vec![holder("ml", "mixed", "a"), holder("ml", "mixed", "b")]),
        ("3", "nvidia.com/gpu", vec![holder("batch", "idx", "c")]),
        (MIG, "nvidia.com/mig-1g.10gb", vec![holder("infer", "vllm-7", "server")]),
    ];
    let allocatable = [
        (GPU0, "nvidia.com/gpu"),
        (GPU1, "nvidia.com/gpu.shared"),
        (GPU2, "nvidia.com/gpu"),
        ("3", "nvidia.com/gpu"),
        ("4", "nvidia.com/gpu"),
        (MIG, "nvidia.com/mig-1g.10gb"),
        ("MIG-free", "nvidia.com/mig-1g.10gb"),
    ];
    Devices {
        allocated: allocated.into_iter().map(|(id, r, h)| (id.to_string(), (r.to_string(), h))).collect(),
        allocatable: Some(allocatable.into_iter().map(|(id, r)| (id.to_string(), r.to_string())).collect()),
    }
}

fn attribution(answered: Instant, slurm: Option<&[(&str, Option<JobInfo>)]>) -> Attribution {
    let mut a = Attribution::off();
    a.kubelet = Some(Kubelet {
        shared: Arc::new(Mutex::new(Shared::answered(devices(), answered))),
        max_age: Duration::from_secs(60),
    });
    if let Some(jobs) = slurm {
        let settings = crate::config::SlurmSettings::default();
        let (handle, lookups) = slurm::new(&settings, Duration::from_secs(1));
        for (job, info) in jobs {
            lookups.record(job.to_string(), Ok(info.clone()));
        }
        a.slurm = Some(handle);
    }
    a
}

fn job(id: &str) -> Owner {
    Owner { slurm_job: Some(id.into()), ..Owner::default() }
}

fn check(a: &Attribution, uuid: &str, index: Option<u32>, owners: &[Owner], expected: Expect) {
    let labels = a.labels(GpuRef { uuid, index }, owners);
    let text: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    expected.assert_eq(&text.join(" "));
}

#[test]
fn labels_of_gpus_by_uuid_index_and_mig_device() {
    let alice = JobInfo { user: "alice".into(), partition: "gpu".into() };
    let a = attribution(Instant::now(), Some(&[("4242", Some(alice)), ("99", None)]));
    let container = Owner { container_id: Some("c0ffee".into()), ..Owner::default() };
    check(&a, GPU0, Some(0), std::slice::from_ref(&container), expect!["namespace=ml pod=llama-0 container=trainer"]);
    check(&a, GPU1, Some(1), &[], expect![""]);
    check(&a, GPU2, Some(2), &[], expect!["namespace=ml pod=mixed"]);
    check(&a, GPU3, Some(3), &[], expect!["namespace=batch pod=idx container=c"]);
    check(&a, MIG, None, &[], expect!["namespace=infer pod=vllm-7 container=server"]);
    check(&a, "GPU-unknown", Some(4), &[], expect![""]);
    // Slurm: one job among the owners (a process outside any job does not count), then two jobs.
    check(
        &a,
        "GPU-unknown",
        Some(5),
        &[job("4242"), job("4242"), container],
        expect!["slurm_job=4242 slurm_user=alice slurm_partition=gpu"],
    );
    check(&a, GPU0, Some(0), &[job("4242"), job("4243")], expect!["namespace=ml pod=llama-0 container=trainer"]);
    // Known to be unknown (finished), or not asked yet: the job alone.
    check(&a, GPU0, Some(0), &[job("99")], expect!["namespace=ml pod=llama-0 container=trainer slurm_job=99"]);
    check(&a, GPU0, Some(0), &[job("100")], expect!["namespace=ml pod=llama-0 container=trainer slurm_job=100"]);
}

#[test]
fn an_answer_past_max_age_labels_nothing() {
    let Some(old) = Instant::now().checked_sub(Duration::from_secs(61)) else { return };
    let a = attribution(old, None);
    check(&a, GPU0, Some(0), &[job("4242")], expect![""]);
    assert_eq!(a.allocations(&[]), []);
    assert_eq!(a.kubelet_status().unwrap().answer_age, None);
}

#[test]
fn allocations_list_holders_and_free_devices() {
    let a = attribution(Instant::now(), None);
    let gpus = [
        GpuRef { uuid: GPU0, index: Some(0) },
        GpuRef { uuid: GPU3, index: Some(3) },
        GpuRef { uuid: "GPU-four", index: Some(4) },
    ];
    let text: Vec<String> = a.allocations(&gpus).iter().map(ToString::to_string).collect();
    expect![[r#"
        GPU-0c9f2b7e-3d41-4a8b-9e6f-7a1b2c3d4e5f nvidia.com/gpu.shared 1 dev/nb-1/nb
        GPU-0c9f2b7e-3d41-4a8b-9e6f-7a1b2c3d4e5f nvidia.com/gpu.shared 1 dev/nb-2/nb
        GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10 nvidia.com/gpu 1 ml/llama-0/trainer
        GPU-7d2e4f60-1a3b-4c5d-8e9f-0a1b2c3d4e5f nvidia.com/gpu 1 ml/mixed/a
        GPU-7d2e4f60-1a3b-4c5d-8e9f-0a1b2c3d4e5f nvidia.com/gpu 1 ml/mixed/b
        GPU-9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d nvidia.com/gpu 1 batch/idx/c
        GPU-four nvidia.com/gpu 0
        MIG-2f6c1c8e-0a3b-5d7e-9c1f-4b2a6d8e0f13 nvidia.com/mig-1g.10gb 1 infer/vllm-7/server
        MIG-free nvidia.com/mig-1g.10gb 0"#]]
    .assert_eq(&text.join("\n"));
    // An index no GPU has is left out.
    assert!(a.allocations(&[]).iter().all(|x| x.uuid != "3" && x.uuid != "4"));
}

#[test]
fn families_and_an_attribution_that_asks_no_one() {
    let settings = AttributionSettings {
        kubernetes: Kubernetes::Off,
        slurm: None,
        families: Families::globs(&["gpu_utilization_ratio"]).unwrap(),
        ..AttributionSettings::default()
    };
    let a = Attribution::new(&settings);
    assert!(a.carries("gpu_utilization_ratio") && !a.carries("gpu_power_watts"));
    assert!(a.kubelet_status().is_none());
    check(&a, GPU0, Some(0), &[job("4242")], expect![""]);
    assert!(Attribution::off().carries("gpu_power_watts"));
}
