//! GPU attribution against a fake kubelet: a tonic server of the PodResources API v1 (the messages of
//! collector/proto/podresources/v1/api.proto) on a unix socket in a temp dir, answering `List` and
//! `GetAllocatableResources` for a node with whole GPUs and MIG devices. The attribution asks it on its
//! own thread; the tests read labels as a collection would, and make the kubelet slow, stop it and
//! start it again.

use argus_collector::batch::Batch;
use argus_collector::config::{AttributionSettings, Config, Families, Kubernetes};
use argus_collector::source;
use argus_collector::source::gpu::attribution::podresources::proto;
use argus_collector::source::gpu::attribution::{Attribution, GpuRef};
use std::convert::Infallible;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tonic::body::Body;
use tonic::server::NamedService;

const GPU0: &str = "GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10";
const GPU1: &str = "GPU-0c9f2b7e-3d41-4a8b-9e6f-7a1b2c3d4e5f";
const GPU2: &str = "GPU-7d2e4f60-1a3b-4c5d-8e9f-0a1b2c3d4e5f";
const GPU3: &str = "GPU-9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d";
const MIG_A: &str = "MIG-2f6c1c8e-0a3b-5d7e-9c1f-4b2a6d8e0f13";
const MIG_B: &str = "MIG-8c4d2e1f-6a5b-5c3d-9e8f-1a2b3c4d5e6f";
const MIG_C: &str = "MIG-1d3f5b7a-9c2e-5f4a-8b6d-0c1e2f3a4b5c";

// === the fake kubelet ===

/// What the fake kubelet answers, changed by the tests while it runs.
#[derive(Clone, Default)]
struct Answers {
    list: proto::ListPodResourcesResponse,
    /// `None`: `GetAllocatableResources` is unimplemented, as in kubelets before 1.23.
    allocatable: Option<proto::AllocatableResourcesResponse>,
    /// How long each answer takes.
    delay: Duration,
}

/// The PodResourcesLister service, routed by path as tonic's generated servers do.
#[derive(Clone)]
struct Lister(Arc<Mutex<Answers>>);

impl NamedService for Lister {
    const NAME: &'static str = proto::SERVICE;
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// One unary method: the answer `pick` takes from the current answers, after their delay.
#[derive(Clone)]
struct Method<Req, Resp> {
    answers: Arc<Mutex<Answers>>,
    pick: fn(&Answers) -> Result<Resp, tonic::Status>,
    _request: std::marker::PhantomData<fn(Req)>,
}

impl<Req: Send + 'static, Resp: Send + 'static> tonic::server::UnaryService<Req> for Method<Req, Resp> {
    type Response = Resp;
    type Future = BoxFuture<Result<tonic::Response<Resp>, tonic::Status>>;

    fn call(&mut self, _: tonic::Request<Req>) -> Self::Future {
        let answers = self.answers.lock().unwrap().clone();
        let pick = self.pick;
        Box::pin(async move {
            tokio::time::sleep(answers.delay).await;
            pick(&answers).map(tonic::Response::new)
        })
    }
}

impl tower::Service<http::Request<Body>> for Lister {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<Body>, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        let answers = self.0.clone();
        match req.uri().path() {
            proto::LIST => {
                let method = Method::<proto::ListPodResourcesRequest, _> {
                    answers,
                    pick: |a| Ok(a.list.clone()),
                    _request: Default::default(),
                };
                Box::pin(async move {
                    let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
                    Ok(grpc.unary(method, req).await)
                })
            }
            proto::GET_ALLOCATABLE_RESOURCES => {
                let method = Method::<proto::AllocatableResourcesRequest, _> {
                    answers,
                    pick: |a| a.allocatable.clone().ok_or_else(|| tonic::Status::unimplemented("not in this kubelet")),
                    _request: Default::default(),
                };
                Box::pin(async move {
                    let mut grpc = tonic::server::Grpc::new(tonic_prost::ProstCodec::default());
                    Ok(grpc.unary(method, req).await)
                })
            }
            _ => Box::pin(async { Ok(tonic::Status::unimplemented("no such method").into_http()) }),
        }
    }
}

/// The fake kubelet on `socket`, on a runtime of its own: dropping it closes the listener and every
/// connection at once, as a kubelet that dies does (its socket file stays behind).
struct Kubelet {
    _runtime: tokio::runtime::Runtime,
}

