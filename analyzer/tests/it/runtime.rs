//! The analyzer's loop end to end on the embedded store: replayed GPU metrics with an injected
//! fault → anomaly scores written back → an alert at the intake; state saved and resumed.

use argus_analyzer::runtime::{Alert, AlertOut, Analyzer, Config, Metrics};
use argus_model::{Labels, Sample};
use argus_store::backend::{BoxFuture, Embedded, QueryValue, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::{Db, Options};
use argus_store_api::remote_write::WriteSeries;
use parking_lot::Mutex;
use std::sync::Arc;

#[derive(Default)]
struct Intake(Mutex<Vec<Alert>>);

impl AlertOut for Intake {
    fn send(&self, alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>> {
        self.0.lock().extend(alerts);
        Box::pin(async { Ok(()) })
    }
}

const STEP: i64 = 10_000;

fn config(text: &str) -> argus_analyzer::runtime::Valid {
    let c: Config = toml::from_str(text).unwrap();
    c.validate().unwrap()
}

const RULE: &str = r#"
warmup = "1h"
alert_after = 3
resolve_after = 3
[[rule]]
name = "gpu_temperature"
query = "gpu_temperature_celsius"
detectors = ["ewma", "peer"]
peer_by = ["host"]
peer_window = "2m"
direction = "above"
severity = "critical"
"#;

/// Eight GPUs around 60 °C every 10 s from `from` to `to`; GPU 3 at 85 °C from `fault`.
fn temperatures(from: i64, to: i64, fault: i64) -> Vec<WriteSeries> {
    (0..8)
        .map(|gpu| {
            let labels = Labels::from_pairs([
                ("__name__", "gpu_temperature_celsius".to_string()),
                ("host", "node-1".to_string()),
                ("gpu", gpu.to_string()),
            ]);
            let samples = (from / STEP..=to / STEP)
                .map(|i| {
                    let t = i * STEP;
                    let noise = ((i * 7919 + gpu * 104729) % 17) as f64 * 0.15;
                    let v = if gpu == 3 && t >= fault { 85.0 + noise } else { 60.0 + gpu as f64 * 0.4 + noise };
                    Sample { t, v }
                })
                .collect();
            WriteSeries { labels, samples }
        })
        .collect()
}

async fn setup() -> (tempfile::TempDir, Arc<dyn StoreBackend>, i64) {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path().join("data"))).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
    // Leaves room after `now` for the recovery phase, which the store must not see as future data.
    let now = argus_now() / STEP * STEP - 15 * 60_000;
    (dir, backend, now)
}

fn argus_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

