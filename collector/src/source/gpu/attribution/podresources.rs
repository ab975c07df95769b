//! The kubelet's PodResources API v1: which pod and container each GPU or MIG device is allocated to
//! (`List`), and which of them the kubelet can allocate at all (`GetAllocatableResources`).
//!
//! Asked over the kubelet's unix socket every `refresh`, in the background: a collection only reads
//! the last answer. A failed or slow kubelet (each refresh has the `timeout`) keeps the last answer
//! until it is `max_age` old, then GPUs go without pod labels until the kubelet answers again. Each
//! change between answering and failing is logged once.
//!
//! Devices are those of NVIDIA's device plugin: `nvidia.com/gpu` (and its renamed shared variants,
//! `nvidia.com/gpu.shared`), whose ids are GPU UUIDs — or indices, with some plugins — and
//! `nvidia.com/mig-<profile>`, whose ids are MIG device UUIDs. A GPU shared by time-slicing appears
//! once per replica, as `<uuid>::<n>`; the replicas are one device here.

use crate::config::Kubernetes;
use hyper_util::rt::TokioIo;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tonic::client::Grpc;
use tonic::transport::{Channel, Endpoint, Uri};

pub mod proto;

/// The kubelet refuses to send more than 16 MiB (`podresources` server's limit); so does this client.
const MAX_MESSAGE: usize = 16 << 20;

/// The container of a pod that a device is allocated to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Holder {
    pub namespace: String,
    pub pod: String,
    pub container: String,
}

/// One answer of the kubelet: GPU and MIG devices by id (a UUID, or an index with some plugins).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Devices {
    /// Allocated devices: the resource and every container holding it (several where a plugin
    /// shares one GPU), in order.
    pub allocated: BTreeMap<String, (String, Vec<Holder>)>,
    /// Every device the kubelet can allocate, with its resource; `None` where the kubelet does not
    /// serve `GetAllocatableResources` (before Kubernetes 1.23, or with its feature gate off).
    pub allocatable: Option<BTreeMap<String, String>>,
}

/// Why the kubelet gave no answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error("kubelet PodResources {method} at {socket}: {code:?}: {message}")]
    Call { method: &'static str, socket: PathBuf, code: tonic::Code, message: String },
    #[error("kubelet PodResources at {socket}: no answer within {after:?}")]
    Timeout { socket: PathBuf, after: Duration },
    #[error("kubelet PodResources socket {socket} does not exist")]
    NoSocket { socket: PathBuf },
}

/// What a refresh did last, for self metrics and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeletStatus {
    /// Refreshes tried (not counting those skipped while an optional kubelet's socket is absent).
    pub refreshes: u64,
    pub failures: u64,
    /// The last refresh's error; `None` once the kubelet answers again.
    pub error: Option<String>,
    /// How old the answer in use is; `None` when there is none (never answered, or past `max_age`).
    pub answer_age: Option<Duration>,
}

/// What the refresh loop shares with collections.
#[derive(Debug, Default)]
pub(super) struct Shared {
    answer: Option<(Devices, Instant)>,
    status: KubeletStatus,
}

/// The refresh loop's side: asks the kubelet every `refresh` until its runtime stops.
pub(super) struct Refresher {
    pub mode: Kubernetes,
    pub socket: PathBuf,
    pub refresh: Duration,
    pub timeout: Duration,
    pub max_age: Duration,
    pub shared: Arc<Mutex<Shared>>,
}

/// A device id without the replica suffix of a shared GPU (`GPU-…::3`).
fn device_id(id: &str) -> &str {
    id.split_once("::").map_or(id, |(device, _)| device)
}

/// NVIDIA device plugin resources: whole GPUs (also shared ones renamed `nvidia.com/gpu.shared`) and
/// MIG devices.
pub fn is_gpu_resource(name: &str) -> bool {
    name == "nvidia.com/gpu" || name.starts_with("nvidia.com/gpu.") || name.starts_with("nvidia.com/mig-")
}

// === impl Devices ===