impl Kubelet {
    fn start(socket: &Path, answers: Arc<Mutex<Answers>>) -> Kubelet {
        let _ = std::fs::remove_file(socket);
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime.block_on(async { tokio::net::UnixListener::bind(socket) }).unwrap();
        runtime.spawn(async move {
            tonic::transport::Server::builder()
                .add_service(Lister(answers))
                .serve_with_incoming(tokio_stream::wrappers::UnixListenerStream::new(listener))
                .await
                .unwrap();
        });
        Kubelet { _runtime: runtime }
    }
}

// === a node's answers ===

fn devices(resource: &str, ids: &[&str]) -> proto::ContainerDevices {
    proto::ContainerDevices {
        resource_name: resource.into(),
        device_ids: ids.iter().map(|s| s.to_string()).collect(),
        topology: Some(proto::TopologyInfo { nodes: vec![proto::NumaNode { id: 0 }] }),
    }
}

fn pod(namespace: &str, name: &str, containers: &[(&str, Vec<proto::ContainerDevices>)]) -> proto::PodResources {
    proto::PodResources {
        name: name.into(),
        namespace: namespace.into(),
        containers: containers
            .iter()
            .map(|(c, d)| proto::ContainerResources {
                name: c.to_string(),
                devices: d.clone(),
                cpu_ids: vec![2, 3],
                ..Default::default()
            })
            .collect(),
    }
}

/// Four GPUs, GPU3 in MIG mode with three devices: a two-GPU training pod (its sidecar holds a NIC),
/// an inference pod on one GPU, two pods on MIG devices, a pod without devices; GPU2 and MIG_C free.
fn node() -> Answers {
    Answers {
        list: proto::ListPodResourcesResponse {
            pod_resources: vec![
                pod(
                    "ml",
                    "llama-0",
                    &[
                        ("trainer", vec![devices("nvidia.com/gpu", &[GPU0, GPU1])]),
                        ("sidecar", vec![devices("example.com/rdma", &["mlx5_0"])]),
                    ],
                ),
                pod("infer", "vllm-7", &[("server", vec![devices("nvidia.com/mig-1g.10gb", &[MIG_A])])]),
                pod("infer", "whisper-2", &[("asr", vec![devices("nvidia.com/mig-2g.20gb", &[MIG_B])])]),
                pod("kube-system", "coredns-5d78c9869d-x8kq2", &[("coredns", vec![])]),
            ],
        },
        allocatable: Some(proto::AllocatableResourcesResponse {
            devices: vec![
                devices("nvidia.com/gpu", &[GPU0, GPU1, GPU2]),
                devices("nvidia.com/mig-1g.10gb", &[MIG_A, MIG_C]),
                devices("nvidia.com/mig-2g.20gb", &[MIG_B]),
                devices("example.com/rdma", &["mlx5_0", "mlx5_1"]),
            ],
            cpu_ids: vec![0, 1, 2, 3],
            memory: vec![],
        }),
        delay: Duration::ZERO,
    }
}

// === helpers ===

fn settings(socket: &Path, mode: Kubernetes) -> AttributionSettings {
    AttributionSettings {
        kubernetes: mode,
        pod_resources_socket: socket.to_path_buf(),
        refresh: Duration::from_millis(100),
        timeout: Duration::from_millis(100),
        max_age: Duration::from_secs(2),
        slurm: None,
        families: Families::all(),
    }
}

fn gpu(uuid: &str, index: u32) -> GpuRef<'_> {
    GpuRef { uuid, index: Some(index) }
}

fn mig(uuid: &str) -> GpuRef<'_> {
    GpuRef { uuid, index: None }
}

