//! Which workload a GPU serves, as labels for its per-GPU series: the Kubernetes pod and container
//! the kubelet allocated it to (`namespace`, `pod`, `container`, from the PodResources API), and the
//! Slurm job whose processes use it (`slurm_job` from their cgroups, `slurm_user` and
//! `slurm_partition` from `scontrol`). Allocated GPUs carry their pod labels while idle too.
//!
//! The kubelet and the Slurm controller are asked on a thread of their own (`podresources`, `slurm`);
//! a collection only reads what they last answered, so neither can slow or fail it.
//!
//! Settings: `[collector.gpu.attribution]` (`crate::config::AttributionSettings`). Which series
//! families carry the labels is the caller's to ask ([`Attribution::carries`]), to bound the series
//! that change names when a GPU changes hands.

use crate::config::{AttributionSettings, Families, Kubernetes};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub mod podresources;
pub mod slurm;

pub use super::cgroup::Owner;
pub use podresources::{Holder, KubeletStatus};
pub use slurm::{JobInfo, SlurmStatus};

/// A GPU or MIG device as the backend reads it: device plugins name it by UUID (GPU or MIG) or, some,
/// by the GPU's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuRef<'a> {
    pub uuid: &'a str,
    /// The GPU's index; `None` for a MIG device.
    pub index: Option<u32>,
}

/// A GPU or MIG device the kubelet can allocate: to whom, if anyone. The series
/// `gpu_allocated{uuid, namespace, pod, container}` is 1 for each holder, 0 for a device no pod holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Allocation {
    /// The GPU's or MIG device's UUID.
    pub uuid: String,
    /// `nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`, …
    pub resource: String,
    /// `None`: allocatable, allocated to no pod.
    pub holder: Option<Holder>,
}

/// `<uuid> <resource> 1 <namespace>/<pod>/<container>`, or `<uuid> <resource> 0` for a free device.
impl std::fmt::Display for Allocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.holder {
            Some(h) => write!(f, "{} {} 1 {}/{}/{}", self.uuid, self.resource, h.namespace, h.pod, h.container),
            None => write!(f, "{} {} 0", self.uuid, self.resource),
        }
    }
}

/// Workload labels for a node's GPUs. Dropping it stops its thread.
pub struct Attribution {
    families: Families,
    kubelet: Option<Kubelet>,
    slurm: Option<slurm::Handle>,
    /// Dropped with the attribution: its thread's runtime then stops.
    _stop: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The kubelet's last answer, as the refresh thread shares it.
struct Kubelet {
    shared: Arc<Mutex<podresources::Shared>>,
    max_age: Duration,
}

// === impl Attribution ===

impl Attribution {
    /// Starts asking the kubelet and the Slurm controller, as `settings` say, on a thread of its own.
    /// Where the thread cannot start, GPUs go unlabelled (and the reason is logged).
    pub fn new(settings: &AttributionSettings) -> Attribution {
        let mut out = Attribution::off();
        out.families = settings.families.clone();
        let refresher = (settings.kubernetes != Kubernetes::Off).then(|| podresources::Refresher {
            mode: settings.kubernetes,
            socket: settings.pod_resources_socket.clone(),
            refresh: settings.refresh,
            timeout: settings.timeout,
            max_age: settings.max_age,
            shared: Arc::default(),
        });
        let slurm = settings.slurm.as_ref().map(|s| slurm::new(s, settings.timeout));
        if refresher.is_none() && slurm.is_none() {
            return out;
        }
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let kubelet = refresher.as_ref().map(|r| Kubelet { shared: r.shared.clone(), max_age: r.max_age });
        let (handle, lookups) = match slurm {
            Some((h, l)) => (Some(h), Some(l)),
            None => (None, None),
        };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build();
        let started = runtime.and_then(|rt| {
            std::thread::Builder::new().name("gpu-attribution".into()).spawn(move || {
                rt.block_on(async move {
                    if let Some(r) = refresher {
                        tokio::spawn(r.run());
                    }
                    if let Some(l) = lookups {
                        tokio::spawn(l.run());
                    }
                    // Resolves when the Attribution drops its sender.
                    let _ = stopped.await;
                });
                // Kills a `scontrol` still running (kill_on_drop) and closes the kubelet's connection.
                rt.shutdown_background();
            })
        });
        match started {
            Ok(_) => Attribution { kubelet, slurm: handle, _stop: Some(stop), ..out },
            Err(error) => {
                tracing::error!(%error, "Cannot start the GPU attribution thread: GPU series go without workload labels");
                out
            }
        }
    }

    /// Labels nothing.
    pub fn off() -> Attribution {
        Attribution { families: Families::all(), kubelet: None, slurm: None, _stop: None }
    }

    /// Whether series of the family `name` (`gpu_utilization_ratio`) carry [`Attribution::labels`].
    pub fn carries(&self, name: &str) -> bool {
        self.families.matches(name)
    }

