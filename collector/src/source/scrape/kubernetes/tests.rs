use super::*;
use crate::batch::Batch;
use crate::emit::Emit;
use crate::source::Task;
use crate::source::scrape::Scrape;
use expect_test::{Expect, expect};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

const NODE: &str = "v1.36-control-plane";

/// A real API server's PodList (tests/fixtures/kubernetes/README.md), parsed so that tests can change it.
fn podlist() -> Value {
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kubernetes/podlist-kind-v1.36.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn pod<'a>(list: &'a mut Value, name: &str) -> &'a mut Value {
    let items = list["items"].as_array_mut().unwrap();
    items.iter_mut().find(|p| p["metadata"]["name"] == name).unwrap_or_else(|| panic!("no pod {name}"))
}

fn annotate(list: &mut Value, name: &str, annotations: Value) {
    pod(list, name)["metadata"]["annotations"] = annotations;
}

/// Annotated as the Prometheus convention has it, to be scraped on `port`.
fn annotate_port(list: &mut Value, name: &str, port: &str) {
    annotate(list, name, json!({"prometheus.io/scrape": "true", "prometheus.io/port": port}));
}

/// What the fake API server answers, and what it was asked.
#[derive(Default)]
struct Api {
    status: u16,
    body: String,
    asked: Vec<(String, Option<String>)>,
    /// Answers (status, body) for paths ending in a key (`services`, `endpointslices`), instead of
    /// `status` and `body`.
    by_resource: BTreeMap<&'static str, (u16, String)>,
}

