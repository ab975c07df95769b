//! `[collector.scrape.kubernetes]`: scrape targets found in the Kubernetes API, as Prometheus'
//! `kubernetes_sd_configs` with `role: pod` (and, if chosen, `role: endpointslice`) and the usual
//! `prometheus.io/*` relabelling do, limited to the pods and endpoints of this collector's node.
//!
//! ```toml
//! [collector.scrape.kubernetes]
//! # roles = ["pod", "endpoints"] # default ["pod"]
//! # node = "gpu-node-7"          # default: $NODE_NAME (the downward API's spec.nodeName)
//! # namespaces = ["inference"]   # default: every namespace
//! # label_selector = "app=vllm"  # passed to the API server
//! # annotated_only = true        # keep only pods annotated prometheus.io/scrape: "true"
//! # refresh = "30s"              # how often the pods are listed again
//! ```

use super::{ConfigError, duration};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Every pod of a node listed again this often. Targets come and go with inference servers, which
/// take tens of seconds to start; at 30 s a new server is scraped within about one refresh of being
/// ready, and a thousand nodes cost the API server about 33 small, cached (`resourceVersion=0`) lists
/// a second, fewer than their kubelets' own status updates.
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(30);
const SERVICE_ACCOUNT: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The section as written. Every key is optional.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesConfig {
    /// The API server, e.g. `https://10.96.0.1:443`. Default: in-cluster, from
    /// `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`.
    pub api_url: Option<String>,
    /// The bearer token, read again at every list (Kubernetes rotates service-account tokens).
    /// Default: the pod's service-account token; "" sends none.
    pub token_file: Option<PathBuf>,
    /// PEM file of the API server's certificate authority, for an https `api_url`. Default: the pod's
    /// service-account CA (`ca.crt`).
    pub ca_file: Option<PathBuf>,
    /// This node's name: only its pods are scraped. Default: the `NODE_NAME` environment variable
    /// (set it from the downward API's `spec.nodeName`).
    pub node: Option<String>,
    /// Namespaces listed; default every namespace (which needs a ClusterRole to list pods).
    #[serde(default)]
    pub namespaces: Vec<String>,
    /// A Kubernetes label selector (`app=vllm,tier!=batch`), applied by the API server.
    pub label_selector: Option<String>,
    /// Keep only pods annotated `prometheus.io/scrape: "true"` (default true). With false, every
    /// running pod the selector matches is scraped, on each of its declared TCP ports unless
    /// `prometheus.io/port` names one.
    pub annotated_only: Option<bool>,
    /// How often the pods are listed again (default "30s").
    pub refresh: Option<String>,
    /// What is discovered: `"pod"` (annotated pods) and `"endpoints"` (the ready endpoints on this
    /// node of annotated Services). Default `["pod"]`.
    pub roles: Option<Vec<String>>,
    /// The `job` label of the targets found (default "kubernetes-pods" for pods,
    /// "kubernetes-service-endpoints" for Services' endpoints).
    pub job: Option<String>,
    /// More labels on every series of the targets found.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// Validated `[collector.scrape.kubernetes]`. Where the API server and the node are comes from the
/// environment when the source starts ([`KubernetesSettings::api_url`], [`KubernetesSettings::node`]).
#[derive(Debug, Clone, PartialEq)]
pub struct KubernetesSettings {
    pub api_url: Option<String>,
    /// `None`: no token is sent.
    pub token_file: Option<PathBuf>,
    pub ca_file: PathBuf,
    pub node: Option<String>,
    pub namespaces: Vec<String>,
    pub label_selector: Option<String>,
    pub annotated_only: bool,
    pub refresh: Duration,
    /// Annotated pods are targets (`roles` has "pod").
    pub pods: bool,
    /// Annotated Services' ready endpoints on this node are targets (`roles` has "endpoints").
    pub endpoints: bool,
    /// The configured labels, sorted by name, without `job`.
    pub labels: Vec<(String, String)>,
    /// `job` as configured; unset, each role's default ([`KubernetesSettings::job`]).
    pub job: Option<String>,
}

// === impl KubernetesConfig ===

impl KubernetesConfig {
    /// Checks every value; `bad` makes the error for a field (`collector.scrape.kubernetes.<key>`).
    pub(super) fn validate(
        &self,
        bad: &dyn Fn(&str, String) -> ConfigError,
        is_label_name: fn(&str) -> bool,
    ) -> Result<KubernetesSettings, ConfigError> {
        let field = |f: &str| format!("collector.scrape.kubernetes.{f}");
        if let Some(u) = &self.api_url {
            let rest = u.strip_prefix("https://").or_else(|| u.strip_prefix("http://")).unwrap_or("");
            if rest.is_empty() || rest.starts_with('/') {
                return Err(bad(&field("api_url"), format!("{u:?} is not an http:// or https:// URL")));
            }
        }
        if self.node.as_deref() == Some("") {
            return Err(bad(&field("node"), "empty; leave it out to use $NODE_NAME".into()));
        }
        for (i, ns) in self.namespaces.iter().enumerate() {
            let ok = !ns.is_empty() && ns.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !ok {
                return Err(bad(&field(&format!("namespaces[{i}]")), format!("{ns:?} is not a namespace name")));
            }
        }
        let refresh = match &self.refresh {
            Some(r) => duration(r).map_err(|e| bad(&field("refresh"), e))?,
            None => DEFAULT_REFRESH,
        };
        let mut labels = self.labels.clone();
        for (k, v) in &labels {
            if !is_label_name(k) || v.is_empty() {
                return Err(bad(&field(&format!("labels.{k}")), "needs a valid label name and a value".into()));
            }
        }
        if self.job.as_deref() == Some("") {
            return Err(bad(&field("job"), "empty".into()));
        }
        // `job` comes from `job` or the role's default, never from `labels`.
        labels.remove("job");
        let job = self.job.clone();
        let (mut pods, mut endpoints) = (false, false);
        let roles = self.roles.clone().unwrap_or_else(|| vec!["pod".into()]);
        if roles.is_empty() {
            return Err(bad(&field("roles"), "empty; name \"pod\", \"endpoints\" or both".into()));
        }
        for (i, r) in roles.iter().enumerate() {
            let seen = match r.as_str() {
                "pod" => std::mem::replace(&mut pods, true),
                "endpoints" => std::mem::replace(&mut endpoints, true),
                _ => {
                    return Err(bad(&field(&format!("roles[{i}]")), format!("{r:?} is not \"pod\" or \"endpoints\"")));
                }
            };
            if seen {
                return Err(bad(&field(&format!("roles[{i}]")), format!("{r:?} is named twice")));
            }
        }
        Ok(KubernetesSettings {
            api_url: self.api_url.as_ref().map(|u| u.trim_end_matches('/').to_string()),
            token_file: match &self.token_file {
                None => Some(PathBuf::from(SERVICE_ACCOUNT).join("token")),
                Some(p) if p.as_os_str().is_empty() => None,
                Some(p) => Some(p.clone()),
            },
            ca_file: self.ca_file.clone().unwrap_or_else(|| PathBuf::from(SERVICE_ACCOUNT).join("ca.crt")),
            node: self.node.clone(),
            namespaces: self.namespaces.clone(),
            label_selector: self.label_selector.clone().filter(|s| !s.is_empty()),
            annotated_only: self.annotated_only.unwrap_or(true),
            refresh,
            pods,
            endpoints,
            labels: labels.into_iter().collect(),
            job,
        })
    }
}

// === impl KubernetesSettings ===

impl KubernetesSettings {
    /// The API server's base URL: `api_url`, or the in-cluster address from the environment (`env`
    /// looks a variable up).
    pub fn api_url(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
        if let Some(u) = &self.api_url {
            return Ok(u.clone());
        }
        let host = env("KUBERNETES_SERVICE_HOST").filter(|h| !h.is_empty());
        let port = env("KUBERNETES_SERVICE_PORT").filter(|p| !p.is_empty());
        match (host, port) {
            (Some(h), Some(p)) if h.contains(':') => Ok(format!("https://[{h}]:{p}")),
            (Some(h), Some(p)) => Ok(format!("https://{h}:{p}")),
            _ => Err("not running in a Kubernetes pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT \
                 are unset): set api_url"
                .into()),
        }
    }

    /// The `job` label of the targets of a role: `job`, or the role's Prometheus-convention default.
    pub fn job(&self, endpoints: bool) -> &str {
        match (&self.job, endpoints) {
            (Some(j), _) => j,
            (None, false) => "kubernetes-pods",
            (None, true) => "kubernetes-service-endpoints",
        }
    }

    /// This node's name: `node`, or `NODE_NAME` from the environment.
    pub fn node(&self, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
        match self.node.clone().or_else(|| env("NODE_NAME").filter(|n| !n.is_empty())) {
            Some(n) => Ok(n),
            None => Err("the node's name is unknown: set NODE_NAME from the downward API (fieldRef \
                 spec.nodeName) or node = \"…\""
                .into()),
        }
    }
}