impl Devices {
    /// The GPU and MIG devices of the kubelet's two answers; other resources are left out.
    pub fn from_answers(
        list: &proto::ListPodResourcesResponse,
        allocatable: Option<&proto::AllocatableResourcesResponse>,
    ) -> Devices {
        let mut allocated: BTreeMap<String, (String, Vec<Holder>)> = BTreeMap::new();
        for pod in &list.pod_resources {
            for c in &pod.containers {
                for d in c.devices.iter().filter(|d| is_gpu_resource(&d.resource_name)) {
                    for id in &d.device_ids {
                        let holder = Holder {
                            namespace: pod.namespace.clone(),
                            pod: pod.name.clone(),
                            container: c.name.clone(),
                        };
                        let (_, holders) = allocated
                            .entry(device_id(id).to_string())
                            .or_insert_with(|| (d.resource_name.clone(), Vec::new()));
                        if !holders.contains(&holder) {
                            holders.push(holder);
                        }
                    }
                }
            }
        }
        for (_, holders) in allocated.values_mut() {
            holders.sort();
        }
        let allocatable = allocatable.map(|a| {
            a.devices
                .iter()
                .filter(|d| is_gpu_resource(&d.resource_name))
                .flat_map(|d| d.device_ids.iter().map(|id| (device_id(id).to_string(), d.resource_name.clone())))
                .collect()
        });
        Devices { allocated, allocatable }
    }
}

// === impl Client ===

/// A PodResources client on the kubelet's unix socket. The channel connects on first use and again
/// after the kubelet restarts.
pub struct Client {
    grpc: Grpc<Channel>,
    socket: PathBuf,
    timeout: Duration,
}

impl Client {
    /// Must be called within a tokio runtime (the channel's worker is spawned on it).
    pub fn new(socket: &Path, timeout: Duration) -> Client {
        let path = socket.to_path_buf();
        // The URI only fills the `:authority` header: the connector dials the socket's path as it is,
        // which need not be valid in a URI.
        let channel = Endpoint::from_static("http://localhost").connect_timeout(timeout).connect_with_connector_lazy(
            tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move { Ok::<_, std::io::Error>(TokioIo::new(tokio::net::UnixStream::connect(path).await?)) }
            }),
        );
        Client {
            grpc: Grpc::new(channel).max_decoding_message_size(MAX_MESSAGE),
            socket: socket.to_path_buf(),
            timeout,
        }
    }

    /// Both calls, within the client's timeout together.
    pub async fn devices(&mut self) -> Result<Devices, Error> {
        let socket = self.socket.clone();
        let after = self.timeout;
        tokio::time::timeout(after, self.both()).await.unwrap_or(Err(Error::Timeout { socket, after }))
    }

    async fn both(&mut self) -> Result<Devices, Error> {
        let list: proto::ListPodResourcesResponse = self.call(proto::LIST, proto::ListPodResourcesRequest {}).await?;
        let allocatable = match self
            .call::<_, proto::AllocatableResourcesResponse>(
                proto::GET_ALLOCATABLE_RESOURCES,
                proto::AllocatableResourcesRequest {},
            )
            .await
        {
            Ok(a) => Some(a),
            // Kubelets before 1.23, or with KubeletPodResourcesGetAllocatable off, answer
            // "Unimplemented" or "...GetAllocatableResources disabled": allocated GPUs are still known.
            Err(Error::Call { code, message, .. })
                if code == tonic::Code::Unimplemented || message.contains("disabled") =>
            {
                None
            }
            Err(e) => return Err(e),
        };
        Ok(Devices::from_answers(&list, allocatable.as_ref()))
    }

    async fn call<Req, Resp>(&mut self, method: &'static str, request: Req) -> Result<Resp, Error>
    where
        Req: prost::Message + Send + Sync + 'static,
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let err = |status: tonic::Status| Error::Call {
            method: method.rsplit('/').next().unwrap_or(method),
            socket: self.socket.clone(),
            code: status.code(),
            message: with_sources(&status),
        };
        self.grpc.ready().await.map_err(|e| err(tonic::Status::unavailable(e.to_string())))?;
        let path = http::uri::PathAndQuery::from_static(method);
        let codec = tonic_prost::ProstCodec::<Req, Resp>::default();
        match self.grpc.unary(tonic::Request::new(request), path, codec).await {
            Ok(response) => Ok(response.into_inner()),
            Err(status) => Err(err(status)),
        }
    }
}