async fn ensemble_score(backend: &dyn StoreBackend, gpu: &str, t: i64) -> f64 {
    let q = format!("argus_anomaly_score{{detector=\"ensemble\", metric=\"gpu_temperature_celsius\", gpu=\"{gpu}\"}}");
    match backend.query_instant(&q, t).await.unwrap() {
        QueryValue::Vector(v) if v.len() == 1 => v[0].1.v,
        other => panic!("{q}: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_injected_fault_is_scored_written_back_and_alerted_once() {
    let (dir, backend, now) = setup().await;
    let start = now - 70 * 60_000;
    let fault = now - 3 * 60_000;
    backend.write(temperatures(start, now, fault)).await.unwrap();
    let intake = Arc::new(Intake::default());
    let state = dir.path().join("analyzer");
    let mut a = Analyzer::new(config(RULE), backend.clone(), intake.clone(), Some(state.clone()), Metrics::default());
    // First evaluation before the fault: warmed on the hour before, nothing anomalous.
    let first = fault - 2 * 60_000;
    a.tick(first).await;
    assert!(intake.0.lock().is_empty(), "alerts before the fault: {:?}", intake.0.lock());
    assert!(ensemble_score(&*backend, "3", first).await < 1.0);
    // Then every step through the fault.
    let mut t = first + STEP;
    while t <= now {
        a.tick(t).await;
        t += STEP;
    }
    let alerts = intake.0.lock().clone();
    assert!(!alerts.is_empty(), "no alert for the hot GPU");
    assert!(alerts.iter().all(|a| a.labels["gpu"] == "3"), "alerts for healthy GPUs: {alerts:?}");
    let first_alert = &alerts[0];
    assert_eq!(first_alert.labels["alertname"], "AnomalyDetected");
    assert_eq!(first_alert.labels["severity"], "critical");
    assert_eq!(first_alert.labels["analyzer_rule"], "gpu_temperature");
    assert!(first_alert.annotations["summary"].contains("peers' median"), "{:?}", first_alert.annotations);
    // One alert identity for the whole episode: repeats (resends) carry the same labels.
    assert!(alerts.iter().all(|a| a.labels == first_alert.labels), "{alerts:#?}");
    assert!(ensemble_score(&*backend, "3", now).await > 1.0);
    assert!(ensemble_score(&*backend, "0", now).await < 1.0);
    let board = a.board();
    let top = board.by_rule.read()["gpu_temperature"][0].clone();
    assert_eq!(top.labels["gpu"], "3");
    assert!(top.firing_since.is_some());

    // Saved and resumed: no warm-up again, the firing alert is remembered and resolves when the GPU cools.
    a.checkpoint();
    drop(a);
    intake.0.lock().clear();
    let cool_from = now + STEP;
    backend.write(temperatures(cool_from, cool_from + 10 * 60_000, i64::MAX)).await.unwrap();
    let mut b = Analyzer::new(config(RULE), backend.clone(), intake.clone(), Some(state), Metrics::default());
    let mut t = cool_from;
    while t <= cool_from + 10 * 60_000 {
        b.tick(t).await;
        t += STEP;
    }
    let after = intake.0.lock().clone();
    let resolved: Vec<&Alert> = after.iter().filter(|a| a.annotations.is_empty()).collect();
    assert_eq!(resolved.len(), 1, "the restored alert resolves once: {after:?}");
    assert_eq!(resolved[0].labels, first_alert.labels);
}

/// One step of GPU 3 far out of its range, then back: fires at once by default, never with
/// `alert_at_once = 0` (it is anomalous for one step only, fewer than `alert_after`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_step_far_out_alerts_at_once_unless_turned_off() {
    for (at_once, expect_alert) in [("", true), ("alert_at_once = 0", false)] {
        let (_dir, backend, now) = setup().await;
        let start = now - 70 * 60_000;
        let spike = now - 3 * 60_000;
        let mut series = temperatures(start, now, i64::MAX);
        for s in series[3].samples.iter_mut().filter(|s| s.t == spike) {
            s.v = 140.0;
        }
        backend.write(series).await.unwrap();
        let intake = Arc::new(Intake::default());
        let rule = format!(
            "warmup = \"1h\"\nalert_after = 3\n{at_once}\n[[rule]]\nname = \"hot\"\n\
             query = \"gpu_temperature_celsius\"\ndetectors = [\"threshold\"]\ndirection = \"above\"\n"
        );
        let mut a = Analyzer::new(config(&rule), backend.clone(), intake.clone(), None, Metrics::default());
        let mut t = spike - 2 * 60_000;
        while t <= now {
            a.tick(t).await;
            t += STEP;
        }
        let alerts = intake.0.lock().clone();
        let firing: Vec<&Alert> = alerts.iter().filter(|a| !a.annotations.is_empty()).collect();
        if expect_alert {
            assert_eq!(firing.len(), 1, "{alerts:#?}");
            assert_eq!(firing[0].labels["gpu"], "3");
            assert!(alerts.iter().any(|a| a.annotations.is_empty()), "it resolves after the step: {alerts:#?}");
        } else {
            assert!(alerts.is_empty(), "{alerts:#?}");
        }
    }
}

/// A counter born after the analyzer started: its `rate` over a partial window (the first 2 minutes
/// here) is read but neither scored nor learned from; once the window is full, it is scored every step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_series_is_learned_from_once_its_range_window_is_full() {
    let (_dir, backend, now) = setup().await;
    let born = now - 10 * 60_000;
    let labels = Labels::from_pairs([("__name__", "bytes_total".to_string()), ("host", "node-1".to_string())]);
    let samples = (born / STEP..=now / STEP).map(|i| Sample { t: i * STEP, v: ((i - born / STEP) * 1_000) as f64 });
    backend.write(vec![WriteSeries { labels, samples: samples.collect() }]).await.unwrap();
    let rule = "warmup = \"1h\"\n[[rule]]\nname = \"throughput\"\nquery = \"rate(bytes_total[2m])\"\n\
                detectors = [\"ewma\"]\n";
    let intake = Arc::new(Intake::default());
    let mut a = Analyzer::new(config(rule), backend.clone(), intake, None, Metrics::default());
    let mut t = born - STEP;
    while t <= now {
        a.tick(t).await;
        t += STEP;
    }
    let scores = match backend.query_range("argus_anomaly_score{detector=\"ewma\"}", born, now, STEP).await.unwrap() {
        QueryValue::Matrix(m) if m.len() == 1 => m[0].samples.iter().map(|s| s.t).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    // `rate` has its first value one step after the counter's first sample.
    let settled = born + STEP + 2 * 60_000;
    assert_eq!(scores.first(), Some(&settled), "scored from the first full window on");
    assert_eq!(scores.len() as i64, (now - settled) / STEP + 1, "and at every step after it");
}

#[test]
fn configuration_errors_name_the_key() {
    let bad = |text: &str| toml::from_str::<Config>(text).unwrap().validate().unwrap_err().to_string();
    let e = bad("[[rule]]\nname = \"x\"\nquery = \"up\"\ndetectors = [\"nope\"]");
    assert!(e.contains("rule \"x\".detectors") && e.contains("unknown detector \"nope\""), "{e}");
    let e = bad("[[rule]]\nname = \"x\"\nquery = \"up\"\ndetectors = [\"peer\"]");
    assert!(e.contains("peer_by"), "{e}");
    let e = bad("[[rule]]\nname = \"x\"\nquery = \"sum(\"\ndetectors = [\"ewma\"]");
    assert!(e.contains("rule \"x\".query") && e.contains("not valid PromQL"), "{e}");
    let e = bad("[[rule]]\nname = \"x\"\nquery = \"up\"\ndetectors = [\"ewma\"]\n[rule.params.ewma]\nalpha = 3.0");
    assert!(e.contains("params.ewma") && e.contains("alpha"), "{e}");
    let e = bad("alert_at_once = 0.5");
    assert!(e.contains("alert_at_once") && e.contains("0 (off) or a score above 1"), "{e}");
    let e = bad("interval = \"soon\"");
    assert!(e.contains("interval") && e.contains("not a duration"), "{e}");
    // No rules: the defaults over the collector's series validate.
    let ok: Config = toml::from_str("").unwrap();
    assert!(!ok.validate().unwrap().rules.is_empty());
}

/// The store behind it, recording how many series each write carried.
struct Counting {
    inner: Arc<dyn StoreBackend>,
    writes: Mutex<Vec<usize>>,
}

impl StoreBackend for Counting {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn write(&self, series: Vec<WriteSeries>) -> BoxFuture<'_, Result<(), argus_store_api::backend::BackendError>> {
        self.writes.lock().push(series.len());
        self.inner.write(series)
    }
    fn select<'a>(
        &'a self,
        matchers: &'a [argus_model::Matcher],
        start: i64,
        end: i64,
    ) -> BoxFuture<'a, Result<Vec<argus_store_api::Series>, argus_store_api::backend::BackendError>> {
        self.inner.select(matchers, start, end)
    }
    fn query_instant<'a>(
        &'a self,
        query: &'a str,
        t: i64,
    ) -> BoxFuture<'a, Result<QueryValue, argus_store_api::backend::BackendError>> {
        self.inner.query_instant(query, t)
    }
    fn query_range<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
    ) -> BoxFuture<'a, Result<QueryValue, argus_store_api::backend::BackendError>> {
        self.inner.query_range(query, start, end, step)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_fleet_s_results_are_written_in_bounded_batches_and_all_arrive() {
    let (_dir, store, now) = setup().await;
    // 4,000 GPUs, each with at least its detector's score, its expected value and the ensemble's score:
    // 12,000 result series or more in one tick.
    let gpus = 4_000;
    let series: Vec<WriteSeries> = (0..gpus)
        .map(|g| WriteSeries {
            labels: Labels::from_pairs([
                ("__name__", "gpu_temperature_celsius".to_string()),
                ("host", format!("node-{}", g / 8)),
                ("gpu", (g % 8).to_string()),
            ]),
            samples: (0..6).map(|i| Sample { t: now - (5 - i) * STEP, v: 60.0 + (g % 7) as f64 }).collect(),
        })
        .collect();
    store.write(series).await.unwrap();
    let counting = Arc::new(Counting { inner: store.clone(), writes: Mutex::new(Vec::new()) });
    let rule = "warmup = \"1m\"\n[[rule]]\nname = \"t\"\nquery = \"gpu_temperature_celsius\"\ndetectors = [\"ewma\"]\n";
    let mut a = Analyzer::new(config(rule), counting.clone(), Arc::new(Intake::default()), None, Metrics::default());
    a.tick(now + 1_000).await;
    let writes = counting.writes.lock().clone();
    assert!(writes.len() >= 2, "one write for the whole fleet: {writes:?}");
    // A batch is cut once it reaches the bound, so it ends at most one series' results past it.
    assert!(writes.iter().all(|&n| n < argus_analyzer::runtime::WRITE_BATCH + 6), "{writes:?}");
    let scores = store.query_instant("count(argus_anomaly_score{detector=\"ensemble\"})", now).await.unwrap();
    let QueryValue::Vector(v) = scores else { panic!("{scores:?}") };
    assert_eq!(v[0].1.v, gpus as f64, "every series' ensemble score was written");
}

