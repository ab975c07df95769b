//! `scrape`: Prometheus text / OpenMetrics endpoints of inference servers (vLLM, TGI, Triton, any
//! other), read on the source's interval. Scraped names are kept exactly (a point with no measurement,
//! one field per sample: see `Point::scraped`), with the target's labels (`job`, `instance`, configured
//! ones) added; a scraped label that collides with one of those is kept as `exported_<name>`, as
//! Prometheus does. Each target also gets `scrape_up`, `scrape_duration_seconds` and `scrape_samples`.
//!
//! An async task (HTTP is async); the targets of one round are requested concurrently, each under the
//! source's timeout, so a slow server never delays another. With `[collector.scrape.kubernetes]`, the
//! pods of this node (and, with the endpoints role, annotated Services' endpoints on it) found in the
//! Kubernetes API are targets too ([`kubernetes`]), listed again every
//! `refresh`; while the API cannot be read, the last targets found are kept and the source reports
//! failure.

use super::{Task, Ticker};
use crate::batch::{Batch, Point};
use crate::config::{ScrapeSettings, ScrapeTarget};
use crate::emit::{Emit, now_ms};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub mod exposition;
pub mod kubernetes;

/// Bodies past this are refused: an exporter gone wrong must not exhaust the node agent.
const MAX_BODY: usize = 16 << 20;
const ACCEPT: &str = "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

/// Why a target could not be scraped.
#[derive(Debug, thiserror::Error)]
pub enum ScrapeError {
    #[error("{url}: {source}")]
    Http { url: String, source: reqwest::Error },
    #[error("{url}: status {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: body larger than {MAX_BODY} bytes")]
    TooLarge { url: String },
    #[error("{url}: {source}")]
    Parse { url: String, source: exposition::ParseError },
}

pub struct Scrape {
    interval: Duration,
    timeout: Duration,
    settings: ScrapeSettings,
}

impl Scrape {
    pub fn new(interval: Duration, timeout: Duration, settings: ScrapeSettings) -> Scrape {
        Scrape { interval, timeout, settings }
    }
}

impl Task for Scrape {
    fn name(&self) -> &'static str {
        "scrape"
    }

    fn run(self: Box<Self>, emit: Emit, stop: watch::Receiver<bool>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(run(*self, emit, stop))
    }
}

async fn run(s: Scrape, emit: Emit, stop: watch::Receiver<bool>) {
    let client = match reqwest::Client::builder().timeout(s.timeout).build() {
        Ok(c) => c,
        Err(error) => {
            tracing::error!(%error, "Cannot build the scrape client; scrape source stopped");
            return;
        }
    };
    let mut found = s.settings.kubernetes.as_ref().map(|k| Found::new(k, s.timeout));
    let mut ticker = Ticker::new(s.interval, stop);
    while ticker.next().await {
        let started = Instant::now();
        let now = now_ms();
        let discovered_ok = match &mut found {
            Some(f) => f.refresh().await,
            None => true,
        };
        let found_targets = found.as_ref().map_or(&[][..], |f| &f.targets[..]);
        let targets: Vec<&ScrapeTarget> = s.settings.targets.iter().chain(found_targets).collect();
        let mut set = tokio::task::JoinSet::new();
        for (i, t) in targets.iter().enumerate() {
            let (client, t) = (client.clone(), (*t).clone());
            set.spawn(async move { (i, scrape(&client, &t, now).await) });
        }
        let mut rounds: Vec<(usize, Batch, bool)> = Vec::new();
        while let Some(r) = set.join_next().await {
            if let Ok((i, (b, ok))) = r {
                rounds.push((i, b, ok));
            }
        }
        rounds.sort_by_key(|(i, _, _)| *i);
        let mut batch = Batch::new();
        let mut all_ok = discovered_ok && rounds.len() == targets.len();
        for (_, mut b, ok) in rounds {
            all_ok &= ok;
            batch.append(&mut b);
        }
        emit.report("scrape", now, started.elapsed(), all_ok, &mut batch);
        if !emit.send(batch).await {
            return;
        }
    }
}

/// `client` trusting the PEM certificates in `path` besides the system's roots (a private CA); the
/// error names the file.
pub(crate) fn trust_ca_file(client: reqwest::ClientBuilder, path: &Path) -> Result<reqwest::ClientBuilder, String> {
    let bad = |e: &dyn std::fmt::Display| format!("ca_file {}: {e}", path.display());
    let pem = std::fs::read(path).map_err(|e| bad(&e))?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(&e))?;
    if certs.is_empty() {
        return Err(bad(&"no PEM certificate in it"));
    }
    Ok(client.tls_certs_merge(certs))
}