/// A local HTTP server answering every GET as the API server would, with `api`'s status and body.
async fn api_server(api: Arc<Mutex<Api>>) -> String {
    let app = axum::Router::new().fallback(axum::routing::get(
        move |uri: axum::http::Uri, headers: axum::http::HeaderMap| {
            let api = api.clone();
            async move {
                let mut a = api.lock().unwrap();
                let auth = headers.get("authorization").map(|v| v.to_str().unwrap().to_string());
                a.asked.push((uri.to_string(), auth));
                let resource = uri.path().rsplit('/').next().unwrap_or("");
                let (status, body) = a.by_resource.get(resource).cloned().unwrap_or((a.status, a.body.clone()));
                let status = axum::http::StatusCode::from_u16(status).unwrap();
                (status, [(axum::http::header::CONTENT_TYPE, "application/json")], body)
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(axum::serve(listener, app).into_future());
    format!("http://{addr}")
}

/// Settings from `[collector.scrape.kubernetes]` TOML, with the API server and a token file.
fn settings(api: &str, token: &std::path::Path, extra: &str) -> KubernetesSettings {
    let toml = format!(
        "[collector.scrape.kubernetes]\napi_url = \"{api}\"\ntoken_file = \"{}\"\nnode = \"{NODE}\"\n{extra}",
        token.display()
    );
    let v = crate::config::Config::parse(&toml, "-").unwrap().validate("-").unwrap();
    v.scrape.unwrap().settings.kubernetes.unwrap()
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn shown(targets: &[ScrapeTarget]) -> String {
    let mut s = String::new();
    for t in targets {
        let labels: Vec<String> = t.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
        s.push_str(&format!("{} {}\n", t.url, labels.join(" ")));
    }
    s
}

struct Fixture {
    api: Arc<Mutex<Api>>,
    base: String,
    token: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

async fn fixture(list: &Value) -> Fixture {
    let api = Arc::new(Mutex::new(Api { status: 200, body: list.to_string(), asked: Vec::new(), ..Api::default() }));
    let base = api_server(api.clone()).await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "sa-token-1\n").unwrap();
    Fixture { api, base, token, _dir: dir }
}

async fn discovered(f: &Fixture, extra: &str) -> Result<Vec<ScrapeTarget>, DiscoveryError> {
    let d = Discovery::new(&settings(&f.base, &f.token, extra), Duration::from_secs(5), &no_env).unwrap();
    d.targets().await
}

fn check(targets: &[ScrapeTarget], expected: Expect) {
    expected.assert_eq(&shown(targets));
}

#[tokio::test]
async fn discovery_finds_the_annotated_running_pods_of_this_node_only() {
    let mut list = podlist();
    // Annotated as the Prometheus convention has it: found.
    annotate_port(&mut list, "coredns-589f44dc88-4fpns", "9153");
    // Annotated, but on another node (an API server ignoring the field selector must not matter).
    annotate_port(&mut list, "coredns-589f44dc88-lxdzt", "9153");
    pod(&mut list, "coredns-589f44dc88-lxdzt")["spec"]["nodeName"] = json!("gpu-node-2");
    // Annotated but not running.
    annotate(&mut list, "kube-scheduler-v1.36-control-plane", json!({"prometheus.io/scrape": "true"}));
    pod(&mut list, "kube-scheduler-v1.36-control-plane")["status"]["phase"] = json!("Pending");
    // Annotated "false", and an https one on a host-network pod with its own path.
    annotate(&mut list, "kube-proxy-hsdvx", json!({"prometheus.io/scrape": "false", "prometheus.io/port": "10249"}));
    annotate(
        &mut list,
        "kube-controller-manager-v1.36-control-plane",
        json!({"prometheus.io/scrape": "true", "prometheus.io/scheme": "https", "prometheus.io/path": "stats"}),
    );
    let f = fixture(&list).await;
    check(
        &discovered(&f, "").await.unwrap(),
        expect![[r#"
            http://10.244.0.3:9153/metrics container=coredns instance=10.244.0.3:9153 job=kubernetes-pods namespace=kube-system pod=coredns-589f44dc88-4fpns
            https://172.18.0.3:10257/stats container=kube-controller-manager instance=172.18.0.3:10257 job=kubernetes-pods namespace=kube-system pod=kube-controller-manager-v1.36-control-plane
        "#]],
    );
    let asked = f.api.lock().unwrap().asked.clone();
    assert_eq!(
        asked,
        [(
            "/api/v1/pods?fieldSelector=spec.nodeName%3Dv1.36-control-plane&resourceVersion=0".to_string(),
            Some("Bearer sa-token-1".to_string())
        )]
    );

    // The real list as served: nothing is annotated, so nothing is found …
    let f = fixture(&podlist()).await;
    assert!(discovered(&f, "").await.unwrap().is_empty());
    // … unless every pod the selector matches is wanted: each declared TCP port of each running pod,
    // listed per namespace with the selector passed on.
    let extra = "annotated_only = false\nnamespaces = [\"kube-system\"]\nlabel_selector = \"k8s-app in (kube-dns)\"\njob = \"k8s\"\nlabels = { cluster = \"kind\" }\n";
    let found = discovered(&f, extra).await.unwrap();
    check(
        &found[..5],
        expect![[r#"
            http://10.244.0.3:53/metrics cluster=kind container=coredns instance=10.244.0.3:53 job=k8s namespace=kube-system pod=coredns-589f44dc88-4fpns
            http://10.244.0.3:9153/metrics cluster=kind container=coredns instance=10.244.0.3:9153 job=k8s namespace=kube-system pod=coredns-589f44dc88-4fpns
            http://10.244.0.3:8080/metrics cluster=kind container=coredns instance=10.244.0.3:8080 job=k8s namespace=kube-system pod=coredns-589f44dc88-4fpns
            http://10.244.0.3:8181/metrics cluster=kind container=coredns instance=10.244.0.3:8181 job=k8s namespace=kube-system pod=coredns-589f44dc88-4fpns
            http://10.244.0.2:53/metrics cluster=kind container=coredns instance=10.244.0.2:53 job=k8s namespace=kube-system pod=coredns-589f44dc88-lxdzt
        "#]],
    );
    // Two CoreDNS pods with four TCP ports each, etcd, the API server, the controller manager and the
    // scheduler with one each; kindnet and kube-proxy declare none.
    assert_eq!(found.len(), 12, "{}", shown(&found));
    let asked = f.api.lock().unwrap().asked.last().unwrap().0.clone();
    assert_eq!(
        asked,
        "/api/v1/namespaces/kube-system/pods?fieldSelector=spec.nodeName%3Dv1.36-control-plane&labelSelector=k8s-app%20in%20%28kube-dns%29&resourceVersion=0"
    );
}

#[tokio::test]
async fn discovery_follows_pods_coming_and_going_between_two_lists() {
    let mut list = podlist();
    annotate_port(&mut list, "coredns-589f44dc88-4fpns", "9153");
    let f = fixture(&list).await;
    let d = Discovery::new(&settings(&f.base, &f.token, ""), Duration::from_secs(5), &no_env).unwrap();
    check(
        &d.targets().await.unwrap(),
        expect![[r#"
            http://10.244.0.3:9153/metrics container=coredns instance=10.244.0.3:9153 job=kubernetes-pods namespace=kube-system pod=coredns-589f44dc88-4fpns
        "#]],
    );
    // The first pod is deleted, the second annotated with a port no container declares; the token
    // was rotated meanwhile.
    list["items"].as_array_mut().unwrap().retain(|p| p["metadata"]["name"] != "coredns-589f44dc88-4fpns");
    annotate_port(&mut list, "coredns-589f44dc88-lxdzt", "9999");
    f.api.lock().unwrap().body = list.to_string();
    std::fs::write(&f.token, "sa-token-2").unwrap();
    check(
        &d.targets().await.unwrap(),
        expect![[r#"
            http://10.244.0.2:9999/metrics instance=10.244.0.2:9999 job=kubernetes-pods namespace=kube-system pod=coredns-589f44dc88-lxdzt
        "#]],
    );
    assert_eq!(f.api.lock().unwrap().asked[1].1.as_deref(), Some("Bearer sa-token-2"));
}

#[tokio::test]
async fn errors_name_what_is_wrong() {
    let f = fixture(&podlist()).await;
    let err =
        |e: DiscoveryError| e.to_string().replace(&f.base, "API").replace(&f._dir.path().display().to_string(), "DIR");
    // The API server's own refusal, as it words it.
    let unauthorized = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401});
    *f.api.lock().unwrap() = Api { status: 401, body: unauthorized.to_string(), asked: Vec::new(), ..Api::default() };
    expect!["kubernetes API API/api/v1/pods?fieldSelector=spec.nodeName%3Dv1.36-control-plane&resourceVersion=0: status 401: Unauthorized (the token was refused: check token_file, the pod's service-account token by default)"]
        .assert_eq(&err(discovered(&f, "").await.unwrap_err()));
    let forbidden = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "pods is forbidden: User \"system:serviceaccount:argus:argus-collector\" cannot list resource \"pods\" in API group \"\" at the cluster scope",
        "reason": "Forbidden", "code": 403});
    *f.api.lock().unwrap() = Api { status: 403, body: forbidden.to_string(), asked: Vec::new(), ..Api::default() };
    expect![[r#"kubernetes API API/api/v1/pods?fieldSelector=spec.nodeName%3Dv1.36-control-plane&resourceVersion=0: status 403: pods is forbidden: User "system:serviceaccount:argus:argus-collector" cannot list resource "pods" in API group "" at the cluster scope (the service account may not list pods: give it a ClusterRole with pods get, list)"#]]
        .assert_eq(&err(discovered(&f, "").await.unwrap_err()));
    // A body cut short, and JSON of another kind.
    let body = podlist().to_string();
    *f.api.lock().unwrap() =
        Api { status: 200, body: body[..body.len() / 2].to_string(), asked: Vec::new(), ..Api::default() };
    let e = err(discovered(&f, "").await.unwrap_err());
    assert!(
        e.starts_with("kubernetes API API/api/v1/pods?") && e.contains(": not a PodList: EOF while parsing"),
        "{e}"
    );
    *f.api.lock().unwrap() = Api {
        status: 200,
        body: json!({"kind": "NodeList", "items": []}).to_string(),
        asked: Vec::new(),
        ..Api::default()
    };
    expect![[r#"kubernetes API API/api/v1/pods?fieldSelector=spec.nodeName%3Dv1.36-control-plane&resourceVersion=0: not a PodList: kind is "NodeList""#]]
        .assert_eq(&err(discovered(&f, "").await.unwrap_err()));
    // The token file gone.
    std::fs::remove_file(&f.token).unwrap();
    expect!["collector.scrape.kubernetes.token_file DIR/token: No such file or directory (os error 2)"]
        .assert_eq(&err(discovered(&f, "").await.unwrap_err()));

    // Outside a pod, without api_url or the node's name; an https API server without its CA file.
    let in_cluster =
        crate::config::Config::parse("[collector.scrape.kubernetes]\n", "-").unwrap().validate("-").unwrap();
    let k = in_cluster.scrape.unwrap().settings.kubernetes.unwrap();
    let setup = |env: &dyn Fn(&str) -> Option<String>| match Discovery::new(&k, Duration::from_secs(1), env) {
        Ok(_) => "started".to_string(),
        Err(e) => e.to_string(),
    };
    expect!["collector.scrape.kubernetes: not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset): set api_url"]
        .assert_eq(&setup(&no_env));
    let host_only = |v: &str| {
        (v.starts_with("KUBERNETES_SERVICE_")).then(|| if v.ends_with("HOST") { "fd00::1" } else { "443" }.to_string())
    };
    expect![[r#"collector.scrape.kubernetes: the node's name is unknown: set NODE_NAME from the downward API (fieldRef spec.nodeName) or node = "…""#]]
        .assert_eq(&setup(&host_only));
    let all = |v: &str| host_only(v).or_else(|| (v == "NODE_NAME").then(|| NODE.to_string()));
    expect!["collector.scrape.kubernetes: ca_file /var/run/secrets/kubernetes.io/serviceaccount/ca.crt: No such file or directory (os error 2)"]
        .assert_eq(&setup(&all));
    assert_eq!(k.api_url(&all).unwrap(), "https://[fd00::1]:443");
}

/// An HTTPS API server on loopback with a certificate for `localhost` from a fresh CA, answering every
/// request with `body`: the CA's PEM and the port.
async fn https_api(body: String) -> (String, u16) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_rustls::rustls;
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "kubernetes test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".into()]).unwrap().signed_by(&key, &issuer).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()))
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (acceptor, body) = (acceptor.clone(), body.clone());
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(tcp).await else { return };
                // A GET has no body: the request ends with its headers.
                let (mut buf, mut chunk) = (Vec::new(), [0u8; 4096]);
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(body.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    (ca_cert.pem(), port)
}

#[tokio::test]
async fn discovery_trusts_the_api_servers_ca_file_and_only_it() {
    let mut list = podlist();
    annotate_port(&mut list, "coredns-589f44dc88-4fpns", "9153");
    let (ca, port) = https_api(list.to_string()).await;
    let (other_ca, _) = https_api(String::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "t").unwrap();
    let base = format!("https://localhost:{port}");
    let with_ca = |pem: &str, name: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, pem).unwrap();
        let s = settings(&base, &token, &format!("ca_file = \"{}\"\n", file.display()));
        Discovery::new(&s, Duration::from_secs(5), &no_env).unwrap()
    };
    check(
        &with_ca(&ca, "ca.crt").targets().await.unwrap(),
        expect![[r#"
            http://10.244.0.3:9153/metrics container=coredns instance=10.244.0.3:9153 job=kubernetes-pods namespace=kube-system pod=coredns-589f44dc88-4fpns
        "#]],
    );
    // Another CA's certificate file: the server is not trusted, and the error says why.
    let e = with_ca(&other_ca, "other.crt").targets().await.unwrap_err().to_string();
    assert!(e.starts_with(&format!("kubernetes API {base}/api/v1/pods?")), "{e}");
    assert!(e.contains("invalid peer certificate"), "{e}");
}

#[test]
fn configuration_errors_name_the_key() {
    let err = |body: &str| {
        crate::config::Config::parse(&format!("[collector.scrape.kubernetes]\n{body}\n"), "argus.toml")
            .unwrap()
            .validate("argus.toml")
            .unwrap_err()
            .to_string()
    };
    expect![[r#"argus.toml: collector.scrape.kubernetes.api_url: "kubernetes:443" is not an http:// or https:// URL"#]]
        .assert_eq(&err("api_url = \"kubernetes:443\""));
    expect![[r#"argus.toml: collector.scrape.kubernetes.namespaces[1]: "Inference" is not a namespace name"#]]
        .assert_eq(&err("namespaces = [\"ok\", \"Inference\"]"));
    expect![[
        r#"argus.toml: collector.scrape.kubernetes.refresh: "often" is not a duration (e.g. 500ms, 10s, 5m, 35d)"#
    ]]
    .assert_eq(&err("refresh = \"often\""));
    expect!["argus.toml: collector.scrape.kubernetes.node: empty; leave it out to use $NODE_NAME"]
        .assert_eq(&err("node = \"\""));
    expect![[r#"argus.toml: collector.scrape.kubernetes.roles[1]: "endpointslices" is not "pod" or "endpoints""#]]
        .assert_eq(&err("roles = [\"pod\", \"endpointslices\"]"));
    expect![[r#"argus.toml: collector.scrape.kubernetes.roles: empty; name "pod", "endpoints" or both"#]]
        .assert_eq(&err("roles = []"));
    expect![[r#"argus.toml: collector.scrape.kubernetes.roles[1]: "pod" is named twice"#]]
        .assert_eq(&err("roles = [\"pod\", \"pod\"]"));
}

/// The scrape source with discovery: a pod whose IP and annotated port are a local metrics server's is
/// scraped, its series labelled with its namespace, pod and container.
#[tokio::test]
async fn the_scrape_source_scrapes_the_pods_it_finds() {
    let metrics = axum::Router::new()
        .route("/metrics", axum::routing::get(|| async { "vllm:num_requests_running{engine=\"0\"} 3\n" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(axum::serve(listener, metrics).into_future());

    let mut list = podlist();
    annotate_port(&mut list, "coredns-589f44dc88-4fpns", &port.to_string());
    pod(&mut list, "coredns-589f44dc88-4fpns")["status"]["podIP"] = json!("127.0.0.1");
    // CoreDNS' port named "metrics" (9153) becomes the metrics server's, so the container is known.
    let metrics_port = &mut pod(&mut list, "coredns-589f44dc88-4fpns")["spec"]["containers"][0]["ports"][2];
    assert_eq!(metrics_port["name"], "metrics");
    metrics_port["containerPort"] = json!(port);
    let f = fixture(&list).await;
    let settings =
        crate::config::ScrapeSettings { targets: Vec::new(), kubernetes: Some(settings(&f.base, &f.token, "")) };
    let task: Box<dyn Task> = Box::new(Scrape::new(Duration::from_millis(50), Duration::from_secs(5), settings));
    let (emit, mut rx) = Emit::channel(vec![("host".into(), NODE.into())], 4);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let run = tokio::spawn(task.run(emit, stop_rx));
    let b: Batch = rx.recv().await.unwrap();
    let _ = stop_tx.send(true);
    run.await.unwrap();
    let text = b.to_exposition().replace(&format!(":{port}"), ":PORT");
    assert!(
        text.contains(r#"vllm:num_requests_running{container="coredns", engine="0", host="v1.36-control-plane", instance="127.0.0.1:PORT", job="kubernetes-pods", namespace="kube-system", pod="coredns-589f44dc88-4fpns"} 3"#),
        "{text}"
    );
    assert!(
        text.contains(r#"argus_collector_source_success{host="v1.36-control-plane", source="scrape"} 1"#),
        "{text}"
    );
}

/// A real API server's EndpointSliceList and ServiceList (tests/fixtures/kubernetes/README.md), parsed
/// so that tests can change them.
fn fixture_json(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kubernetes").join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn slice<'a>(list: &'a mut Value, name: &str) -> &'a mut Value {
    let items = list["items"].as_array_mut().unwrap();
    items.iter_mut().find(|s| s["metadata"]["name"] == name).unwrap_or_else(|| panic!("no EndpointSlice {name}"))
}

/// The fixtures as an endpoints test wants them: every endpoint of the two slices on this node; the
/// `kubernetes` Service's endpoint, recorded terminating, made ready (so that only its Service's
/// missing annotations keep it out); kube-dns' slice with two more endpoints, one not ready and one
/// on another node; the ServiceList with the `kubernetes` Service too (a copy of kube-dns' without its
/// annotations) so that its slice has an unannotated Service.
fn endpoints_fixtures() -> (Value, Value) {
    let mut slices = fixture_json("endpointslicelist-kind.json");
    let api = &mut slice(&mut slices, "kubernetes")["endpoints"][0];
    api["nodeName"] = json!(NODE);
    api["conditions"] = json!({"ready": true, "serving": true, "terminating": false});
    let dns = slice(&mut slices, "kube-dns-22mvb");
    dns["endpoints"][0]["nodeName"] = json!(NODE);
    let mut not_ready = dns["endpoints"][0].clone();
    not_ready["addresses"] = json!(["10.244.0.4"]);
    not_ready["conditions"]["ready"] = json!(false);
    let mut elsewhere = dns["endpoints"][0].clone();
    elsewhere["addresses"] = json!(["10.244.1.5"]);
    elsewhere["nodeName"] = json!("gpu-node-2");
    dns["endpoints"].as_array_mut().unwrap().extend([not_ready, elsewhere]);
    let mut services = fixture_json("servicelist-kind.json");
    let mut kubernetes = services["items"][0].clone();
    kubernetes["metadata"]["name"] = json!("kubernetes");
    kubernetes["metadata"]["namespace"] = json!("default");
    kubernetes["metadata"].as_object_mut().unwrap().remove("annotations");
    services["items"].as_array_mut().unwrap().push(kubernetes);
    (slices, services)
}

/// A fake API server answering pods with `pods`, and services and EndpointSlices with the fixtures.
async fn endpoints_fixture(pods: &Value, slices: &Value, services: &Value) -> Fixture {
    let f = fixture(pods).await;
    let mut a = f.api.lock().unwrap();
    a.by_resource.insert("services", (200, services.to_string()));
    a.by_resource.insert("endpointslices", (200, slices.to_string()));
    drop(a);
    f
}

#[tokio::test]
async fn endpoints_role_finds_annotated_services_ready_endpoints_on_this_node_only() {
    let (slices, services) = endpoints_fixtures();
    let f = endpoints_fixture(&podlist(), &slices, &services).await;
    // kube-dns is annotated port 9153: its ready endpoint on this node is found, once; the not-ready
    // one, the one on gpu-node-2 and the unannotated `kubernetes` Service's are not.
    check(
        &discovered(&f, "roles = [\"endpoints\"]\n").await.unwrap(),
        expect![[r#"
            http://10.244.0.3:9153/metrics instance=10.244.0.3:9153 job=kubernetes-service-endpoints namespace=kube-system pod=coredns-66bff467f8-z8czk service=kube-dns
        "#]],
    );
    let asked: Vec<String> = f.api.lock().unwrap().asked.iter().map(|(u, _)| u.clone()).collect();
    assert_eq!(
        asked,
        ["/api/v1/services?resourceVersion=0", "/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0"]
    );

    // Both roles, per namespace, with the Service's own scheme and path: the endpoint's target Pod
    // renamed to a pod of this node's PodList, which names the container declaring the port.
    let (mut slices, mut services) = endpoints_fixtures();
    slice(&mut slices, "kube-dns-22mvb")["endpoints"][0]["targetRef"]["name"] = json!("coredns-589f44dc88-4fpns");
    let ann = &mut services["items"][0]["metadata"]["annotations"];
    ann["prometheus.io/path"] = json!("dns-metrics");
    ann["prometheus.io/scheme"] = json!("https");
    // The other CoreDNS pod is annotated too, on the same port as the Service's: scraped once, as the pod.
    let mut pods = podlist();
    annotate(
        &mut pods,
        "coredns-589f44dc88-lxdzt",
        json!({"prometheus.io/scrape": "true", "prometheus.io/port": "9153", "prometheus.io/scheme": "https", "prometheus.io/path": "/dns-metrics"}),
    );
    slice(&mut slices, "kube-dns-22mvb")["endpoints"][1]["conditions"]["ready"] = json!(true);
    slice(&mut slices, "kube-dns-22mvb")["endpoints"][1]["addresses"] = json!(["10.244.0.2"]);
    let f = endpoints_fixture(&pods, &slices, &services).await;
    let extra = "roles = [\"pod\", \"endpoints\"]\nnamespaces = [\"kube-system\", \"default\"]\nlabels = { cluster = \"kind\" }\n";
    check(
        &discovered(&f, extra).await.unwrap(),
        expect![[r#"
            https://10.244.0.2:9153/dns-metrics cluster=kind container=coredns instance=10.244.0.2:9153 job=kubernetes-pods namespace=kube-system pod=coredns-589f44dc88-lxdzt
            https://10.244.0.3:9153/dns-metrics cluster=kind container=coredns instance=10.244.0.3:9153 job=kubernetes-service-endpoints namespace=kube-system pod=coredns-589f44dc88-4fpns service=kube-dns
        "#]],
    );
    let asked: Vec<String> =
        f.api.lock().unwrap().asked.iter().map(|(u, _)| u.split('?').next().unwrap().to_string()).collect();
    assert_eq!(
        asked,
        [
            "/api/v1/namespaces/kube-system/pods",
            "/api/v1/namespaces/default/pods",
            "/api/v1/namespaces/kube-system/services",
            "/api/v1/namespaces/default/services",
            "/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices",
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        ]
    );

    // Without annotated_only, every Service's ready endpoints on this node, on each TCP port of its
    // slice (kube-dns' UDP port 53 is not scraped), labelled with `job`.
    let (slices, services) = endpoints_fixtures();
    let f = endpoints_fixture(&podlist(), &slices, &services).await;
    check(
        &discovered(&f, "roles = [\"endpoints\"]\nannotated_only = false\njob = \"k8s\"\n").await.unwrap(),
        expect![[r#"
            http://172.18.0.2:6443/metrics instance=172.18.0.2:6443 job=k8s namespace=default service=kubernetes
            http://10.244.0.3:9153/metrics instance=10.244.0.3:9153 job=k8s namespace=kube-system pod=coredns-66bff467f8-z8czk service=kube-dns
        "#]],
    );
}

#[tokio::test]
async fn endpoints_role_errors_name_what_is_wrong() {
    let (slices, services) = endpoints_fixtures();
    let f = endpoints_fixture(&podlist(), &slices, &services).await;
    let err = |e: DiscoveryError| e.to_string().replace(&f.base, "API");
    let forbidden = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "services is forbidden: User \"system:serviceaccount:argus:argus-collector\" cannot list resource \"services\" in API group \"\" at the cluster scope",
        "reason": "Forbidden", "code": 403});
    f.api.lock().unwrap().by_resource.insert("services", (403, forbidden.to_string()));
    expect![[r#"kubernetes API API/api/v1/services?resourceVersion=0: status 403: services is forbidden: User "system:serviceaccount:argus:argus-collector" cannot list resource "services" in API group "" at the cluster scope (the service account may not list services, which the endpoints role needs: give it a ClusterRole with services list)"#]]
        .assert_eq(&err(discovered(&f, "roles = [\"endpoints\"]\n").await.unwrap_err()));
    // The services listed, the EndpointSlices forbidden, then answered with another kind.
    {
        let mut a = f.api.lock().unwrap();
        a.by_resource.insert("services", (200, services.to_string()));
        let forbidden = json!({"message": "endpointslices.discovery.k8s.io is forbidden"});
        a.by_resource.insert("endpointslices", (403, forbidden.to_string()));
    }
    expect!["kubernetes API API/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0: status 403: endpointslices.discovery.k8s.io is forbidden (the service account may not list endpointslices, which the endpoints role needs: give it a ClusterRole with endpointslices list in API group discovery.k8s.io)"]
        .assert_eq(&err(discovered(&f, "roles = [\"endpoints\"]\n").await.unwrap_err()));
    f.api.lock().unwrap().by_resource.insert("endpointslices", (200, services.to_string()));
    expect![[r#"kubernetes API API/apis/discovery.k8s.io/v1/endpointslices?resourceVersion=0: not a EndpointSliceList: kind is "ServiceList""#]]
        .assert_eq(&err(discovered(&f, "roles = [\"endpoints\"]\n").await.unwrap_err()));
    // With the pod role only (the default), neither is asked for.
    f.api.lock().unwrap().asked.clear();
    discovered(&f, "").await.unwrap();
    assert_eq!(f.api.lock().unwrap().asked.len(), 1);
}