// === sharding ===

/// Eight GPUs on each of `hosts` around 60 °C every 10 s over `[from, to]`; on every other host one GPU
/// runs hot from `fault`.
fn fleet_temperatures(hosts: usize, from: i64, to: i64, fault: i64) -> Vec<WriteSeries> {
    let mut out = Vec::new();
    for h in 0..hosts {
        for mut s in temperatures(from, to, if h % 2 == 0 { fault } else { i64::MAX }) {
            let host = format!("node-{h}");
            let gpu = s.labels.get("gpu").unwrap_or("").to_string();
            s.labels = Labels::from_pairs([
                ("__name__", "gpu_temperature_celsius"),
                ("cluster", "a"),
                ("host", host.as_str()),
                ("gpu", gpu.as_str()),
            ]);
            for p in &mut s.samples {
                p.v += h as f64 * 0.3;
            }
            out.push(s);
        }
    }
    out
}

/// What one analyzer of share `shard` sends and writes over the fault ending at `now`: its alerts' label sets and the
/// series it wrote back (labels and samples), each sorted.
async fn shard_outputs(shard: argus_model::Shard, now: i64) -> (Vec<String>, Vec<String>) {
    let (_dir, backend, _) = setup().await;
    let start = now - 70 * 60_000;
    let fault = now - 3 * 60_000;
    backend.write(fleet_temperatures(6, start, now, fault)).await.unwrap();
    let intake = Arc::new(Intake::default());
    let rules = format!(
        "{RULE}\n[[rule]]\nname = \"gpu_temperature_alone\"\nquery = \"gpu_temperature_celsius * 1\"\n\
         detectors = [\"ewma\"]\ndirection = \"above\"\nmetric = \"gpu_temperature_alone\"\n"
    );
    let cfg = config(&rules).for_shard(shard);
    let mut a = Analyzer::new(cfg, backend.clone(), intake.clone(), None, Metrics::default());
    let first = fault - 2 * 60_000;
    let mut t = first;
    while t <= now {
        a.tick(t).await;
        t += STEP;
    }
    let mut alerts: Vec<String> = intake.0.lock().iter().map(|a| format!("{:?} {}", a.labels, a.starts_at)).collect();
    alerts.sort();
    let written = [argus_model::Matcher::new("__name__", argus_model::MatchOp::RegexMatch, "argus_.*").unwrap()];
    let mut series: Vec<String> = backend
        .select(&written, first - 70 * 60_000, now)
        .await
        .unwrap()
        .iter()
        .map(|s| format!("{} {:?}", s.labels, s.samples))
        .collect();
    series.sort();
    (alerts, series)
}

