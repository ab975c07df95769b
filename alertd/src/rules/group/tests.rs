use super::*;
use crate::rules::parse;
use argus_store_api::Series;
use argus_store_api::backend::BoxFuture;
use std::collections::HashMap;
use std::sync::Mutex;

const T0: i64 = 1_700_000_000_000;
const MIN: i64 = 60_000;

/// Answers each query from a table and keeps what is written; `select` reads the writes back.
#[derive(Default)]
struct Fake {
    answers: Mutex<HashMap<String, Vec<(Labels, f64)>>>,
    written: Mutex<Vec<WriteSeries>>,
    /// Queries answered with an error.
    failing: Mutex<std::collections::HashSet<String>>,
    /// Queries answered only after this long.
    slow: Mutex<HashMap<String, Duration>>,
}

impl StoreBackend for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn describe(&self) -> String {
        "fake".into()
    }
    fn write(&self, series: Vec<WriteSeries>) -> BoxFuture<'_, Result<(), BackendError>> {
        self.written.lock().unwrap().extend(series);
        Box::pin(async { Ok(()) })
    }
    fn select<'a>(
        &'a self,
        m: &'a [Matcher],
        start: i64,
        end: i64,
    ) -> BoxFuture<'a, Result<Vec<Series>, BackendError>> {
        let mut out: Vec<Series> = Vec::new();
        for w in self.written.lock().unwrap().iter() {
            if !m.iter().all(|m| m.matches(w.labels.get(&m.name).unwrap_or(""))) {
                continue;
            }
            let samples: Vec<Sample> = w.samples.iter().filter(|s| s.t >= start && s.t <= end).copied().collect();
            match out.iter_mut().find(|s| *s.labels == w.labels) {
                Some(s) => s.samples.extend(samples),
                None => out.push(Series { labels: Arc::new(w.labels.clone()), samples }),
            }
        }
        Box::pin(async move { Ok(out) })
    }
    fn query_instant<'a>(&'a self, q: &'a str, t: i64) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        if self.failing.lock().unwrap().contains(q) {
            return Box::pin(async move { Err(BackendError::Config(format!("{q} is broken"))) });
        }
        let v = self.answers.lock().unwrap().get(q).cloned().unwrap_or_default();
        let v = v.into_iter().map(|(l, v)| (Arc::new(l), Sample::new(t, v))).collect();
        let delay = self.slow.lock().unwrap().get(q).copied();
        Box::pin(async move {
            if let Some(d) = delay {
                tokio::time::sleep(d).await;
            }
            Ok(QueryValue::Vector(v))
        })
    }
    fn query_range<'a>(
        &'a self,
        _: &'a str,
        _: i64,
        _: i64,
        _: i64,
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(async { Err(BackendError::Config("no range queries here".into())) })
    }
}

#[derive(Default)]
struct Sink(Mutex<Vec<(Timestamp, PostableAlert)>>);

impl AlertSink for Sink {
    fn send(&self, now: Timestamp, alerts: Vec<PostableAlert>) {
        self.0.lock().unwrap().extend(alerts.into_iter().map(|a| (now, a)));
    }
}

const RULES: &str = "groups:\n- name: g\n  interval: 1m\n  rules:\n  - alert: Hot\n    expr: temp > 80\n    for: 2m\n    annotations: {summary: '{{ $labels.host }} is {{ $value }}'}\n  - record: temp:max\n    expr: max(temp)\n";

fn setup(backend: Arc<Fake>) -> (Arc<Evaluator>, Arc<Sink>, RuleGroup) {
    let sink = Arc::new(Sink::default());
    // A grace period under the rule's `for: 2m`, so that it is restored.
    let opts = EvalOptions { for_grace_period: Duration::from_secs(60), ..EvalOptions::default() };
    let ev = Arc::new(Evaluator { backend, sink: sink.clone(), opts });
    let group = parse(RULES, "r.yml").unwrap().remove(0);
    (ev, sink, group)
}

