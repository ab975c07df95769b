//! Scrape targets from the Kubernetes API: the pods of this node (`spec.nodeName`), as Prometheus'
//! `kubernetes_sd_configs` (`role: pod`) with the usual relabelling finds them: a running pod annotated
//! `prometheus.io/scrape: "true"` is scraped at `<scheme>://<pod IP>:<port><path>`, from
//! `prometheus.io/scheme` (default http), `prometheus.io/port` (default each declared TCP port) and
//! `prometheus.io/path` (default /metrics), its series labelled `namespace`, `pod` and `container`.
//!
//! With the `endpoints` role, as Prometheus' `role: endpointslice` with the same relabelling finds
//! them, a Service annotated `prometheus.io/scrape: "true"` has its ready endpoints scraped, each by
//! the collector of the endpoint's node (`nodeName`), so that each is scraped once across the fleet:
//! `<scheme>://<address>:<port><path>`, the port from `prometheus.io/port` or else each TCP port of
//! the EndpointSlice, labelled `namespace`, `service`, `pod` (the endpoint's target, when a Pod) and
//! `container` (when the `pod` role is on too, which lists this node's pods). EndpointSlices are
//! joined to their Service by the `kubernetes.io/service-name` label. A URL found by both roles is
//! scraped once, as the pod's.
//!
//! A plain GET of `/api/v1/pods?fieldSelector=spec.nodeName=<node>` re-listed every `refresh`, with
//! serde types for the few fields read, rather than kube-rs: one request shape, no watch state to
//! resume, and none of kube-rs' dependency tree in the node agent. `resourceVersion=0` lets the API
//! server answer from its watch cache, as kubelets' own lists do. Services and EndpointSlices cannot
//! be selected by node, so the endpoints role lists them whole (per namespace with `namespaces`),
//! from the same cache.

use crate::config::{KubernetesSettings, ScrapeTarget};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::time::Duration;

/// A list past this is refused (a node runs at most a few hundred pods; a cluster's EndpointSlices
/// are a few kB each).
const MAX_BODY: usize = 64 << 20;