/// N shards (each with its own store holding the same data) together send and write exactly what one
/// process does: no series, peer group or alert is lost or doubled at a shard boundary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_union_of_shards_equals_one_process() {
    // One clock for every run, so all see the same steps.
    let (_dir, _, now) = setup().await;
    let (alerts, series) = shard_outputs(argus_model::Shard::ALL, now).await;
    assert!(alerts.len() >= 3, "the faults alert: {alerts:#?}");
    assert!(series.iter().any(|s| s.contains("argus_anomaly_score")), "scores are written: {series:?}");
    for n in [2, 3] {
        let (mut union_alerts, mut union_series) = (Vec::new(), Vec::new());
        for i in 0..n {
            let (a, s) = shard_outputs(argus_model::Shard::new(i, n).unwrap(), now).await;
            assert!(s.len() < series.len(), "shard {i}/{n} did all the work");
            union_alerts.extend(a);
            union_series.extend(s);
        }
        union_alerts.sort();
        union_series.sort();
        let missing: Vec<&String> = alerts.iter().filter(|a| !union_alerts.contains(a)).collect();
        let extra: Vec<&String> = union_alerts.iter().filter(|a| !alerts.contains(a)).collect();
        assert_eq!(union_alerts.len(), alerts.len(), "alerts of {n} shards: missing {missing:?}, extra {extra:?}");
        assert_eq!(union_alerts, alerts, "alerts of {n} shards");
        let only_one: Vec<&String> = series.iter().filter(|s| !union_series.contains(s)).collect();
        let only_shards: Vec<&String> = union_series.iter().filter(|s| !series.contains(s)).collect();
        assert!(
            union_series == series,
            "series written by {n} shards differ from one process's: only there {only_one:?}, only in the shards {only_shards:?}"
        );
    }
}
