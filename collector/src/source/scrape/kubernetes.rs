//! Scrape targets from the Kubernetes API: the pods of this node (`spec.nodeName`), as Prometheus'
//! `kubernetes_sd_configs` (`role: pod`) with the usual relabelling finds them: a running pod annotated
//! `prometheus.io/scrape: "true"` is scraped at `<scheme>://<pod IP>:<port><path>`, from
//! `prometheus.io/scheme` (default http), `prometheus.io/port` (default each declared TCP port) and
//! `prometheus.io/path` (default /metrics), its series labelled `namespace`, `pod` and `container`.
//!
//! A plain GET of `/api/v1/pods?fieldSelector=spec.nodeName=<node>` re-listed every `refresh`, with
//! serde types for the few fields read, rather than kube-rs: one request shape, no watch state to
//! resume, and none of kube-rs' dependency tree in the node agent. `resourceVersion=0` lets the API
//! server answer from its watch cache, as kubelets' own lists do.

use crate::config::{KubernetesSettings, ScrapeTarget};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// A node's pod list past this is refused (a node runs at most a few hundred pods).
const MAX_BODY: usize = 64 << 20;

/// Why the pods could not be listed.
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
    #[error("kubernetes API {url}: not a PodList: {reason}")]
    Body { url: String, reason: String },
}

/// Lists this node's pods and turns them into targets.
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

    /// The targets of this node's pods now, in pod order.
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
        let mut out = Vec::new();
        for url in self.urls() {
            let list = self.list(&url, token.as_deref()).await?;
            out.extend(targets(&list, &self.settings, &self.node));
        }
        Ok(out)
    }

    /// One list request per namespace, or one for the whole cluster.
    fn urls(&self) -> Vec<String> {
        let mut query = format!("fieldSelector={}", encode(&format!("spec.nodeName={}", self.node)));
        if let Some(s) = &self.settings.label_selector {
            query.push_str(&format!("&labelSelector={}", encode(s)));
        }
        query.push_str("&resourceVersion=0");
        if self.settings.namespaces.is_empty() {
            return vec![format!("{}/api/v1/pods?{query}", self.base)];
        }
        let ns = &self.settings.namespaces;
        ns.iter().map(|n| format!("{}/api/v1/namespaces/{n}/pods?{query}", self.base)).collect()
    }

    async fn list(&self, url: &str, token: Option<&str>) -> Result<PodList, DiscoveryError> {
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
                return Err(DiscoveryError::Body { url: url.into(), reason: format!("larger than {MAX_BODY} bytes") });
            }
            body.extend_from_slice(&chunk);
        }
        if !(200..300).contains(&status) {
            let hint = match status {
                401 => " (the token was refused: check token_file, the pod's service-account token by default)",
                403 => " (the service account may not list pods: give it a ClusterRole with pods get, list)",
                _ => "",
            };
            return Err(DiscoveryError::Status { url: url.into(), status, message: status_message(&body), hint });
        }
        let list: PodList = serde_json::from_slice(&body)
            .map_err(|e| DiscoveryError::Body { url: url.to_string(), reason: e.to_string() })?;
        match list.kind.as_deref() {
            None | Some("PodList") => Ok(list),
            Some(other) => Err(DiscoveryError::Body { url: url.into(), reason: format!("kind is {other:?}") }),
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
pub struct PodList {
    kind: Option<String>,
    items: Vec<Pod>,
}

#[derive(Debug, Deserialize)]
struct Pod {
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

/// The targets of `list`'s pods on `node`: running, with an IP, annotated (unless `annotated_only`
/// is off). Pure, for tests.
pub fn targets(list: &PodList, settings: &KubernetesSettings, node: &str) -> Vec<ScrapeTarget> {
    let mut out: Vec<ScrapeTarget> = Vec::new();
    for pod in &list.items {
        let ann = |k: &str| pod.metadata.annotations.get(&format!("prometheus.io/{k}")).map(String::as_str);
        let ip = pod.status.pod_ip.as_deref().unwrap_or("");
        if pod.spec.node_name != node || pod.status.phase.as_deref() != Some("Running") || ip.is_empty() {
            continue;
        }
        if settings.annotated_only && ann("scrape") != Some("true") {
            continue;
        }
        let who = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        let scheme = ann("scheme").unwrap_or("http");
        if scheme != "http" && scheme != "https" {
            tracing::warn!(pod = %who, scheme, "Pod skipped: prometheus.io/scheme is neither http nor https");
            continue;
        }
        let path = ann("path").unwrap_or("/metrics");
        let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
        // (port, container declaring it)
        let ports: Vec<(u16, Option<&str>)> = match ann("port") {
            Some(p) => match p.parse::<u16>() {
                Ok(port) if port > 0 => {
                    let declared =
                        pod.spec.containers.iter().find(|c| c.ports.iter().any(|x| x.container_port == port));
                    vec![(port, declared.map(|c| c.name.as_str()))]
                }
                _ => {
                    tracing::warn!(pod = %who, port = p, "Pod skipped: prometheus.io/port is not a port number");
                    continue;
                }
            },
            None => pod
                .spec
                .containers
                .iter()
                .flat_map(|c| c.ports.iter().map(move |x| (x, c)))
                .filter(|(x, _)| x.protocol.as_deref().is_none_or(|p| p == "TCP"))
                .map(|(x, c)| (x.container_port, Some(c.name.as_str())))
                .collect(),
        };
        let host = if ip.contains(':') { format!("[{ip}]") } else { ip.to_string() };
        for (port, container) in ports {
            let url = format!("{scheme}://{host}:{port}{path}");
            if out.iter().any(|t| t.url == url) {
                continue;
            }
            let mut labels: BTreeMap<String, String> = settings.labels.iter().cloned().collect();
            labels.insert("instance".into(), format!("{host}:{port}"));
            labels.insert("namespace".into(), pod.metadata.namespace.clone());
            labels.insert("pod".into(), pod.metadata.name.clone());
            if let Some(c) = container {
                labels.insert("container".into(), c.to_string());
            }
            out.push(ScrapeTarget { url, labels: labels.into_iter().collect() });
        }
    }
    out
}

#[cfg(test)]
mod tests;