/// An error with its causes, `outer: inner: …` (reqwest's own message leaves out why a connection
/// failed, e.g. an untrusted certificate).
pub(crate) fn causes(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// The targets found in the Kubernetes API, and when to list again.
struct Found {
    discovery: Result<kubernetes::Discovery, kubernetes::DiscoveryError>,
    refresh: Duration,
    next: Instant,
    ok: bool,
    targets: Vec<ScrapeTarget>,
}

impl Found {
    fn new(settings: &crate::config::KubernetesSettings, timeout: Duration) -> Found {
        let discovery = kubernetes::Discovery::new(settings, timeout, &|v| std::env::var(v).ok());
        match &discovery {
            Ok(d) => tracing::info!(
                node = d.node(),
                pods = settings.pods,
                endpoints = settings.endpoints,
                "Scrape targets: this node's pods and Services' endpoints in the Kubernetes API"
            ),
            Err(error) => {
                tracing::error!(%error, "Kubernetes discovery cannot start; scraping the static targets only")
            }
        }
        Found { discovery, refresh: settings.refresh, next: Instant::now(), ok: false, targets: Vec::new() }
    }

    /// Lists the pods (and endpoints) when a refresh is due; whether the targets are current.
    async fn refresh(&mut self) -> bool {
        let Ok(d) = &self.discovery else { return false };
        if Instant::now() < self.next {
            return self.ok;
        }
        self.next = Instant::now() + self.refresh;
        match d.targets().await {
            Ok(targets) => {
                let urls =
                    |ts: &[ScrapeTarget]| ts.iter().map(|t| t.url.clone()).collect::<std::collections::BTreeSet<_>>();
                let (before, after) = (urls(&self.targets), urls(&targets));
                for url in after.difference(&before) {
                    tracing::info!(target = %url, "Scrape target found in the Kubernetes API");
                }
                for url in before.difference(&after) {
                    tracing::info!(target = %url, "Scrape target gone from the Kubernetes API");
                }
                self.targets = targets;
                self.ok = true;
            }
            Err(error) => {
                tracing::warn!(%error, kept = self.targets.len(), "Cannot list pods or endpoints; keeping the last targets found");
                self.ok = false;
            }
        }
        self.ok
    }
}

/// Scrapes one target: its samples and its `scrape_*` points, and whether it was up.
pub async fn scrape(client: &reqwest::Client, t: &ScrapeTarget, now: i64) -> (Batch, bool) {
    let started = Instant::now();
    let result = fetch(client, &t.url).await;
    let elapsed = started.elapsed();
    let mut batch = Batch::new();
    let up = match result {
        Ok(body) => {
            samples_to_points(&body, t, now, &mut batch);
            true
        }
        Err(error) => {
            tracing::warn!(target = %t.url, %error, "Scrape failed");
            false
        }
    };
    batch.push(scrape_point(t, now, up, elapsed, batch.len()));
    (batch, up)
}

async fn fetch(client: &reqwest::Client, url: &str) -> Result<Vec<exposition::Sample>, ScrapeError> {
    let http = |source| ScrapeError::Http { url: url.to_string(), source };
    let mut resp = client.get(url).header(reqwest::header::ACCEPT, ACCEPT).send().await.map_err(http)?;
    if !resp.status().is_success() {
        return Err(ScrapeError::Status { url: url.to_string(), status: resp.status().as_u16() });
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(http)? {
        if body.len() + chunk.len() > MAX_BODY {
            return Err(ScrapeError::TooLarge { url: url.to_string() });
        }
        body.extend_from_slice(&chunk);
    }
    exposition::parse(&String::from_utf8_lossy(&body))
        .map_err(|source| ScrapeError::Parse { url: url.to_string(), source })
}

/// The target's samples as points named exactly as scraped, with its labels.
pub fn samples_to_points(samples: &[exposition::Sample], t: &ScrapeTarget, now: i64, batch: &mut Batch) {
    for s in samples {
        let mut p = Point::scraped(s.name.clone(), s.value, now);
        for (k, v) in &s.labels {
            let k = if t.labels.iter().any(|(n, _)| n == k) { format!("exported_{k}") } else { k.clone() };
            p = p.tag(&k, v.as_str());
        }
        for (k, v) in &t.labels {
            p = p.tag(k, v.as_str());
        }
        batch.push(p);
    }
}

/// `scrape_up`, `scrape_duration_seconds`, `scrape_samples` of one target.
pub fn scrape_point(t: &ScrapeTarget, now: i64, up: bool, elapsed: Duration, samples: usize) -> Point {
    let mut p = Point::new("scrape", now);
    for (k, v) in &t.labels {
        p = p.tag(k, v.as_str());
    }
    p.field("up", if up { 1.0 } else { 0.0 })
        .field("duration_seconds", elapsed.as_secs_f64())
        .field("samples", samples as f64)
}

#[cfg(test)]
mod tests;