/// A status's message and its chain of causes ("connection refused" is a few levels down).
fn with_sources(status: &tonic::Status) -> String {
    let mut out = status.message().to_string();
    let mut source = std::error::Error::source(status);
    while let Some(e) = source {
        let s = e.to_string();
        if !out.contains(&s) {
            out = if out.is_empty() { s } else { format!("{out}: {s}") };
        }
        source = e.source();
    }
    out
}

// === impl Shared ===

impl Shared {
    /// The last answer, unless it is older than `max_age`.
    pub(super) fn devices(&self, max_age: Duration) -> Option<&Devices> {
        self.answer.as_ref().filter(|(_, at)| at.elapsed() <= max_age).map(|(d, _)| d)
    }

    /// A kubelet that answered `devices` at `at`.
    #[cfg(test)]
    pub(super) fn answered(devices: Devices, at: Instant) -> Shared {
        Shared { answer: Some((devices, at)), status: KubeletStatus::default() }
    }

    pub(super) fn status(&self, max_age: Duration) -> KubeletStatus {
        let mut s = self.status.clone();
        s.answer_age = self.answer.as_ref().map(|(_, at)| at.elapsed()).filter(|age| *age <= max_age);
        s
    }
}

pub(super) fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    // A panic while holding the lock leaves whole values behind: every write is one assignment.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

// === impl Refresher ===

/// What the log last said, so that each change is logged once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Logged {
    Nothing,
    Answering,
    Failing,
    Dropped,
}

impl Refresher {
    /// Asks the kubelet now and then every `refresh`, forever (the caller's runtime ends it).
    pub(super) async fn run(self) {
        let mut client = Client::new(&self.socket, self.timeout);
        let mut tick = tokio::time::interval(self.refresh);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut logged = Logged::Nothing;
        loop {
            tick.tick().await;
            let present = self.socket.exists();
            if self.mode == Kubernetes::WhenPresent && !present {
                // No kubelet on this machine (yet): not an error, and an old answer just ages out.
                logged = self.expire(logged);
                continue;
            }
            let result =
                if present { client.devices().await } else { Err(Error::NoSocket { socket: self.socket.clone() }) };
            logged = self.record(result, logged);
        }
    }

    fn record(&self, result: Result<Devices, Error>, logged: Logged) -> Logged {
        let result = {
            let mut s = lock(&self.shared);
            s.status.refreshes += 1;
            match result {
                Ok(devices) => {
                    let allocated = devices.allocated.len();
                    s.answer = Some((devices, Instant::now()));
                    s.status.error = None;
                    Ok(allocated)
                }
                Err(e) => {
                    s.status.failures += 1;
                    s.status.error = Some(e.to_string());
                    Err(e)
                }
            }
        };
        match result {
            Ok(allocated) => {
                if logged != Logged::Answering {
                    tracing::info!(
                        socket = %self.socket.display(),
                        allocated,
                        "Kubelet PodResources answering: GPU series get pod labels"
                    );
                }
                Logged::Answering
            }
            Err(error) => {
                if logged != Logged::Failing && logged != Logged::Dropped {
                    tracing::warn!(
                        %error,
                        max_age = ?self.max_age,
                        "Kubelet PodResources failed; GPUs keep the pod labels of its last answer until it is max_age old"
                    );
                }
                match self.expire(logged) {
                    Logged::Dropped => Logged::Dropped,
                    _ => Logged::Failing,
                }
            }
        }
    }

