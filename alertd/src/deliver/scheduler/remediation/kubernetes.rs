//! Kubernetes: a node with a GPU fault gets a `NoSchedule` taint (`argus.io/gpu-fault=<reason>`) or a
//! node condition, through the API server. The taint is added to the node's own list (read first,
//! written back with its `resourceVersion`, so a concurrent change is a conflict to retry rather than
//! a lost taint); a condition is merged into the status by its `type` (strategic merge patch).

pub use crate::receiver::{
    DEFAULT_TAINT_KEY, IN_CLUSTER_CA, IN_CLUSTER_TOKEN, IN_CLUSTER_URL, KubernetesConfig, NodeAction,
};

use super::super::super::http::classify;
use super::super::super::{BoxFuture, DeliverError};
use super::{Fault, Outcome, Target};
use crate::time::Timestamp;
use serde_json::{Value, json};

pub const CONDITION_TYPE: &str = "ArgusGPUFault";
/// Strategic merge patch: Kubernetes' own patch type, merging `conditions` by `type`.
pub const PATCH_CONTENT_TYPE: &str = "application/strategic-merge-patch+json";

pub struct Kubernetes {
    pub cfg: KubernetesConfig,
    pub client: reqwest::Client,
}

impl Kubernetes {
    /// A client trusting the configured CA besides the system's.
    pub fn new(cfg: KubernetesConfig) -> Result<Kubernetes, DeliverError> {
        let mut b = reqwest::Client::builder();
        if let Some(p) = &cfg.ca_file {
            let bad =
                |e: &dyn std::fmt::Display| DeliverError::Request(format!("kubernetes.ca_file {}: {e}", p.display()));
            let pem = std::fs::read(p).map_err(|e| bad(&e))?;
            for c in reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(&e))? {
                b = b.add_root_certificate(c);
            }
        }
        let client = b.build().map_err(|e| DeliverError::Request(e.to_string()))?;
        Ok(Kubernetes { cfg, client })
    }

    fn node_url(&self, node: &str) -> String {
        format!("{}/api/v1/nodes/{node}", self.cfg.api_url.trim_end_matches('/'))
    }

    /// The token is read at each request: in-cluster tokens are rotated.
    fn token(&self) -> Result<String, DeliverError> {
        let t = std::fs::read_to_string(&self.cfg.bearer_token_file).map_err(|e| {
            DeliverError::Request(format!("kubernetes.bearer_token_file {}: {e}", self.cfg.bearer_token_file.display()))
        })?;
        Ok(format!("Bearer {}", t.trim()))
    }

    async fn call(&self, req: reqwest::RequestBuilder) -> Result<Value, DeliverError> {
        let resp = req
            .timeout(self.cfg.timeout)
            .header(reqwest::header::AUTHORIZATION, self.token()?)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(classify)?;
        let status = resp.status();
        let bytes = resp.bytes().await.map_err(classify)?;
        if status.is_success() {
            return serde_json::from_slice(&bytes)
                .map_err(|e| DeliverError::Request(format!("api server answer: {e}")));
        }
        // The API server's `Status` object says why.
        let why = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| String::from_utf8_lossy(&bytes).chars().take(256).collect());
        match status.as_u16() {
            // Someone changed the node between our read and write: read it again.
            409 => Err(DeliverError::Request(format!("conflict: {why}"))),
            s => Err(DeliverError::Status { status: s, retry_after: None, body: why }),
        }
    }

    /// The taint this fault adds.
    fn taint(key: &str, effect: &str, f: &Fault, now: Timestamp) -> Value {
        json!({"key": key, "value": f.reason, "effect": effect, "timeAdded": now})
    }

    fn condition(f: &Fault, now: Timestamp) -> Value {
        json!({
            "type": CONDITION_TYPE,
            "status": "True",
            "reason": camel(&f.reason),
            "message": format!("argus: {} ({}) since {}", f.reason, f.alertname, f.starts_at),
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        })
    }
}

/// `xid-79` → `Xid79`: condition reasons are CamelCase.
fn camel(s: &str) -> String {
    s.split('-')
        .map(|w| {
            let mut c = w.chars();
            c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
        })
        .collect()
}

impl Target for Kubernetes {
    fn name(&self) -> &'static str {
        "kubernetes"
    }

    fn describe(&self, f: &Fault) -> String {
        match &self.cfg.action {
            NodeAction::Taint { key, effect } => {
                format!("PATCH {} taint {key}={}:{effect}", self.node_url(&f.node), f.reason)
            }
            NodeAction::Condition => format!(
                "PATCH {}/status condition {CONDITION_TYPE}=True reason {}",
                self.node_url(&f.node),
                camel(&f.reason)
            ),
        }
    }

    fn apply<'a>(&'a self, f: &'a Fault) -> BoxFuture<'a, Result<Outcome, DeliverError>> {
        Box::pin(async move {
            let now = Timestamp::from_millis(super::super::super::now_millis());
            let url = self.node_url(&f.node);
            let patch = match &self.cfg.action {
                NodeAction::Taint { key, effect } => {
                    let node = self.call(self.client.get(&url)).await?;
                    let mut taints =
                        node.pointer("/spec/taints").and_then(Value::as_array).cloned().unwrap_or_default();
                    if taints.iter().any(|t| t.get("key").and_then(Value::as_str) == Some(key)) {
                        return Ok(Outcome::Already);
                    }
                    taints.push(Self::taint(key, effect, f, now));
                    let version = node.pointer("/metadata/resourceVersion").cloned().unwrap_or(Value::Null);
                    json!({"metadata": {"resourceVersion": version}, "spec": {"taints": taints}})
                }
                NodeAction::Condition => json!({"status": {"conditions": [Self::condition(f, now)]}}),
            };
            let url = match self.cfg.action {
                NodeAction::Taint { .. } => url,
                NodeAction::Condition => format!("{url}/status"),
            };
            let body = serde_json::to_vec(&patch).map_err(|e| DeliverError::Render(e.to_string()))?;
            let req = self.client.patch(url).header(reqwest::header::CONTENT_TYPE, PATCH_CONTENT_TYPE).body(body);
            self.call(req).await?;
            Ok(Outcome::Applied)
        })
    }
}
