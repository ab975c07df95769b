//! One data set through what `argus serve` runs: its series written to an embedded store, the
//! analyzer (built from the default `[analyzer]` settings, so its default rules and detectors) ticked
//! on every step in time order, and every alert it posts replayed through alertd's engine in virtual
//! time (`argus_alertd::replay`, as `argus alertd replay` does).

use super::data::DataSet;
use anyhow::{Context, Result, anyhow};
use argus_analyzer::runtime::{Alert, AlertOut, Analyzer, Metrics, Valid};
use argus_store::backend::{BoxFuture, Embedded, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::remote_write::WriteSeries;
use argus_store::{Db, Options, WalSync};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A notification, with the series of each firing alert in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub at: i64,
    /// (series index, the alert's `startsAt` in ms) of each firing alert that names one of the set's series.
    pub alerts: Vec<(usize, i64)>,
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
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
    let (timeline, ticks, live_points) = rt.block_on(analyze(set, analyzer, backend))?;
    let alerts_posted = timeline.iter().map(|(_, a)| a.len()).sum();
    let pages = notify(set, alertd, &timeline)?;
    Ok(Outcome { pages, alerts_posted, ticks, live_points })
}

type Timeline = Vec<(i64, Vec<Alert>)>;

async fn analyze(set: &DataSet, cfg: &Valid, backend: Arc<dyn StoreBackend>) -> Result<(Timeline, usize, Vec<usize>)> {
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
    let live = set.series.iter().map(|s| s.samples.iter().filter(|p| p.t >= from).count()).collect();
    Ok((timeline, ticks, live))
}

/// The analyzer's alerts through alertd's replay; each notification's firing alerts mapped back to
/// the series they name.
fn notify(set: &DataSet, cfg: argus_alertd::Config, timeline: &Timeline) -> Result<Vec<Page>> {
    let mut input = Vec::new();
    for (t, alerts) in timeline {
        let line = serde_json::json!({ "at": rfc3339(*t), "alerts": alerts });
        serde_json::to_writer(&mut input, &line)?;
        input.push(b'\n');
    }
    let mut output = Vec::new();
    argus_alertd::replay::replay(cfg, &input[..], &mut output).with_context(|| format!("replaying {}", set.name))?;
    // Series by the labels they share with their alerts (an alert carries the series' labels but the
    // name, plus its own).
    let names: Vec<String> = set
        .series
        .iter()
        .flat_map(|s| s.labels.without_name().iter().map(|l| l.name.clone()).collect::<Vec<_>>())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let key = |get: &dyn Fn(&str) -> Option<String>| -> Vec<Option<String>> {
        std::iter::once(get("__metric__")).chain(names.iter().map(|n| get(n))).collect()
    };
    let by_key: HashMap<Vec<Option<String>>, usize> = set
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let get = |n: &str| match n {
                "__metric__" => s.labels.metric_name().map(str::to_string),
                n => s.labels.get(n).map(str::to_string),
            };
            (key(&get), i)
        })
        .collect();
    let mut pages = Vec::new();
    for (n, line) in output.split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()) {
        let bad = |what: &str| anyhow!("{}: replay output line {}: {what}", set.name, n + 1);
        let v: serde_json::Value = serde_json::from_slice(line)?;
        let at = time(&v["at"]).ok_or_else(|| bad("no time"))?;
        let mut page = Page { at, alerts: Vec::new() };
        for a in v["payload"]["alerts"].as_array().ok_or_else(|| bad("no alerts"))? {
            if a["status"] != "firing" {
                continue;
            }
            let labels: BTreeMap<String, String> = serde_json::from_value(a["labels"].clone())?;
            let get = |n: &str| match n {
                "__metric__" => labels.get("metric").cloned(),
                n => labels.get(n).cloned(),
            };
            if let Some(&i) = by_key.get(&key(&get)) {
                page.alerts.push((i, time(&a["startsAt"]).ok_or_else(|| bad("an alert without startsAt"))?));
            }
        }
        pages.push(page);
    }
    Ok(pages)
}

fn rfc3339(ms: i64) -> String {
    humantime::format_rfc3339_millis(std::time::UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)).to_string()
}

fn time(v: &serde_json::Value) -> Option<i64> {
    argus_alertd::Timestamp::parse_rfc3339(v.as_str()?).ok().map(|t| t.millis())
}
