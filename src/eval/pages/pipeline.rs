//! One data set through what `argus serve` runs: its series written to an embedded store, the
//! analyzer (built from the default `[analyzer]` settings, so its default rules and detectors) ticked
//! on every step in time order, and every alert it posts replayed through alertd's engine in virtual
//! time (`argus_alertd::replay`, as `argus alertd replay` does).

use super::data::DataSet;
use super::diagnose::Posted;
use super::notify::{self, Held, SeriesIndex};
use super::tap::{Scores, Tap};
use anyhow::{Context, Result, anyhow};
use argus_alertd::alert::Fingerprint;
use argus_analyzer::runtime::{Alert, AlertOut, Analyzer, Metrics, Valid};
use argus_model::Labels;
use argus_store::backend::{BoxFuture, Embedded, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::remote_write::WriteSeries;
use argus_store::{Db, Options, WalSync};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A notification, with the series of each firing alert in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub at: i64,
    /// (series index, the alert's `startsAt` in ms) of each firing alert that names one of the set's series.
    pub alerts: Vec<(usize, i64)>,
    /// The newest of those alerts: the one whose start made the notification news.
    pub trigger: Option<Trigger>,
}

/// The alert that set off a notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Trigger {
    pub series: usize,
    /// Its `analyzer_rule` and `detector` labels.
    pub rule: String,
    pub detector: String,
}

/// What one data set's run produced.
#[derive(Debug, Default)]
pub struct Outcome {
    pub pages: Vec<Page>,
    /// Alerts the analyzer posted (firing, resent and resolved).
    pub alerts_posted: usize,
    pub ticks: usize,
    /// Points the analyzer judged live (after its warm-up), by series.
    pub live_points: Vec<usize>,
    /// The detectors' scores, by series and step.
    pub scores: Scores,
    /// Every alert the analyzer posted that names one of the set's series, in time order.
    pub posted: Vec<Posted>,
    /// alertd's holds, by alert.
    pub held: HashMap<Fingerprint, Vec<Held>>,
    /// Notifications that left alerts out.
    pub truncated: usize,
    /// Seconds spent writing the data, in the analyzer, and in alertd.
    pub seconds: Stages,
}

/// Where a run's time went.
#[derive(Debug, Default, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Stages {
    pub write: f64,
    pub analyzer: f64,
    pub alertd: f64,
}

/// The alerts the analyzer posts, by the step that posted them.
#[derive(Default)]
struct Intake(Mutex<Vec<Alert>>);

impl AlertOut for Intake {
    fn send(&self, alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>> {
        if let Ok(mut held) = self.0.lock() {
            held.extend(alerts);
        }
        Box::pin(async { Ok(()) })
    }
}

/// Runs `set` (already shifted to end before now, faults applied) in a store under `scratch`.
pub fn run(set: &DataSet, analyzer: &Valid, alertd: argus_alertd::Config, scratch: &Path) -> Result<Outcome> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the runtime for the replay")?;
    let mut opts = Options::new(scratch.join("data"));
    // Replayed history is years old by the wall clock, and nothing here must survive a crash.
    opts.retention = Duration::from_secs(100 * 365 * 24 * 3600);
    opts.wal_sync = WalSync::Never;
    let db = Arc::new(Db::open(opts).map_err(|e| anyhow!("opening the store in {}: {e}", scratch.display()))?);
    let tap = Arc::new(Tap::new(Arc::new(Embedded::new(db, QueryLimits::default())), set));
    let mut seconds = Stages::default();
    let (timeline, ticks, live_points) = rt.block_on(analyze(set, analyzer, tap.clone(), &mut seconds))?;
    let alerts_posted = timeline.iter().map(|(_, a)| a.len()).sum();
    let started = Instant::now();
    let notified = notify::notify(set, alertd, &timeline)?;
    seconds.alertd = started.elapsed().as_secs_f64();
    let posted = posted(set, &timeline);
    Ok(Outcome {
        pages: notified.pages,
        alerts_posted,
        ticks,
        live_points,
        scores: tap.scores(),
        posted,
        held: notified.held,
        truncated: notified.truncated,
        seconds,
    })
}

/// The analyzer's alerts that name the set's series, as the diagnosis reads them.
fn posted(set: &DataSet, timeline: &Timeline) -> Vec<Posted> {
    let index = SeriesIndex::new(set);
    let time = |s: &str| argus_alertd::Timestamp::parse_rfc3339(s).ok().map(|t| t.millis());
    let mut out = Vec::new();
    for (at, alerts) in timeline {
        for a in alerts {
            let (Some(series), Some(starts_at), Some(ends_at)) =
                (index.find(&a.labels), time(&a.starts_at), time(&a.ends_at))
            else {
                continue;
            };
            let labels = Labels::from_pairs(a.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let label = |n: &str| a.labels.get(n).cloned().unwrap_or_default();
            out.push(Posted {
                at: *at,
                series,
                starts_at,
                resolved: ends_at <= *at,
                fingerprint: argus_alertd::alert::fingerprint(&labels),
                rule: label("analyzer_rule"),
                detector: label("detector"),
            });
        }
    }
    out
}

type Timeline = Vec<(i64, Vec<Alert>)>;

async fn analyze(
    set: &DataSet,
    cfg: &Valid,
    backend: Arc<Tap>,
    seconds: &mut Stages,
) -> Result<(Timeline, usize, Vec<usize>)> {
    let started = Instant::now();
    let mut batch = Vec::new();
    let mut points = 0;
    for s in &set.series {
        batch.push(WriteSeries { labels: s.labels.clone(), samples: s.samples.clone() });
        points += s.samples.len();
        if points >= 500_000 {
            backend.write(std::mem::take(&mut batch)).await.map_err(|e| anyhow!("writing {}: {e}", set.name))?;
            points = 0;
        }
    }
    backend.write(batch).await.map_err(|e| anyhow!("writing {}: {e}", set.name))?;
    seconds.write = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let (Some(first), Some(last)) = (set.first(), set.last()) else { return Ok((Vec::new(), 0, Vec::new())) };
    let step = set.step;
    // The analyzer's first evaluation warms on `warmup` of history; it alerts from then on.
    let from = (first + cfg.warmup.as_millis() as i64).div_euclid(step) * step;
    let intake = Arc::new(Intake::default());
    let mut a = Analyzer::new(cfg.clone(), backend, intake.clone(), None, Metrics::default());
    let mut timeline = Vec::new();
    let mut ticks = 0;
    let mut t = from;
    while t <= last {
        a.tick(t).await;
        ticks += 1;
        let posted = intake.0.lock().map(|mut held| std::mem::take(&mut *held)).unwrap_or_default();
        if !posted.is_empty() {
            timeline.push((t, posted));
        }
        t += step;
    }
    seconds.analyzer = started.elapsed().as_secs_f64();
    let live = set.series.iter().map(|s| s.samples.iter().filter(|p| p.t >= from).count()).collect();
    Ok((timeline, ticks, live))
}
