//! `scrape`: Prometheus text / OpenMetrics endpoints of inference servers (vLLM, TGI, Triton, any
//! other), read on the source's interval. Scraped names are kept exactly (a point with no measurement,
//! one field per sample: see `Point::scraped`), with the target's labels (`job`, `instance`, configured
//! ones) added; a scraped label that collides with one of those is kept as `exported_<name>`, as
//! Prometheus does. Each target also gets `scrape_up`, `scrape_duration_seconds` and `scrape_samples`.
//!
//! An async task (HTTP is async); the targets of one round are requested concurrently, each under the
//! source's timeout, so a slow server never delays another.

use super::{Task, Ticker};
use crate::batch::{Batch, Point};
use crate::config::{ScrapeSettings, ScrapeTarget};
use crate::emit::{Emit, now_ms};
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub mod exposition;

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
    let mut ticker = Ticker::new(s.interval, stop);
    while ticker.next().await {
        let started = Instant::now();
        let now = now_ms();
        let mut set = tokio::task::JoinSet::new();
        for (i, t) in s.settings.targets.iter().enumerate() {
            let (client, t) = (client.clone(), t.clone());
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
        let mut all_ok = rounds.len() == s.settings.targets.len();
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