/// `labels` as text; every call must return at once, whatever the kubelet is doing.
fn labels(a: &Attribution, device: GpuRef<'_>) -> String {
    let start = Instant::now();
    let l = a.labels(device, &[]);
    let took = start.elapsed();
    assert!(took < Duration::from_millis(50), "labels() took {took:?}: a collection must never wait for the kubelet");
    l.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// Polls `f` until it holds (every 20 ms, for at most 10 s).
fn wait_until(what: &str, a: &Attribution, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{what} not within 10s; kubelet status: {:?}",
            a.kubelet_status()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn socket_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("kubelet.sock")
}

// === tests ===

#[test]
fn a_fake_kubelet_maps_whole_gpus_and_mig_devices_to_their_pods() {
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_in(&dir);
    let _kubelet = Kubelet::start(&socket, Arc::new(Mutex::new(node())));
    let a = Attribution::new(&settings(&socket, Kubernetes::On));
    wait_until("an answer", &a, || !labels(&a, gpu(GPU0, 0)).is_empty());

    assert_eq!(labels(&a, gpu(GPU0, 0)), "namespace=ml pod=llama-0 container=trainer");
    assert_eq!(labels(&a, gpu(GPU1, 1)), "namespace=ml pod=llama-0 container=trainer");
    assert_eq!(labels(&a, gpu(GPU2, 2)), "", "allocatable, allocated to no pod");
    assert_eq!(labels(&a, gpu(GPU3, 3)), "", "its MIG devices are allocated, not the GPU");
    assert_eq!(labels(&a, mig(MIG_A)), "namespace=infer pod=vllm-7 container=server");
    assert_eq!(labels(&a, mig(MIG_B)), "namespace=infer pod=whisper-2 container=asr");
    assert_eq!(labels(&a, mig(MIG_C)), "");

    let gpus = [gpu(GPU0, 0), gpu(GPU1, 1), gpu(GPU2, 2), gpu(GPU3, 3)];
    let allocations: Vec<String> = a.allocations(&gpus).iter().map(ToString::to_string).collect();
    assert_eq!(
        allocations,
        [
            format!("{GPU1} nvidia.com/gpu 1 ml/llama-0/trainer"),
            format!("{GPU0} nvidia.com/gpu 1 ml/llama-0/trainer"),
            format!("{GPU2} nvidia.com/gpu 0"),
            format!("{MIG_C} nvidia.com/mig-1g.10gb 0"),
            format!("{MIG_A} nvidia.com/mig-1g.10gb 1 infer/vllm-7/server"),
            format!("{MIG_B} nvidia.com/mig-2g.20gb 1 infer/whisper-2/asr"),
        ]
    );
    let status = a.kubelet_status().unwrap();
    assert_eq!((status.failures, status.error), (0, None));
}

#[test]
fn a_slow_or_stopped_kubelet_never_blocks_and_its_last_answer_is_kept_until_max_age() {
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_in(&dir);
    let answers = Arc::new(Mutex::new(node()));
    let kubelet = Kubelet::start(&socket, answers.clone());
    let a = Attribution::new(&settings(&socket, Kubernetes::On));
    wait_until("an answer", &a, || !labels(&a, gpu(GPU0, 0)).is_empty());

    // Slow: every refresh times out; labels come from the last answer, at once.
    answers.lock().unwrap().delay = Duration::from_secs(5);
    let failures = a.kubelet_status().unwrap().failures;
    wait_until("two timeouts", &a, || a.kubelet_status().unwrap().failures >= failures + 2);
    let status = a.kubelet_status().unwrap();
    let error = status.error.unwrap();
    assert_eq!(error, format!("kubelet PodResources at {}: no answer within 100ms", socket.display()));
    assert_eq!(labels(&a, gpu(GPU0, 0)), "namespace=ml pod=llama-0 container=trainer");

    // Fast again, with the training pod gone and GPU0 handed to another.
    {
        let mut n = answers.lock().unwrap();
        n.delay = Duration::ZERO;
        n.list.pod_resources[0] = pod("ml", "llama-1", &[("trainer", vec![devices("nvidia.com/gpu", &[GPU0])])]);
    }
    wait_until("the new answer", &a, || labels(&a, gpu(GPU0, 0)).contains("llama-1"));
    assert_eq!(labels(&a, gpu(GPU1, 1)), "");
    assert_eq!(a.kubelet_status().unwrap().error, None);

    // Stopped (its socket left behind): connections are refused; the answer is kept for max_age (2 s),
    // then dropped.
    drop(kubelet);
    let stopped = Instant::now();
    let failures = a.kubelet_status().unwrap().failures;
    wait_until("a refused refresh", &a, || a.kubelet_status().unwrap().failures > failures);
    let error = a.kubelet_status().unwrap().error.unwrap();
    assert!(error.contains("List") && error.contains("Unavailable"), "{error}");
    if stopped.elapsed() < Duration::from_millis(1500) {
        assert_eq!(labels(&a, gpu(GPU0, 0)), "namespace=ml pod=llama-1 container=trainer");
    }
    wait_until("the answer dropped", &a, || labels(&a, gpu(GPU0, 0)).is_empty());
    assert!(stopped.elapsed() >= Duration::from_millis(1800), "dropped after {:?}", stopped.elapsed());
    assert!(a.allocations(&[gpu(GPU0, 0)]).is_empty());
    assert_eq!(a.kubelet_status().unwrap().answer_age, None);

    // Started again on the same path: the client reconnects.
    let _kubelet = Kubelet::start(&socket, answers);
    wait_until("labels again", &a, || !labels(&a, gpu(GPU0, 0)).is_empty());
    assert_eq!(labels(&a, gpu(GPU0, 0)), "namespace=ml pod=llama-1 container=trainer");
}

#[test]
fn an_optional_kubelet_is_asked_once_its_socket_appears() {
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_in(&dir);
    let a = Attribution::new(&settings(&socket, Kubernetes::WhenPresent));
    std::thread::sleep(Duration::from_millis(350));
    let status = a.kubelet_status().unwrap();
    assert_eq!((status.refreshes, status.failures), (0, 0), "no socket, no kubelet: nothing tried, nothing failed");

    // A kubelet without GetAllocatableResources (before 1.23), serving devices by index.
    let mut answers = node();
    answers.allocatable = None;
    answers.list.pod_resources = vec![pod("batch", "idx", &[("c", vec![devices("nvidia.com/gpu", &["1"])])])];
    let _kubelet = Kubelet::start(&socket, Arc::new(Mutex::new(answers)));
    wait_until("an answer", &a, || !labels(&a, gpu(GPU1, 1)).is_empty());
    assert_eq!(labels(&a, gpu(GPU1, 1)), "namespace=batch pod=idx container=c");
    assert_eq!(labels(&a, gpu(GPU0, 0)), "");
    let allocations = a.allocations(&[gpu(GPU0, 0), gpu(GPU1, 1)]);
    let uuids: Vec<(&str, bool)> = allocations.iter().map(|x| (x.uuid.as_str(), x.holder.is_some())).collect();
    assert_eq!(uuids, [(GPU1, true)], "only allocated GPUs are known without GetAllocatableResources");

    // A kubelet that must be there: its absence is a failure.
    let missing = dir.path().join("no-such.sock");
    let a = Attribution::new(&settings(&missing, Kubernetes::On));
    wait_until("a failure", &a, || a.kubelet_status().unwrap().failures > 0);
    let error = a.kubelet_status().unwrap().error.unwrap();
    assert_eq!(error, format!("kubelet PodResources socket {} does not exist", missing.display()));
}

/// The gpu source as configured: its per-GPU series carry the pod the kubelet allocated the GPU to,
/// and `gpu_allocated` lists every allocated and free device.
#[test]
fn the_gpu_source_labels_its_series_with_the_pod_and_writes_the_allocations() {
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_in(&dir);
    let _kubelet = Kubelet::start(&socket, Arc::new(Mutex::new(node())));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let toml = format!(
        "[collector]\nprocfs_root = {:?}\nsysfs_root = {:?}\n[collector.labels]\nhost = \"node-7\"\n\
         [collector.gpu]\nbackend = \"fake\"\nfake_fixture = {:?}\nkernel_log = \"\"\n\
         [collector.gpu.attribution]\nkubernetes = true\npod_resources_socket = {socket:?}\nslurm = false\n\
         [collector.host]\nenabled = false\n[collector.disk]\nenabled = false\n\
         [collector.net]\nenabled = false\n[collector.events]\nenabled = false\n",
        fixtures.join("gpu/proc"),
        fixtures.join("gpu/no-such-sys"),
        fixtures.join("gpu/h100.json"),
    );
    let valid = Config::parse(&toml, "test.toml").and_then(|c| c.validate("test.toml")).expect("config");
    let mut gpu = source::build(&valid).remove(0).source;
    let start = Instant::now();
    let text = loop {
        let mut batch = Batch::new();
        gpu.collect(10_000, &mut batch).expect("collects");
        let text = batch.to_exposition();
        if text.contains("gpu_allocated") {
            break text;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no allocations within 10 s:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let line = |name: &str, gpu: &str| text.lines().find(|l| l.starts_with(&format!("{name}{{")) && l.contains(gpu));
    let temp0 = line("gpu_temperature_celsius", r#"gpu="0""#).expect("GPU 0's temperature");
    assert!(temp0.contains(r#"container="trainer""#) && temp0.contains(r#"namespace="ml""#), "{temp0}");
    assert!(temp0.contains(r#"pod="llama-0""#), "{temp0}");
    let temp1 = line("gpu_temperature_celsius", r#"gpu="1""#).expect("GPU 1's temperature");
    assert!(!temp1.contains("pod="), "GPU 1 is allocated to no pod: {temp1}");
    let allocated: Vec<&str> = text.lines().filter(|l| l.starts_with("gpu_allocated{")).collect();
    assert_eq!(allocated.len(), 6, "GPU0, GPU1, MIG_A and MIG_B held; GPU2 and MIG_C free: {allocated:#?}");
    assert_eq!(allocated.iter().filter(|l| l.ends_with(" 0") && !l.contains("pod=")).count(), 2, "{allocated:#?}");
    assert!(
        allocated.iter().any(|l| l.contains(GPU0) && l.contains(r#"pod="llama-0""#) && l.ends_with(" 1")),
        "{allocated:#?}"
    );
}
