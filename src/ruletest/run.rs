//! One test group, run as promtool runs it (cmd/promtool/unittest.go): the input series in an
//! embedded store of their own, every rule group evaluated in `group_eval_order` at each
//! `evaluation_interval` from 0 to the last `eval_time` with only the samples up to that time
//! loaded, firing alerts compared at the evaluation that covers each `alert_rule_test`, and the
//! `promql_expr_test`s answered once the evaluations are done.

use super::file::{ExprTest, PromDuration, TestGroup};
use super::format::{float_e, go_duration, indent_lines, labels, quote};
use super::series;
use argus_alertd::rules::alerting::State;
use argus_alertd::rules::group::{AlertSink, EvalOptions, Evaluator, GroupState};
use argus_alertd::{PostableAlert, Timestamp};
use argus_model::Labels;
use argus_store::backend::{Embedded, QueryValue, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::remote_write::WriteSeries;
use argus_store::{Db, Options, WalSync};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// A label set or annotations, sorted by name; empty values kept, as promtool compares them.
type Pairs = Vec<(String, String)>;

/// An alert as promtool compares it: labels, then annotations.
type AlertView = (Pairs, Pairs);

/// The failures of one test group, worded as promtool words them.
pub async fn test_group(
    tg: &TestGroup,
    eval_interval: PromDuration,
    order: &HashMap<String, usize>,
    rule_files: &[PathBuf],
) -> Vec<String> {
    match Run::new(tg, order, rule_files) {
        Ok(run) => run.test(tg, eval_interval.0).await,
        Err(e) => vec![e],
    }
}

/// Alerts go nowhere: the test reads them from the rules' states.
struct Discard;

impl AlertSink for Discard {
    fn send(&self, _now: Timestamp, _alerts: Vec<PostableAlert>) {}
}

/// A directory of its own under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, String> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("argus-ruletest-{}-{n}", std::process::id()));
        match std::fs::create_dir(&path) {
            Ok(()) => Ok(TempDir(path)),
            Err(e) => Err(format!("temporary store in {}: {e}", path.display())),
        }
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Run {
    /// The store's directory, removed when the run ends.
    _dir: TempDir,
    backend: Arc<dyn StoreBackend>,
    input: Vec<WriteSeries>,
    groups: Vec<GroupState>,
}

impl Run {
    fn new(tg: &TestGroup, order: &HashMap<String, usize>, rule_files: &[PathBuf]) -> Result<Run, String> {
        let mut input = Vec::with_capacity(tg.input_series.len());
        for s in &tg.input_series {
            let (labels, values) = series::parse_input(&s.series, &s.values)?;
            input.push(series::samples(labels, &values, tg.interval.0));
        }
        let dir = TempDir::new()?;
        let mut opts = Options::new(&dir.0);
        // Test series start at the Unix epoch and may reach centuries ahead: nothing is too old or
        // too far in the future. Nothing needs to survive a crash either.
        let centuries = Duration::from_secs(400 * 365 * 86_400);
        opts.retention = centuries;
        opts.max_future = centuries;
        opts.wal_sync = WalSync::Never;
        let db = Arc::new(Db::open(opts).map_err(|e| format!("temporary store in {}: {e}", dir.0.display()))?);
        let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
        let mut loaded = argus_alertd::rules::load_all(rule_files).map_err(|e| e.to_string())?;
        // promtool's order: groups named in `group_eval_order` by their place there, the others
        // as if first; ties keep the files' order.
        loaded.sort_by_key(|g| order.get(&g.name).copied().unwrap_or(0));
        let groups = loaded
            .into_iter()
            .map(|g| {
                let mut state = GroupState::new(g);
                // As promtool: ALERTS is written from the first evaluation, nothing is restored.
                state.skip_restore();
                state
            })
            .collect();
        Ok(Run { _dir: dir, backend, input, groups })
    }

    async fn test(mut self, tg: &TestGroup, interval: i64) -> Vec<String> {
        let test_name = if tg.name.is_empty() { String::new() } else { format!("    name: {},\n", tg.name) };
        let mut alert_tests: BTreeMap<PromDuration, Vec<usize>> = BTreeMap::new();
        for (i, t) in tg.alert_rule_test.iter().enumerate() {
            if t.alertname.is_empty() {
                let group = if tg.name.is_empty() { String::new() } else { format!(" (in TestGroup {})", tg.name) };
                return vec![format!(
                    "an item under alert_rule_test misses required attribute alertname at eval_time {}{group}",
                    t.eval_time
                )];
            }
            alert_tests.entry(t.eval_time).or_default().push(i);
        }
        let max_eval = tg
            .alert_rule_test
            .iter()
            .map(|t| t.eval_time)
            .chain(tg.promql_expr_test.iter().map(|t| t.eval_time))
            .max()
            .unwrap_or_default()
            .0;
        // As promtool: the group's external labels and URL reach the templates, not the alerts' labels.
        let opts = EvalOptions {
            external_labels: Labels::from_pairs(tg.external_labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
            external_url: tg.external_url.clone(),
            ..EvalOptions::default()
        };
        let evaluator = Evaluator { backend: self.backend.clone(), sink: Arc::new(Discard), opts };
        let mut pending = alert_tests.into_iter().peekable();
        let mut errors = Vec::new();
        let mut loaded_until = i64::MIN;
        let mut ts = 0;
        while ts <= max_eval {
            if let Err(e) = self.load(loaded_until, ts).await {
                errors.push(e);
                return errors;
            }
            loaded_until = ts;
            let mut eval_errors = Vec::new();
            for g in &mut self.groups {
                for (rule, error) in evaluator.eval_rules(g, Timestamp(ts)).await {
                    eval_errors.push(format!("    rule: {rule}, time: {}, err: {error}", go_duration(ts)));
                }
            }
            if !eval_errors.is_empty() {
                errors.extend(eval_errors);
                return errors;
            }
            // An eval_time is checked against the evaluation at or just before it.
            while let Some((at, cases)) = pending.next_if(|(at, _)| ts <= at.0 && at.0 < ts.saturating_add(interval)) {
                let names: BTreeSet<&str> = cases.iter().map(|&i| tg.alert_rule_test[i].alertname.as_str()).collect();
                let got = self.firing(&names);
                for &i in &cases {
                    let case = &tg.alert_rule_test[i];
                    let mut exp: Vec<AlertView> = case
                        .exp_alerts
                        .iter()
                        .map(|a| {
                            let mut l = a.exp_labels.clone();
                            l.insert("alertname".into(), case.alertname.clone());
                            (l.into_iter().collect(), a.exp_annotations.clone().into_iter().collect())
                        })
                        .collect();
                    exp.sort();
                    let got = got.get(case.alertname.as_str()).cloned().unwrap_or_default();
                    if exp != got {
                        let pad = "            ";
                        errors.push(format!(
                            "{test_name}    alertname: {}, time: {at}, \n        exp:{}, \n        got:{}",
                            case.alertname,
                            indent_lines(&alerts_string(&exp), pad),
                            indent_lines(&alerts_string(&got), pad)
                        ));
                    }
                }
            }
            ts = match ts.checked_add(interval) {
                Some(t) => t,
                None => break,
            };
        }
        for case in &tg.promql_expr_test {
            if let Some(e) = self.check_expr(case).await {
                errors.push(e);
            }
        }
        errors
    }

    /// Writes the input samples of `(after, until]`, as promtool's lazy loader adds them step by step.
    async fn load(&self, after: i64, until: i64) -> Result<(), String> {
        let batch: Vec<WriteSeries> = self
            .input
            .iter()
            .filter_map(|s| {
                let samples: Vec<_> = s.samples.iter().filter(|x| x.t > after && x.t <= until).copied().collect();
                (!samples.is_empty()).then(|| WriteSeries { labels: s.labels.clone(), samples })
            })
            .collect();
        if batch.is_empty() {
            return Ok(());
        }
        self.backend.write(batch).await.map_err(|e| format!("loading input series up to {}: {e}", go_duration(until)))
    }

    /// The firing alerts of the rules named `names`, by rule name, sorted; rules of one name in
    /// several groups together.
    fn firing(&self, names: &BTreeSet<&str>) -> HashMap<String, Vec<AlertView>> {
        let mut got: HashMap<String, Vec<AlertView>> = HashMap::new();
        for g in &self.groups {
            for rule in g.alerting().filter(|a| names.contains(a.rule.name.as_str())) {
                let alerts = got.entry(rule.rule.name.clone()).or_default();
                for a in rule.alerts().into_iter().filter(|a| a.state == State::Firing) {
                    alerts.push((pairs(&a.labels), pairs(&a.annotations)));
                }
            }
        }
        for alerts in got.values_mut() {
            alerts.sort();
        }
        got
    }

    async fn check_expr(&self, case: &ExprTest) -> Option<String> {
        let at = case.eval_time;
        let fail = |e: String| Some(format!("    expr: {}, time: {at}, err: {e}", quote(&case.expr)));
        let got = match self.backend.query_instant(&case.expr, at.0).await {
            Ok(QueryValue::Vector(v)) => v.into_iter().map(|(l, s)| (pairs(&l), s.v)).collect(),
            Ok(QueryValue::Scalar(s)) => vec![(Vec::new(), s.v)],
            Ok(_) => return fail("rule result is not a vector or scalar".into()),
            Err(e) => return fail(e.to_string()),
        };
        let mut exp = Vec::with_capacity(case.exp_samples.len());
        for s in &case.exp_samples {
            match series::parse_metric(&s.labels) {
                Ok(l) => exp.push((pairs(&l), s.value)),
                Err(e) => return fail(format!("labels {}: {e}", quote(&s.labels))),
            }
        }
        let sort = |v: &mut Vec<(Pairs, f64)>| v.sort_by(|a, b| a.0.cmp(&b.0));
        let mut got: Vec<(Pairs, f64)> = got;
        sort(&mut got);
        sort(&mut exp);
        // Exact equality, as promtool's reflect.DeepEqual: NaN never matches.
        let same = exp.len() == got.len() && exp.iter().zip(&got).all(|(e, g)| e.0 == g.0 && e.1 == g.1);
        if same {
            return None;
        }
        Some(format!(
            "    expr: {}, time: {at},\n        exp: {}\n        got: {}",
            quote(&case.expr),
            samples_string(&exp),
            samples_string(&got)
        ))
    }
}

fn pairs(l: &Labels) -> Pairs {
    l.iter().map(|l| (l.name.clone(), l.value.clone())).collect()
}

fn pairs_string(p: &Pairs) -> String {
    labels(p.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// promtool's `labelsAndAnnotations.String()`.
fn alerts_string(alerts: &[AlertView]) -> String {
    if alerts.is_empty() {
        return "[]".into();
    }
    let items: Vec<String> = alerts
        .iter()
        .enumerate()
        .map(|(i, (l, a))| {
            let body = format!("\nLabels:{}\nAnnotations:{}", pairs_string(l), pairs_string(a));
            format!("{i}:{}", indent_lines(&body, "  "))
        })
        .collect();
    format!("[\n{}\n]", items.join(",\n"))
}

/// promtool's `parsedSamplesString`.
fn samples_string(samples: &[(Pairs, f64)]) -> String {
    if samples.is_empty() {
        return "nil".into();
    }
    samples.iter().map(|(l, v)| format!("{} {}", pairs_string(l), float_e(*v))).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    const RULES: &str = "groups:\n- name: g\n  rules:\n  - alert: Down\n    expr: up == 0\n    annotations:\n      summary: '{{ $labels.job }} down in {{ $externalLabels.cluster }}, see {{ $externalURL }}/alerts'\n";

    /// A test file whose one group expects `labels` on the alert, with external labels and URL set.
    fn unit_test(labels: &str) -> String {
        format!(
            "rule_files: [rules.yml]\nevaluation_interval: 1m\ntests:\n- interval: 1m\n  external_labels: {{cluster: c1}}\n  external_url: https://argus.example\n  input_series:\n  - series: 'up{{job=\"a\"}}'\n    values: '0 0 0'\n  alert_rule_test:\n  - eval_time: 2m\n    alertname: Down\n    exp_alerts:\n    - exp_labels: {labels}\n      exp_annotations: {{summary: 'a down in c1, see https://argus.example/alerts'}}\n"
        )
    }

    async fn failures(test: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rules.yml"), RULES).unwrap();
        let file = dir.path().join("test.yml");
        std::fs::write(&file, test).unwrap();
        super::super::test_file(&file).await
    }

    /// External labels and URL reach the templates, as in promtool, and not the alert's labels.
    #[tokio::test]
    async fn external_labels_and_url_reach_templates_only() {
        assert_eq!(failures(&unit_test("{job: a}")).await, Vec::<String>::new());
        let with_cluster = failures(&unit_test("{job: a, cluster: c1}")).await;
        assert_eq!(with_cluster.len(), 1, "{with_cluster:?}");
        assert!(with_cluster[0].contains("alertname: Down, time: 2m"), "{}", with_cluster[0]);
    }
}