    /// Drops an answer past `max_age`, saying so once.
    fn expire(&self, logged: Logged) -> Logged {
        let mut s = lock(&self.shared);
        match &s.answer {
            Some((_, at)) if at.elapsed() > self.max_age => {
                s.answer = None;
                drop(s);
                tracing::warn!(
                    socket = %self.socket.display(),
                    max_age = ?self.max_age,
                    "Kubelet PodResources answer too old: GPU series lose their pod labels until it answers"
                );
                Logged::Dropped
            }
            _ => logged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::proto::*;
    use super::*;

    fn devices(resource: &str, ids: &[&str]) -> ContainerDevices {
        ContainerDevices {
            resource_name: resource.into(),
            device_ids: ids.iter().map(|s| s.to_string()).collect(),
            topology: None,
        }
    }

    fn container(name: &str, devices: Vec<ContainerDevices>) -> ContainerResources {
        ContainerResources { name: name.into(), devices, ..Default::default() }
    }

    fn pod(namespace: &str, name: &str, containers: Vec<ContainerResources>) -> PodResources {
        PodResources { name: name.into(), namespace: namespace.into(), containers }
    }

    #[test]
    fn gpu_and_mig_devices_are_mapped_to_their_containers() {
        let list = ListPodResourcesResponse {
            pod_resources: vec![
                pod(
                    "ml",
                    "llama-0",
                    vec![
                        container("trainer", vec![devices("nvidia.com/gpu", &["GPU-a", "GPU-b"])]),
                        container("sidecar", vec![devices("example.com/nic", &["eth1"])]),
                    ],
                ),
                pod("infer", "vllm-7", vec![container("server", vec![devices("nvidia.com/mig-1g.10gb", &["MIG-x"])])]),
                // Time-slicing: two pods each hold a replica of GPU-c.
                pod("dev", "nb-1", vec![container("nb", vec![devices("nvidia.com/gpu.shared", &["GPU-c::0"])])]),
                pod("dev", "nb-2", vec![container("nb", vec![devices("nvidia.com/gpu.shared", &["GPU-c::1"])])]),
                pod("batch", "idx", vec![container("c", vec![devices("nvidia.com/gpu", &["3"])])]),
            ],
        };
        let allocatable = AllocatableResourcesResponse {
            devices: vec![
                devices("nvidia.com/gpu", &["GPU-a", "GPU-b", "GPU-d", "3"]),
                devices("nvidia.com/mig-1g.10gb", &["MIG-x", "MIG-y"]),
                devices("nvidia.com/gpu.shared", &["GPU-c::0", "GPU-c::1", "GPU-c::2"]),
                devices("example.com/nic", &["eth1"]),
            ],
            ..Default::default()
        };
        let d = Devices::from_answers(&list, Some(&allocatable));
        let h = |ns: &str, pod: &str, c: &str| Holder { namespace: ns.into(), pod: pod.into(), container: c.into() };
        let expected: BTreeMap<String, (String, Vec<Holder>)> = [
            ("3", "nvidia.com/gpu", vec![h("batch", "idx", "c")]),
            ("GPU-a", "nvidia.com/gpu", vec![h("ml", "llama-0", "trainer")]),
            ("GPU-b", "nvidia.com/gpu", vec![h("ml", "llama-0", "trainer")]),
            ("GPU-c", "nvidia.com/gpu.shared", vec![h("dev", "nb-1", "nb"), h("dev", "nb-2", "nb")]),
            ("MIG-x", "nvidia.com/mig-1g.10gb", vec![h("infer", "vllm-7", "server")]),
        ]
        .into_iter()
        .map(|(id, r, hs)| (id.to_string(), (r.to_string(), hs)))
        .collect();
        assert_eq!(d.allocated, expected);
        let allocatable: Vec<(&str, &str)> =
            d.allocatable.as_ref().unwrap().iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(
            allocatable,
            [
                ("3", "nvidia.com/gpu"),
                ("GPU-a", "nvidia.com/gpu"),
                ("GPU-b", "nvidia.com/gpu"),
                ("GPU-c", "nvidia.com/gpu.shared"),
                ("GPU-d", "nvidia.com/gpu"),
                ("MIG-x", "nvidia.com/mig-1g.10gb"),
                ("MIG-y", "nvidia.com/mig-1g.10gb"),
            ]
        );
        assert_eq!(Devices::from_answers(&list, None).allocatable, None);
    }

    #[test]
    fn gpu_resources() {
        let names =
            ["nvidia.com/gpu", "nvidia.com/gpu.shared", "nvidia.com/mig-3g.40gb", "nvidia.com/gpux", "amd.com/gpu"];
        let gpu: Vec<bool> = names.iter().map(|n| is_gpu_resource(n)).collect();
        assert_eq!(gpu, [true, true, true, false, false]);
    }
}
