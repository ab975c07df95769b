//! Capacity plans handed to alertd, which sends them to the scheduler receivers that take them. A
//! pool's plan is handed over on its first plan and whenever its recommended capacity changes, not
//! every round; a hand-over that fails is tried again at the pool's next plan.

use crate::capacity::Recommendation;
use argus_store_api::SecretFile;
use argus_store_api::backend::BoxFuture;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// Where changed plans go: alertd in this process, or one over HTTP.
pub trait CapacityOut: Send + Sync {
    fn push(&self, plans: Vec<Recommendation>) -> BoxFuture<'_, Result<(), String>>;
}

/// The body of `POST /api/v1/scheduler/capacity`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct CapacityPush {
    pub plans: Vec<Recommendation>,
}

/// Posts to alertd's `POST /api/v1/scheduler/capacity`.
pub struct HttpCapacityOut {
    client: reqwest::Client,
    urls: Vec<String>,
    token: Option<SecretFile>,
}

impl HttpCapacityOut {
    /// `bases` are alertd's URLs, e.g. `http://alertd-0:9700`. A plan is handed to the first that
    /// accepts it (a plan is an action for the scheduler, so one alertd delivers it, not each replica).
    pub fn new(bases: &[String]) -> Result<HttpCapacityOut, String> {
        if bases.is_empty() {
            return Err("no alert URL".into());
        }
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().map_err(|e| e.to_string())?;
        let urls = bases.iter().map(|b| format!("{}/api/v1/scheduler/capacity", b.trim_end_matches('/'))).collect();
        Ok(HttpCapacityOut { client, urls, token: None })
    }

    /// Sends every push with `Authorization: Bearer` and the token in `token`, as alerts are sent.
    pub fn with_token(self, token: Option<SecretFile>) -> HttpCapacityOut {
        HttpCapacityOut { token, ..self }
    }

    async fn push_to(&self, url: &str, body: &CapacityPush, token: Option<&str>) -> Result<(), String> {
        let req = self.client.post(url).json(body);
        let req = match token {
            Some(t) => req.bearer_auth(t),
            None => req,
        };
        let r = req.send().await.map_err(|e| format!("{url}: {e}"))?;
        let status = r.status();
        if status.is_success() {
            return Ok(());
        }
        let text = r.text().await.unwrap_or_default();
        Err(format!("{url} answered {status}: {}", text.chars().take(300).collect::<String>()))
    }
}

impl CapacityOut for HttpCapacityOut {
    fn push(&self, plans: Vec<Recommendation>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let body = CapacityPush { plans };
            let token = self.token.as_ref().map(SecretFile::read).transpose()?;
            let mut failed = Vec::new();
            for url in &self.urls {
                match self.push_to(url, &body, token.as_ref().map(|t| t.expose())).await {
                    Ok(()) => return Ok(()),
                    Err(e) => failed.push(e),
                }
            }
            Err(failed.join("; "))
        })
    }
}

/// Hands plans over when they change.
pub(super) struct Pusher {
    out: Arc<dyn CapacityOut>,
    /// The recommended capacity last handed over, by pool.
    pushed: BTreeMap<String, u64>,
}

impl Pusher {
    pub(super) fn new(out: Arc<dyn CapacityOut>) -> Pusher {
        Pusher { out, pushed: BTreeMap::new() }
    }

    /// Hands over the plans in `recs` whose recommended capacity differs from the last handed over.
    pub(super) async fn push(&mut self, recs: &[Recommendation]) {
        let changed: Vec<Recommendation> =
            recs.iter().filter(|r| self.pushed.get(&r.pool) != Some(&r.recommended)).cloned().collect();
        if changed.is_empty() {
            return;
        }
        let pools: Vec<(String, u64)> = changed.iter().map(|r| (r.pool.clone(), r.recommended)).collect();
        match self.out.push(changed).await {
            Ok(()) => {
                for (pool, recommended) in pools {
                    tracing::info!(%pool, recommended, "Capacity plan changed, handed to alertd");
                    self.pushed.insert(pool, recommended);
                }
            }
            Err(error) => {
                tracing::warn!(pools = pools.len(), %error, "Handing capacity plans to alertd failed, will retry")
            }
        }
    }
}