fn hot(backend: &Fake, v: Option<f64>) {
    let l = Labels::from_pairs([("__name__", "temp"), ("host", "n1")]);
    let mut a = backend.answers.lock().unwrap();
    a.insert("temp > 80".into(), v.map(|v| vec![(l.clone(), v)]).unwrap_or_default());
    a.insert("max(temp)".into(), vec![(Labels::default(), v.unwrap_or(20.0))]);
}

/// The sent alerts as `minute: alertname state(ends) summary`, minutes from T0.
fn sent(sink: &Sink) -> Vec<String> {
    let m = |t: Timestamp| (t.0 - T0) / MIN;
    let sent = sink.0.lock().unwrap();
    sent.iter()
        .map(|(t, a)| {
            let ends = a.ends_at.map_or(-1, m);
            let starts = a.starts_at.map_or(-1, m);
            format!("{}: {} starts={starts} ends={ends} {}", m(*t), a.labels["alertname"], a.annotations["summary"])
        })
        .collect()
}

fn written(backend: &Fake, name: &str) -> Vec<String> {
    let w = backend.written.lock().unwrap();
    w.iter()
        .filter(|s| s.labels.metric_name() == Some(name))
        .flat_map(|s| s.samples.iter().map(move |x| format!("{} {} {}", (x.t - T0) / MIN, s.labels, x.v)))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn pending_firing_resolved_on_tokio_time() {
    let backend = Arc::new(Fake::default());
    hot(&backend, Some(90.0));
    let (ev, sink, group) = setup(backend.clone());
    let task = tokio::spawn(ev.run(group, TokioClock::starting_at(Timestamp(T0))));
    tokio::time::sleep(Duration::from_millis(2 * MIN as u64 + 1000)).await;
    hot(&backend, None);
    tokio::time::sleep(Duration::from_millis(MIN as u64)).await;
    task.abort();
    expect_test::expect![[r#"
        [
            "2: Hot starts=2 ends=6 n1 is 90",
            "3: Hot starts=2 ends=3 n1 is 90",
        ]
    "#]]
    .assert_debug_eq(&sent(&sink));
    expect_test::expect![[r#"
        [
            "1 ALERTS{alertname=\"Hot\", alertstate=\"pending\", host=\"n1\"} 1",
            "2 ALERTS{alertname=\"Hot\", alertstate=\"firing\", host=\"n1\"} 1",
            "2 ALERTS{alertname=\"Hot\", alertstate=\"pending\", host=\"n1\"} NaN",
            "3 ALERTS{alertname=\"Hot\", alertstate=\"firing\", host=\"n1\"} NaN",
        ]
    "#]]
    .assert_debug_eq(&written(&backend, "ALERTS"));
    expect_test::expect![[r#"
        [
            "0 temp:max{} 90",
            "1 temp:max{} 90",
            "2 temp:max{} 90",
            "3 temp:max{} 20",
        ]
    "#]]
    .assert_debug_eq(&written(&backend, "temp:max"));
}

#[tokio::test(start_paused = true)]
async fn for_state_is_restored_after_a_restart() {
    let backend = Arc::new(Fake::default());
    hot(&backend, Some(90.0));
    // Pending since minute -5, last written at minute -1: with `for: 2m` it had been pending long
    // enough, so it fires at the first evaluation after restoring rather than 2 minutes later.
    let labels = Labels::from_pairs([("__name__", ALERTS_FOR_STATE), ("alertname", "Hot"), ("host", "n1")]);
    let since = (T0 - 5 * MIN) as f64 / 1000.0;
    backend.written.lock().unwrap().push(WriteSeries { labels, samples: vec![Sample::new(T0 - MIN, since)] });
    let (ev, sink, group) = setup(backend.clone());
    let mut g = GroupState::new(group);
    ev.eval(&mut g, Timestamp(T0)).await;
    let a = g.alerting().next().unwrap();
    assert_eq!(a.alerts()[0].active_at, Timestamp(T0 - 5 * MIN), "activeAt restored");
    assert!(sent(&sink).is_empty(), "still pending at the first evaluation");
    ev.eval(&mut g, Timestamp(T0 + MIN)).await;
    assert_eq!(sent(&sink), ["1: Hot starts=1 ends=5 n1 is 90"]);
    // Without the restore it would still be pending: a fresh group sees no state to restore.
    let fresh = Arc::new(Fake::default());
    hot(&fresh, Some(90.0));
    let (ev, sink, group) = setup(fresh);
    let mut g = GroupState::new(group);
    ev.eval(&mut g, Timestamp(T0)).await;
    ev.eval(&mut g, Timestamp(T0 + MIN)).await;
    assert!(sent(&sink).is_empty());
}

/// The restore round trip through the embedded store: ALERTS_FOR_STATE written by one evaluator is
/// read back by a fresh one (a restart), and the alert keeps its activeAt.
#[tokio::test]
async fn for_state_round_trips_through_the_embedded_store() {
    let (_dir, backend, t0) = embedded_for_tests(20);
    let temp = |t: i64| WriteSeries {
        labels: Labels::from_pairs([("__name__", "temp"), ("host", "n1")]),
        samples: vec![Sample::new(t, 90.0)],
    };
    let rules = "groups:\n- name: g\n  rules:\n  - alert: Hot\n    expr: temp > 80\n    for: 10m\n";
    let opts = EvalOptions { for_grace_period: Duration::from_secs(60), ..EvalOptions::default() };
    let sink = Arc::new(Sink::default());
    let ev = Evaluator { backend: backend.clone(), sink: sink.clone(), opts };
    let mut g = GroupState::new(parse(rules, "r.yml").unwrap().remove(0));
    for m in 0..3 {
        backend.write(vec![temp(t0 + m * MIN)]).await.unwrap();
        ev.eval(&mut g, Timestamp(t0 + m * MIN)).await;
    }
    // Restart 2 minutes later: pending since t0, 2m of it counted, the 2m outage not.
    backend.write(vec![temp(t0 + 4 * MIN)]).await.unwrap();
    let mut g = GroupState::new(parse(rules, "r.yml").unwrap().remove(0));
    ev.eval(&mut g, Timestamp(t0 + 4 * MIN)).await;
    let a = g.alerting().next().unwrap();
    assert_eq!(a.alerts()[0].active_at, Timestamp(t0 + 2 * MIN));
    assert!(sink.0.lock().unwrap().is_empty(), "still pending");
}

#[tokio::test]
async fn forecast_rule_fires_when_the_band_crosses_the_limit_within_the_horizon() {
    let (_dir, backend, t0) = embedded_for_tests(20);
    // The analyzer's forecast of gpu_demand per pool, made at t: the upper band by horizon.
    let yhat = |t: i64, pool: &str, horizon: &str, v: f64| WriteSeries {
        labels: Labels::from_pairs([
            ("__name__", "argus_yhat_upper"),
            ("metric", "gpu_demand"),
            ("model", "ets"),
            ("horizon", horizon),
            ("pool", pool),
        ]),
        samples: vec![Sample::new(t, v)],
    };
    let capacity = |t: i64, pool: &str, v: f64| WriteSeries {
        labels: Labels::from_pairs([("__name__", "gpu_capacity"), ("pool", pool)]),
        samples: vec![Sample::new(t, v)],
    };
    let rules = "groups:\n- name: capacity\n  rules:\n  - forecast: GpuDemandOverCapacity\n    metric: gpu_demand\n    limit: gpu_capacity\n    band: upper\n    direction: above\n    for: 1m\n    labels: {severity: warning}\n    annotations: {summary: 'pool {{ $labels.pool }} may need {{ $value }} GPUs'}\n";
    let sink = Arc::new(Sink::default());
    let ev = Evaluator { backend: backend.clone(), sink: sink.clone(), opts: EvalOptions::default() };
    let mut g = GroupState::new(parse(rules, "r.yml").unwrap().remove(0));
    for m in 0..3 {
        let t = t0 + m * MIN;
        backend
            .write(vec![
                yhat(t, "a", "15m", 60.0),
                yhat(t, "a", "1h", 70.0),
                yhat(t, "a", "6h", 130.0),
                yhat(t, "b", "15m", 10.0),
                yhat(t, "b", "6h", 30.0),
                capacity(t, "a", 100.0),
                capacity(t, "b", 64.0),
            ])
            .await
            .unwrap();
        ev.eval(&mut g, Timestamp(t)).await;
    }
    let sent = sink.0.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "pending at 0, firing 1m later (not resent within resend_delay), pool b never: {sent:?}");
    let (at, a) = &sent[0];
    assert_eq!(*at, Timestamp(t0 + MIN));
    let want_labels =
        [("alertname", "GpuDemandOverCapacity"), ("metric", "gpu_demand"), ("pool", "a"), ("severity", "warning")];
    assert_eq!(a.labels, want_labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    let crossing = (Timestamp(t0 + MIN) + Duration::from_secs(6 * 3600)).to_string();
    assert_eq!(a.annotations["forecast_crossing_at"], crossing);
    assert_eq!((a.annotations["forecast_value"].as_str(), a.annotations["forecast_limit"].as_str()), ("130", "100"));
    assert_eq!(a.annotations["forecast_horizon"], "6h");
    assert_eq!(a.annotations["summary"], "pool a may need 130 GPUs");
    // The forecast falls back under the limit: resolved at the next evaluation.
    let t = t0 + 3 * MIN;
    backend.write(vec![yhat(t, "a", "6h", 90.0), yhat(t, "a", "1h", 70.0), capacity(t, "a", 100.0)]).await.unwrap();
    ev.eval(&mut g, Timestamp(t)).await;
    let sent = sink.0.lock().unwrap().clone();
    assert_eq!(sent.last().unwrap().1.ends_at, Some(Timestamp(t)), "{sent:?}");
}

const FOR_5M: &str = "groups:\n- name: g\n  interval: 1m\n  rules:\n  - alert: Hot\n    expr: temp > 80\n    for: 5m\n    annotations: {summary: '{{ $labels.host }} is {{ $value }}'}\n";

/// Runs [`FOR_5M`] with `Hot` pending from minute 0, reloads at minute 4 (plus a second) with
/// `after`, and returns what was sent until minute 10, and the `ALERTS` series written.
async fn reload_at_minute_4(after: &str) -> (Vec<String>, Vec<String>) {
    let backend = Arc::new(Fake::default());
    hot(&backend, Some(90.0));
    backend.answers.lock().unwrap().insert("temp > 85".into(), vec![(Labels::from_pairs([("host", "n1")]), 90.0)]);
    let sink = Arc::new(Sink::default());
    // The default grace period (10m) is over `for`: a restart would not restore this rule.
    let ev = Arc::new(Evaluator { backend: backend.clone(), sink: sink.clone(), opts: EvalOptions::default() });
    let clock = TokioClock::starting_at(Timestamp(T0));
    let groups = Groups::default();
    let tasks = groups.spawn(parse(FOR_5M, "r.yml").unwrap(), ev.clone(), clock.clone());
    tokio::time::sleep(Duration::from_millis(4 * MIN as u64 + 1000)).await;
    assert!(sink.0.lock().unwrap().is_empty(), "pending for 4 of its 5 minutes");
    tasks.iter().for_each(|t| t.abort());
    let tasks = groups.spawn(parse(after, "r.yml").unwrap(), ev.clone(), clock);
    tokio::time::sleep(Duration::from_millis(6 * MIN as u64)).await;
    tasks.iter().for_each(|t| t.abort());
    (sent(&sink), written(&backend, "ALERTS"))
}

#[tokio::test(start_paused = true)]
async fn reload_keeps_the_for_timer_of_an_unchanged_rule() {
    let (sent, _) = reload_at_minute_4(FOR_5M).await;
    assert_eq!(sent[0], "5: Hot starts=5 ends=9 n1 is 90", "fires at minute 5, not 9: {sent:?}");
    // A rule added beside it leaves it unchanged too.
    let added = format!("{FOR_5M}  - alert: Cold\n    expr: temp < 0\n");
    let (sent, _) = reload_at_minute_4(&added).await;
    assert_eq!(sent[0], "5: Hot starts=5 ends=9 n1 is 90", "{sent:?}");
}

#[tokio::test(start_paused = true)]
async fn reload_restarts_the_for_timer_of_a_changed_rule() {
    let changed = FOR_5M.replace("temp > 80", "temp > 85");
    let (sent, _) = reload_at_minute_4(&changed).await;
    assert_eq!(sent, ["9: Hot starts=9 ends=13 n1 is 90"], "pending anew from minute 4");
    // A changed label is a changed rule too; the old rule's series end at the reload.
    let relabelled = format!("{FOR_5M}    labels: {{severity: page}}\n");
    let (sent, alerts) = reload_at_minute_4(&relabelled).await;
    assert_eq!(sent, ["9: Hot starts=9 ends=13 n1 is 90"]);
    expect_test::expect![[r#"
        [
            "1 ALERTS{alertname=\"Hot\", alertstate=\"pending\", host=\"n1\"} 1",
            "2 ALERTS{alertname=\"Hot\", alertstate=\"pending\", host=\"n1\"} 1",
            "3 ALERTS{alertname=\"Hot\", alertstate=\"pending\", host=\"n1\"} 1",
            "4 ALERTS{alertname=\"Hot\", alertstate=\"pending\", host=\"n1\"} 1",
            "4 ALERTS{alertname=\"Hot\", alertstate=\"pending\", host=\"n1\", severity=\"page\"} 1",
            "4 ALERTS{alertname=\"Hot\", alertstate=\"pending\", host=\"n1\"} NaN",
        ]
    "#]]
    .assert_debug_eq(&alerts[..6].to_vec());
}

#[tokio::test]
async fn a_group_replaced_before_its_first_evaluation_still_restores() {
    let backend = Arc::new(Fake::default());
    hot(&backend, Some(90.0));
    let labels = Labels::from_pairs([("__name__", ALERTS_FOR_STATE), ("alertname", "Hot"), ("host", "n1")]);
    let since = (T0 - 5 * MIN) as f64 / 1000.0;
    backend.written.lock().unwrap().push(WriteSeries { labels, samples: vec![Sample::new(T0 - MIN, since)] });
    let (ev, _, group) = setup(backend);
    let mut old = GroupState::new(group.clone());
    let mut g = GroupState::new(group);
    g.copy_state(&mut old);
    ev.eval(&mut g, Timestamp(T0)).await;
    assert_eq!(g.alerting().next().unwrap().alerts()[0].active_at, Timestamp(T0 - 5 * MIN), "activeAt restored");
}

/// Templates see `$externalLabels` and `$externalURL`; the external labels go on each alert sent
/// where it lacks them, never on the rule's alerts or `ALERTS` (Prometheus' rules and notifier).
#[tokio::test]
async fn external_labels_in_templates_and_on_sent_alerts_only() {
    let backend = Arc::new(Fake::default());
    let a = Labels::from_pairs([("__name__", "up"), ("job", "a")]);
    let b = Labels::from_pairs([("__name__", "up"), ("job", "b"), ("cluster", "own")]);
    backend.answers.lock().unwrap().insert("up == 0".into(), vec![(a, 0.0), (b, 0.0)]);
    let sink = Arc::new(Sink::default());
    let opts = EvalOptions {
        external_labels: Labels::from_pairs([("cluster", "c1"), ("region", "eu")]),
        external_url: "https://argus.example".into(),
        ..EvalOptions::default()
    };
    let ev = Evaluator { backend: backend.clone(), sink: sink.clone(), opts };
    let rules = "groups:\n- name: g\n  rules:\n  - alert: Down\n    expr: up == 0\n    annotations: {summary: '{{ $labels.job }} in {{ $externalLabels.cluster }}: {{ $externalURL }}/alerts'}\n";
    let mut g = GroupState::new(parse(rules, "r.yml").unwrap().remove(0));
    g.skip_restore();
    ev.eval(&mut g, Timestamp(T0)).await;
    let got: Vec<String> =
        sink.0.lock().unwrap().iter().map(|(_, a)| format!("{:?} {}", a.labels, a.annotations["summary"])).collect();
    expect_test::expect![[r#"
        [
            "{\"alertname\": \"Down\", \"cluster\": \"own\", \"job\": \"b\", \"region\": \"eu\"} b in c1: https://argus.example/alerts",
            "{\"alertname\": \"Down\", \"cluster\": \"c1\", \"job\": \"a\", \"region\": \"eu\"} a in c1: https://argus.example/alerts",
        ]
    "#]]
    .assert_debug_eq(&got);
    let rule = g.alerting().next().unwrap();
    let own: Vec<String> = rule.alerts().iter().map(|a| a.labels.to_string()).collect();
    assert_eq!(own, [r#"{alertname="Down", cluster="own", job="b"}"#, r#"{alertname="Down", job="a"}"#]);
    let alerts = written(&backend, "ALERTS");
    assert_eq!(alerts.len(), 2, "{alerts:?}");
    assert!(alerts.iter().all(|w| !w.contains("region")), "{alerts:?}");
}

/// A sink that keeps the view it is told about.
#[derive(Default)]
struct Watching(Mutex<Option<RulesView>>);

impl AlertSink for Watching {
    fn send(&self, _: Timestamp, _: Vec<PostableAlert>) {}
    fn running(&self, groups: &RulesView) {
        *self.0.lock().unwrap() = Some(groups.clone());
    }
}

fn status_lines(view: &RulesView) -> Vec<String> {
    let m = |t: Option<Timestamp>| t.map_or(-1, |t| (t.0 - T0) / MIN);
    let mut out = Vec::new();
    for g in view.groups() {
        out.push(format!("{} {} every {:?}, last {}", g.file, g.name, g.interval, m(g.last_evaluation)));
        for r in &g.rules {
            let mut line = format!("  {} [{}] {}", r.name, r.query, r.health.as_str());
            if let Some(e) = &r.last_error {
                line += &format!(" ({e})");
            }
            if let Some(a) = &r.alerting {
                line += &format!(" {} for {:?}", a.state().as_str(), a.hold);
                for x in &a.alerts {
                    line +=
                        &format!(" | {} {} since {} = {}", x.labels, x.state.as_str(), m(Some(x.active_at)), x.value);
                }
            }
            out.push(line);
        }
    }
    out
}

/// The running groups publish their rules' health, errors and alerts; the sink is told where.
#[tokio::test(start_paused = true)]
async fn groups_publish_their_status() {
    let backend = Arc::new(Fake::default());
    hot(&backend, Some(90.0));
    backend.failing.lock().unwrap().insert("sum(broken)".into());
    let sink = Arc::new(Watching::default());
    let opts = EvalOptions { for_grace_period: Duration::from_secs(60), ..EvalOptions::default() };
    let ev = Arc::new(Evaluator { backend: backend.clone(), sink: sink.clone(), opts });
    let rules = format!("{RULES}  - record: broken:sum\n    expr: sum(broken)\n");
    let groups = Groups::default();
    let tasks = groups.spawn(parse(&rules, "r.yml").unwrap(), ev, TokioClock::starting_at(Timestamp(T0)));
    let view = sink.0.lock().unwrap().clone().expect("the sink is told about the groups");
    expect_test::expect![[r#"
        [
            "r.yml g every 60s, last -1",
            "  Hot [temp > 80] unknown inactive for 120s",
            "  temp:max [max(temp)] unknown",
            "  broken:sum [sum(broken)] unknown",
        ]
    "#]]
    .assert_debug_eq(&status_lines(&view));
    tokio::time::sleep(Duration::from_millis(2 * MIN as u64 + 1000)).await;
    expect_test::expect![[r#"
        [
            "r.yml g every 60s, last 2",
            "  Hot [temp > 80] ok firing for 120s | {alertname=\"Hot\", host=\"n1\"} firing since 0 = 90",
            "  temp:max [max(temp)] ok",
            "  broken:sum [sum(broken)] err (query failed: backend configuration: sum(broken) is broken)",
        ]
    "#]]
    .assert_debug_eq(&status_lines(&view));
    // A reload that drops the group leaves the view without it.
    for t in tasks {
        t.abort();
    }
    let _ = groups.spawn(
        Vec::new(),
        Arc::new(Evaluator { backend, sink, opts: EvalOptions::default() }),
        TokioClock::starting_at(Timestamp(T0)),
    );
    assert!(groups.view().groups().is_empty());
}

/// The lines of the rule metrics (`prometheus_rule_*`) for one `rule_group`, as `/metrics` shows them.
fn rule_metric_lines(rule_group: &str) -> Vec<String> {
    let mut registry = prometheus_client::registry::Registry::default();
    RuleMetrics::register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let label = format!("rule_group=\"{rule_group}\"");
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.contains(&label))
        .filter(|l| !l.starts_with("prometheus_rule_group_last_duration_seconds"))
        .map(|l| l.replace(&label, "G"))
        .collect();
    lines.sort();
    lines
}

/// Prometheus' rule metrics: evaluations and failures per group, the last evaluation's samples and
/// time, iterations missed by a slow evaluation, and the group's series gone when a reload drops it.
#[tokio::test(start_paused = true)]
async fn rule_metrics_count_evaluations_failures_samples_and_missed_iterations() {
    let backend = Arc::new(Fake::default());
    hot(&backend, Some(90.0));
    backend.failing.lock().unwrap().insert("sum(broken)".into());
    let (ev, _sink, _) = setup(backend.clone());
    let rules = RULES.replace("name: g", "name: metrics") + "  - record: broken:sum\n    expr: sum(broken)\n";
    let groups = Groups::default();
    let tasks = groups.spawn(parse(&rules, "m.yml").unwrap(), ev.clone(), TokioClock::starting_at(Timestamp(T0)));
    // Evaluations at 0, 1 and 2 minutes.
    tokio::time::sleep(Duration::from_millis(2 * MIN as u64 + 1000)).await;
    expect_test::expect![[r#"
        [
            "prometheus_rule_evaluation_failures_total{G} 3",
            "prometheus_rule_evaluations_total{G} 9",
            "prometheus_rule_group_interval_seconds{G} 60.0",
            "prometheus_rule_group_iterations_missed_total{G} 0",
            "prometheus_rule_group_iterations_total{G} 3",
            "prometheus_rule_group_last_evaluation_samples{G} 3",
            "prometheus_rule_group_last_evaluation_timestamp_seconds{G} 1700000120.0",
            "prometheus_rule_group_rules{G} 3",
        ]
    "#]]
    .assert_debug_eq(&rule_metric_lines("m.yml;metrics"));
    // The evaluation at minute 3 takes 2.5 minutes: the one due at minute 4 is missed, the one due
    // at minute 5 runs late (at 5:30, as Prometheus would).
    backend.slow.lock().unwrap().insert("temp > 80".into(), Duration::from_secs(150));
    tokio::time::sleep(Duration::from_millis(4 * MIN as u64)).await;
    expect_test::expect![[r#"
        [
            "prometheus_rule_evaluation_failures_total{G} 4",
            "prometheus_rule_evaluations_total{G} 12",
            "prometheus_rule_group_interval_seconds{G} 60.0",
            "prometheus_rule_group_iterations_missed_total{G} 1",
            "prometheus_rule_group_iterations_total{G} 5",
            "prometheus_rule_group_last_evaluation_samples{G} 3",
            "prometheus_rule_group_last_evaluation_timestamp_seconds{G} 1700000180.0",
            "prometheus_rule_group_rules{G} 3",
        ]
    "#]]
    .assert_debug_eq(&rule_metric_lines("m.yml;metrics"));
    for t in tasks {
        t.abort();
    }
    let _ = groups.spawn(Vec::new(), ev, TokioClock::starting_at(Timestamp(T0)));
    assert_eq!(rule_metric_lines("m.yml;metrics"), Vec::<String>::new());
}