/// Why the pods or endpoints could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("collector.scrape.kubernetes: {0}")]
    Setup(String),
    #[error("collector.scrape.kubernetes.token_file {path}: {source}")]
    Token { path: String, source: std::io::Error },
    #[error("kubernetes API {url}: {reason}")]
    Http { url: String, reason: String },
    #[error("kubernetes API {url}: status {status}: {message}{hint}")]
    Status { url: String, status: u16, message: String, hint: &'static str },
    #[error("kubernetes API {url}: not a {kind}: {reason}")]
    Body { url: String, kind: &'static str, reason: String },
}

/// A kind of object listed: where, and what to say when the service account may not list it.
struct Resource {
    /// The path from the API's root, `{ns}` standing for `namespaces/<name>/` or nothing.
    path: &'static str,
    list_kind: &'static str,
    forbidden: &'static str,
}

const PODS: Resource = Resource {
    path: "api/v1/{ns}pods",
    list_kind: "PodList",
    forbidden: " (the service account may not list pods: give it a ClusterRole with pods get, list)",
};
const SERVICES: Resource = Resource {
    path: "api/v1/{ns}services",
    list_kind: "ServiceList",
    forbidden: " (the service account may not list services, which the endpoints role needs: give it a ClusterRole \
                with services list)",
};
const ENDPOINT_SLICES: Resource = Resource {
    path: "apis/discovery.k8s.io/v1/{ns}endpointslices",
    list_kind: "EndpointSliceList",
    forbidden: " (the service account may not list endpointslices, which the endpoints role needs: give it a \
                ClusterRole with endpointslices list in API group discovery.k8s.io)",
};

/// Lists this node's pods (and the cluster's annotated Services' endpoints) and turns them into targets.
pub struct Discovery {
    client: reqwest::Client,
    base: String,
    node: String,
    settings: KubernetesSettings,
}

// === impl Discovery ===

impl Discovery {
    /// The API server and node from `settings` and the environment (`env` looks a variable up); the CA
    /// file read for an https API server.
    pub fn new(
        settings: &KubernetesSettings,
        timeout: Duration,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Discovery, DiscoveryError> {
        let base = settings.api_url(env).map_err(DiscoveryError::Setup)?;
        let node = settings.node(env).map_err(DiscoveryError::Setup)?;
        let mut client = reqwest::Client::builder().timeout(timeout).no_proxy();
        if base.starts_with("https://") {
            client = super::trust_ca_file(client, &settings.ca_file).map_err(DiscoveryError::Setup)?;
        }
        let client = client.build().map_err(|e| DiscoveryError::Setup(e.to_string()))?;
        Ok(Discovery { client, base, node, settings: settings.clone() })
    }

    pub fn node(&self) -> &str {
        &self.node
    }

    /// The targets now: this node's pods' in pod order, then the endpoints' in EndpointSlice order.
    pub async fn targets(&self) -> Result<Vec<ScrapeTarget>, DiscoveryError> {
        let token = match &self.settings.token_file {
            None => None,
            Some(p) => Some(
                tokio::fs::read_to_string(p)
                    .await
                    .map_err(|source| DiscoveryError::Token { path: p.display().to_string(), source })?
                    .trim()
                    .to_string(),
            ),
        };
        let token = token.as_deref();
        let mut out = Vec::new();
        let mut pods = PodList { kind: None, items: Vec::new() };
        if self.settings.pods {
            let mut query = format!("fieldSelector={}", encode(&format!("spec.nodeName={}", self.node)));
            if let Some(s) = &self.settings.label_selector {
                query.push_str(&format!("&labelSelector={}", encode(s)));
            }
            for url in self.urls(&PODS, &query) {
                let mut list: PodList = self.list(&url, token, &PODS).await?;
                out.extend(targets(&list, &self.settings, &self.node));
                pods.items.append(&mut list.items);
            }
        }
        if self.settings.endpoints {
            let query = match &self.settings.label_selector {
                Some(s) => format!("labelSelector={}", encode(s)),
                None => String::new(),
            };
            let mut services = ServiceList { kind: None, items: Vec::new() };
            for url in self.urls(&SERVICES, &query) {
                services.items.append(&mut self.list::<Service>(&url, token, &SERVICES).await?.items);
            }
            let mut slices = EndpointSliceList { kind: None, items: Vec::new() };
            for url in self.urls(&ENDPOINT_SLICES, "") {
                slices.items.append(&mut self.list::<EndpointSlice>(&url, token, &ENDPOINT_SLICES).await?.items);
            }
            out.extend(endpoint_targets(&slices, &services, &pods, &self.settings, &self.node));
        }
        // A URL found twice (by both roles) is scraped once, as found first.
        let mut seen = std::collections::HashSet::new();
        out.retain(|t| seen.insert(t.url.clone()));
        Ok(out)
    }

    /// One list request per namespace, or one for the whole cluster; `query` without
    /// `resourceVersion`, which is added.
    fn urls(&self, r: &Resource, query: &str) -> Vec<String> {
        let query =
            if query.is_empty() { "resourceVersion=0".to_string() } else { format!("{query}&resourceVersion=0") };
        if self.settings.namespaces.is_empty() {
            return vec![format!("{}/{}?{query}", self.base, r.path.replace("{ns}", ""))];
        }
        let ns = &self.settings.namespaces;
        ns.iter()
            .map(|n| format!("{}/{}?{query}", self.base, r.path.replace("{ns}", &format!("namespaces/{n}/"))))
            .collect()
    }

    async fn list<T: DeserializeOwned>(
        &self,
        url: &str,
        token: Option<&str>,
        r: &Resource,
    ) -> Result<List<T>, DiscoveryError> {
        let kind = r.list_kind;
        let http = |e: reqwest::Error| DiscoveryError::Http { url: url.to_string(), reason: super::causes(&e) };
        let mut req = self.client.get(url).header(reqwest::header::ACCEPT, "application/json");
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let mut resp = req.send().await.map_err(http)?;
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(http)? {
            if body.len() + chunk.len() > MAX_BODY {
                let reason = format!("larger than {MAX_BODY} bytes");
                return Err(DiscoveryError::Body { url: url.into(), kind, reason });
            }
            body.extend_from_slice(&chunk);
        }
        if !(200..300).contains(&status) {
            let hint = match status {
                401 => " (the token was refused: check token_file, the pod's service-account token by default)",
                403 => r.forbidden,
                _ => "",
            };
            return Err(DiscoveryError::Status { url: url.into(), status, message: status_message(&body), hint });
        }
        let list: List<T> = serde_json::from_slice(&body).map_err(|e| DiscoveryError::Body {
            url: url.to_string(),
            kind,
            reason: e.to_string(),
        })?;
        match list.kind.as_deref() {
            None => Ok(list),
            Some(k) if k == kind => Ok(list),
            Some(other) => Err(DiscoveryError::Body { url: url.into(), kind, reason: format!("kind is {other:?}") }),
        }
    }
}

/// The `message` of the API server's Status answer, or the start of whatever else it sent.
fn status_message(body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Status {
        message: String,
    }
    match serde_json::from_slice::<Status>(body) {
        Ok(s) => s.message,
        Err(_) => String::from_utf8_lossy(body).chars().take(200).collect::<String>().trim().to_string(),
    }
}

/// Percent-encodes a query value (everything but RFC 3986's unreserved characters).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

// === The API's objects: only the fields read ===

#[derive(Debug, Deserialize)]
pub struct List<T> {
    kind: Option<String>,
    items: Vec<T>,
}

pub type PodList = List<Pod>;
pub type ServiceList = List<Service>;
pub type EndpointSliceList = List<EndpointSlice>;

#[derive(Debug, Deserialize)]
pub struct Pod {
    metadata: Metadata,
    #[serde(default)]
    spec: PodSpec,
    #[serde(default)]
    status: PodStatus,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    name: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    #[serde(default)]
    node_name: String,
    #[serde(default)]
    containers: Vec<Container>,
}

#[derive(Debug, Deserialize)]
struct Container {
    name: String,
    #[serde(default)]
    ports: Vec<ContainerPort>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ContainerPort {
    container_port: u16,
    protocol: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodStatus {
    phase: Option<String>,
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Service {
    metadata: Metadata,
}

#[derive(Debug, Deserialize)]
pub struct EndpointSlice {
    metadata: Metadata,
    #[serde(default)]
    endpoints: Vec<Endpoint>,
    /// `null` means every port, which cannot be scraped without `prometheus.io/port`.
    #[serde(default)]
    ports: Option<Vec<EndpointPort>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Endpoint {
    #[serde(default)]
    addresses: Vec<String>,
    #[serde(default)]
    conditions: Conditions,
    node_name: Option<String>,
    target_ref: Option<TargetRef>,
}

#[derive(Debug, Default, Deserialize)]
struct Conditions {
    /// Unset means unknown, which the API says to read as ready.
    ready: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct TargetRef {
    kind: Option<String>,
    #[serde(default)]
    name: String,
}

#[derive(Debug, Deserialize)]
struct EndpointPort {
    port: Option<u16>,
    protocol: Option<String>,
}

/// What an object's `prometheus.io/*` annotations say about scraping it: the scheme and path, and the
/// port if one is named. `None` (with a warning naming `who`) when they cannot be used.
fn annotated(annotations: &BTreeMap<String, String>, who: &str) -> Option<(&'static str, String, Option<u16>)> {
    let ann = |k: &str| annotations.get(&format!("prometheus.io/{k}")).map(String::as_str);
    let scheme = match ann("scheme").unwrap_or("http") {
        "http" => "http",
        "https" => "https",
        other => {
            tracing::warn!(object = %who, scheme = other, "Skipped: prometheus.io/scheme is neither http nor https");
            return None;
        }
    };
    let path = ann("path").unwrap_or("/metrics");
    let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
    let port = match ann("port") {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(port) if port > 0 => Some(port),
            _ => {
                tracing::warn!(object = %who, port = p, "Skipped: prometheus.io/port is not a port number");
                return None;
            }
        },
    };
    Some((scheme, path, port))
}

/// Whether the object is wanted: annotated `prometheus.io/scrape: "true"`, or any with `annotated_only` off.
fn wanted(annotations: &BTreeMap<String, String>, settings: &KubernetesSettings) -> bool {
    !settings.annotated_only || annotations.get("prometheus.io/scrape").map(String::as_str) == Some("true")
}

/// Adds the target `<scheme>://<ip>:<port><path>` unless its URL is in `out` already; `labels` are
/// the object's (`namespace`, `pod`, …), besides the settings', `job` and `instance`.
fn push(
    out: &mut Vec<ScrapeTarget>,
    settings: &KubernetesSettings,
    endpoints: bool,
    (scheme, ip, port, path): (&str, &str, u16, &str),
    labels: &[(&str, &str)],
) {
    let host = if ip.contains(':') { format!("[{ip}]") } else { ip.to_string() };
    let url = format!("{scheme}://{host}:{port}{path}");
    if out.iter().any(|t| t.url == url) {
        return;
    }
    let mut all: BTreeMap<String, String> = settings.labels.iter().cloned().collect();
    all.insert("job".into(), settings.job(endpoints).to_string());
    all.insert("instance".into(), format!("{host}:{port}"));
    for (k, v) in labels {
        all.insert(k.to_string(), v.to_string());
    }
    out.push(ScrapeTarget { url, labels: all.into_iter().collect() });
}

/// The name of `pod`'s container declaring TCP `port`, if any.
fn container_of(pod: &Pod, port: u16) -> Option<&str> {
    pod.spec.containers.iter().find(|c| c.ports.iter().any(|x| x.container_port == port)).map(|c| c.name.as_str())
}

/// The targets of `list`'s pods on `node`: running, with an IP, annotated (unless `annotated_only`
/// is off). Pure, for tests.
pub fn targets(list: &PodList, settings: &KubernetesSettings, node: &str) -> Vec<ScrapeTarget> {
    let mut out: Vec<ScrapeTarget> = Vec::new();
    for pod in &list.items {
        let ip = pod.status.pod_ip.as_deref().unwrap_or("");
        if pod.spec.node_name != node || pod.status.phase.as_deref() != Some("Running") || ip.is_empty() {
            continue;
        }
        if !wanted(&pod.metadata.annotations, settings) {
            continue;
        }
        let who = format!("pod {}/{}", pod.metadata.namespace, pod.metadata.name);
        let Some((scheme, path, port)) = annotated(&pod.metadata.annotations, &who) else { continue };
        // (port, container declaring it)
        let ports: Vec<(u16, Option<&str>)> = match port {
            Some(port) => vec![(port, container_of(pod, port))],
            None => pod
                .spec
                .containers
                .iter()
                .flat_map(|c| c.ports.iter().map(move |x| (x, c)))
                .filter(|(x, _)| x.protocol.as_deref().is_none_or(|p| p == "TCP"))
                .map(|(x, c)| (x.container_port, Some(c.name.as_str())))
                .collect(),
        };
        for (port, container) in ports {
            let mut labels = vec![("namespace", pod.metadata.namespace.as_str()), ("pod", pod.metadata.name.as_str())];
            labels.extend(container.map(|c| ("container", c)));
            push(&mut out, settings, false, (scheme, ip, port, &path), &labels);
        }
    }
    out
}

/// The targets of the ready endpoints on `node` of `slices` whose Service (in `services`, by the
/// `kubernetes.io/service-name` label) is annotated (unless `annotated_only` is off); `pods` (this
/// node's) name the container of a port. Pure, for tests.
pub fn endpoint_targets(
    slices: &EndpointSliceList,
    services: &ServiceList,
    pods: &PodList,
    settings: &KubernetesSettings,
    node: &str,
) -> Vec<ScrapeTarget> {
    let mut out: Vec<ScrapeTarget> = Vec::new();
    for slice in &slices.items {
        let ns = slice.metadata.namespace.as_str();
        let Some(name) = slice.metadata.labels.get("kubernetes.io/service-name") else { continue };
        let Some(service) = services.items.iter().find(|s| s.metadata.namespace == ns && &s.metadata.name == name)
        else {
            continue;
        };
        if !wanted(&service.metadata.annotations, settings) {
            continue;
        }
        let who = format!("service {ns}/{name}");
        let Some((scheme, path, port)) = annotated(&service.metadata.annotations, &who) else { continue };
        let ports: Vec<u16> = match port {
            Some(p) => vec![p],
            None => (slice.ports.iter().flatten())
                .filter(|p| p.protocol.as_deref().is_none_or(|x| x == "TCP"))
                .filter_map(|p| p.port)
                .collect(),
        };
        for ep in &slice.endpoints {
            // Every address of an endpoint is the same backend: the first is scraped.
            let Some(ip) = ep.addresses.first() else { continue };
            if ep.conditions.ready == Some(false) || ep.node_name.as_deref() != Some(node) {
                continue;
            }
            let pod_name = ep.target_ref.as_ref().filter(|t| t.kind.as_deref() == Some("Pod")).map(|t| t.name.as_str());
            let pod =
                pod_name.and_then(|n| pods.items.iter().find(|p| p.metadata.namespace == ns && p.metadata.name == n));
            for &port in &ports {
                let mut labels = vec![("namespace", ns), ("service", name.as_str())];
                labels.extend(pod_name.map(|p| ("pod", p)));
                labels.extend(pod.and_then(|p| container_of(p, port)).map(|c| ("container", c)));
                push(&mut out, settings, true, (scheme, ip, port, &path), &labels);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