    /// Whether every series family carries the labels, so that no family need be asked about.
    pub fn carries_every_family(&self) -> bool {
        self.families.is_all()
    }

    /// The labels for the per-GPU series of `gpu`, whose processes have `owners`, in this order:
    /// - `namespace`, `pod`, `container`: the container the kubelet allocated the GPU to; with
    ///   several holders of a shared GPU, those they agree on (`namespace` and `pod` for containers
    ///   of one pod), none otherwise. A GPU whose MIG devices are allocated, not the GPU, has none
    ///   (ask for each MIG device by its UUID);
    /// - `slurm_job`, `slurm_user`, `slurm_partition`: when exactly one Slurm job's processes use
    ///   the GPU; user and partition once `scontrol` has answered for the job.
    ///
    /// Never waits: it reads what the kubelet and `scontrol` last answered.
    pub fn labels(&self, gpu: GpuRef<'_>, owners: &[Owner]) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(k) = &self.kubelet {
            let shared = podresources::lock(&k.shared);
            if let Some((_, holders)) = shared.devices(k.max_age).and_then(|d| allocated(d, gpu)) {
                let pods: BTreeSet<(&String, &String)> = holders.iter().map(|h| (&h.namespace, &h.pod)).collect();
                if let (1, Some((namespace, pod))) = (pods.len(), pods.first()) {
                    out.push(("namespace", namespace.to_string()));
                    out.push(("pod", pod.to_string()));
                    let containers: BTreeSet<&String> = holders.iter().map(|h| &h.container).collect();
                    if let (1, Some(container)) = (containers.len(), containers.first()) {
                        out.push(("container", container.to_string()));
                    }
                }
            }
        }
        if let Some(slurm) = &self.slurm {
            let jobs: BTreeSet<&String> = owners.iter().filter_map(|o| o.slurm_job.as_ref()).collect();
            if let (1, Some(job)) = (jobs.len(), jobs.first()) {
                out.push(("slurm_job", job.to_string()));
                if let Some(info) = slurm.info(job) {
                    out.push(("slurm_user", info.user));
                    out.push(("slurm_partition", info.partition));
                }
            }
        }
        out
    }

    /// Every GPU and MIG device the kubelet allocated or can allocate, one entry per holder, sorted;
    /// devices named by index are given the UUID of the GPU of that index among `gpus` (and left
    /// out when none has it). Empty without a kubelet answer.
    pub fn allocations(&self, gpus: &[GpuRef<'_>]) -> Vec<Allocation> {
        let Some(k) = &self.kubelet else { return Vec::new() };
        let shared = podresources::lock(&k.shared);
        let Some(devices) = shared.devices(k.max_age) else { return Vec::new() };
        let uuid = |id: &str| -> Option<String> {
            match id.parse::<u32>() {
                Ok(index) => gpus.iter().find(|g| g.index == Some(index)).map(|g| g.uuid.to_string()),
                Err(_) => Some(id.to_string()),
            }
        };
        let mut out = Vec::new();
        for (id, (resource, holders)) in &devices.allocated {
            let Some(uuid) = uuid(id) else { continue };
            for h in holders {
                out.push(Allocation { uuid: uuid.clone(), resource: resource.clone(), holder: Some(h.clone()) });
            }
        }
        for (id, resource) in devices.allocatable.iter().flatten() {
            if devices.allocated.contains_key(id) {
                continue;
            }
            if let Some(uuid) = uuid(id) {
                out.push(Allocation { uuid, resource: resource.clone(), holder: None });
            }
        }
        out.sort();
        out
    }

    /// What the `scontrol` lookups did; `None` with `slurm = false`.
    pub fn slurm_status(&self) -> Option<SlurmStatus> {
        self.slurm.as_ref().map(slurm::Handle::status)
    }

    /// What the kubelet's refreshes did; `None` when the kubelet is not asked.
    pub fn kubelet_status(&self) -> Option<KubeletStatus> {
        self.kubelet.as_ref().map(|k| podresources::lock(&k.shared).status(k.max_age))
    }
}

/// The owners of a GPU's processes, from `/proc/<pid>/cgroup` under `procfs_root`; processes that are
/// gone, or run outside any container or job, are left out.
pub fn owners(procfs_root: &Path, pids: impl IntoIterator<Item = u32>) -> Vec<Owner> {
    pids.into_iter().map(|pid| super::cgroup::owner(procfs_root, pid)).filter(|o| !o.is_empty()).collect()
}

/// The holders of `gpu`: by UUID, or by index where the plugin names GPUs so.
fn allocated<'d>(devices: &'d podresources::Devices, gpu: GpuRef<'_>) -> Option<&'d (String, Vec<Holder>)> {
    devices.allocated.get(gpu.uuid).or_else(|| gpu.index.and_then(|i| devices.allocated.get(&i.to_string())))
}

#[cfg(test)]
mod tests;
