//! Argus watching itself (`[self_monitoring]`): every interval, `argus serve` reads its own
//! `/metrics` and stores them under `job="argus"` and `instance` = its listen address, as a
//! Prometheus scraping it would, so that its dashboards and alerts need no second system. The
//! samples go through the process's `StoreBackend`: straight into the embedded store (no HTTP round
//! trip), or to the remote store every other series goes to.
//!
//! As a Prometheus scrape, each round also writes `up`, `scrape_duration_seconds` and
//! `scrape_samples_scraped`, marks stale the series the previous round had and this one lacks, and
//! keeps a metric's own `job` or `instance` label as `exported_job` / `exported_instance`
//! (`honor_labels: false`).

use argus_collector::source::scrape::exposition;
use argus_model::{Labels, METRIC_NAME, Sample};
use argus_store::backend::StoreBackend;
use argus_store::remote_write::WriteSeries;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The `job` label of the stored series.
pub const JOB: &str = "argus";

/// What reads this process's metrics in the exposition format (the same text `/metrics` answers).
pub type Encode = Arc<dyn Fn() -> Result<String, String> + Send + Sync>;

/// One process's self-scrape: where its metrics come from and where they go.
pub struct SelfScrape {
    pub encode: Encode,
    pub backend: Arc<dyn StoreBackend>,
    /// The listen address, as `instance`.
    pub instance: String,
    pub every: Duration,
}

impl SelfScrape {
    /// Stores the metrics every interval, the first time at once, until the task is aborted. A
    /// failed write is logged and the next round goes on.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(self.every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            let mut last = HashSet::new();
            loop {
                tick.tick().await;
                let series = self.round(argus_store::now_ms(), &mut last);
                if let Err(error) = self.backend.write(series).await {
                    tracing::warn!(%error, "Self-monitoring samples not stored; trying again next interval");
                }
            }
        })
    }

    /// One round at `t` (ms): the series to write, with stale markers for those of `last` (the
    /// previous round's label sets, updated) that are gone.
    pub fn round(&self, t: i64, last: &mut HashSet<Labels>) -> Vec<WriteSeries> {
        let started = Instant::now();
        let scraped = (self.encode)()
            .and_then(|text| exposition::parse(&text).map_err(|e| format!("own metrics unreadable: {e}")));
        let mut out: Vec<WriteSeries> = Vec::new();
        let up = match scraped {
            Ok(samples) => {
                for s in samples {
                    let labels = self.target_labels(&s.name, &s.labels);
                    out.push(WriteSeries { labels, samples: vec![Sample::new(t, s.value)] });
                }
                1.0
            }
            Err(error) => {
                tracing::warn!(%error, "Self-monitoring could not read this process's metrics");
                0.0
            }
        };
        let scraped_samples = out.len() as f64;
        let took = started.elapsed().as_secs_f64();
        for (name, v) in [("up", up), ("scrape_duration_seconds", took), ("scrape_samples_scraped", scraped_samples)] {
            out.push(WriteSeries { labels: self.target_labels(name, &[]), samples: vec![Sample::new(t, v)] });
        }
        // One value per series: a metric exposed twice keeps its last value, as the store would.
        let mut seen = HashSet::with_capacity(out.len());
        out.reverse();
        out.retain(|s| seen.insert(s.labels.clone()));
        out.reverse();
        let stale = f64::from_bits(argus_store::query::STALE_NAN_BITS);
        out.extend(
            last.difference(&seen).map(|l| WriteSeries { labels: l.clone(), samples: vec![Sample::new(t, stale)] }),
        );
        *last = seen;
        out
    }

    /// A sample's labels as stored: its own, then `job` and `instance` (a clashing own label kept
    /// under `exported_`).
    fn target_labels(&self, name: &str, own: &[(String, String)]) -> Labels {
        let mut pairs: Vec<(String, String)> = Vec::with_capacity(own.len() + 3);
        for (n, v) in own {
            match n.as_str() {
                "job" | "instance" => pairs.push((format!("exported_{n}"), v.clone())),
                _ => pairs.push((n.clone(), v.clone())),
            }
        }
        pairs.push((METRIC_NAME.to_string(), name.to_string()));
        pairs.push(("job".to_string(), JOB.to_string()));
        pairs.push(("instance".to_string(), self.instance.clone()));
        Labels::from_pairs(pairs)
    }
}

#[cfg(test)]
mod tests;
