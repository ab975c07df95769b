//! Built-in rules, evaluated like any rule file's: **Watchdog** always fires, so an external
//! dead-man's switch notices when the paging path itself is down; **HostDown** fires when a host's
//! collector has sent nothing for a while. Collectors push, so there is no scrape `up`: the last
//! sample time per host is recorded as `argus_host_last_seen_timestamp_seconds{host}` and compared
//! with the evaluation time.

use super::{AlertingRule, RecordingRule, Rule, RuleGroup};
pub use crate::config::Builtins;
use std::collections::BTreeMap;
use std::time::Duration;

/// The recorded last sample time per host (Unix seconds).
pub const LAST_SEEN: &str = "argus_host_last_seen_timestamp_seconds";
/// How far back HostDown looks for a host's last sample: a host silent longer is forgotten.
const FORGET_AFTER: &str = "1d";

/// The `argus-builtin` group evaluated every `interval`, or None when every built-in is off.
pub fn group(b: &Builtins, interval: Duration) -> Option<RuleGroup> {
    let mut rules = Vec::new();
    if b.watchdog {
        rules.push(Rule::Alerting(AlertingRule {
            name: "Watchdog".into(),
            expr: "vector(1)".into(),
            forecast: None,
            hold: Duration::ZERO,
            keep_firing_for: Duration::ZERO,
            labels: BTreeMap::from([("severity".into(), "none".into())]),
            annotations: BTreeMap::from([(
                "summary".into(),
                "Always firing, so that the alerting pipeline is known to work".into(),
            )]),
        }));
    }
    if let Some(metric) = &b.host_down_metric {
        rules.push(Rule::Recording(RecordingRule {
            record: LAST_SEEN.into(),
            expr: format!("max by (host) (timestamp({{__name__={metric:?}}}))"),
            labels: BTreeMap::new(),
        }));
        let after = b.host_down_after.as_secs_f64();
        rules.push(Rule::Alerting(AlertingRule {
            name: "HostDown".into(),
            expr: format!("time() - max by (host) (last_over_time({LAST_SEEN}[{FORGET_AFTER}])) > {after}"),
            forecast: None,
            hold: Duration::ZERO,
            keep_firing_for: Duration::ZERO,
            labels: BTreeMap::from([("severity".into(), "critical".into())]),
            annotations: BTreeMap::from([(
                "summary".into(),
                "Host {{ $labels.host }} has sent no samples for {{ $value }}s".into(),
            )]),
        }));
    }
    if rules.is_empty() {
        return None;
    }
    Some(RuleGroup { file: "built-in".into(), name: "argus-builtin".into(), interval, rules })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::PostableAlert;
    use crate::rules::group::{AlertSink, EvalOptions, Evaluator, GroupState, embedded_for_tests};
    use crate::time::Timestamp;
    use argus_model::{Labels, Sample};
    use argus_store_api::backend::QueryValue;
    use argus_store_api::remote_write::WriteSeries;
    use std::sync::{Arc, Mutex};

    #[test]
    fn builtin_expressions_parse() {
        let g = group(&Builtins::default(), Duration::from_secs(15)).unwrap();
        let exprs: Vec<&str> = g
            .rules
            .iter()
            .map(|r| match r {
                Rule::Alerting(a) => a.expr.as_str(),
                Rule::Recording(r) => r.expr.as_str(),
            })
            .collect();
        for e in &exprs {
            argus_store_api::promql::check(e).unwrap_or_else(|err| panic!("{e}: {err}"));
        }
        expect_test::expect![[r#"
            [
                "vector(1)",
                "max by (host) (timestamp({__name__=\"host_cpu_seconds_total\"}))",
                "time() - max by (host) (last_over_time(argus_host_last_seen_timestamp_seconds[1d])) > 120",
            ]
        "#]]
        .assert_debug_eq(&exprs);
        let off = Builtins { watchdog: false, host_down_metric: None, ..Builtins::default() };
        assert_eq!(group(&off, Duration::from_secs(15)), None);
    }

    #[derive(Default)]
    struct Sink(Mutex<Vec<PostableAlert>>);

    impl AlertSink for Sink {
        fn send(&self, _: Timestamp, alerts: Vec<PostableAlert>) {
            self.0.lock().unwrap().extend(alerts);
        }
    }

    /// HostDown through the embedded store: host a falls silent, host b keeps sending.
    #[tokio::test]
    async fn host_down_fires_for_a_silent_host() {
        let (_dir, backend, t0) = embedded_for_tests(10);
        let cpu = |host: &str, t: i64| WriteSeries {
            labels: Labels::from_pairs([("__name__", "host_cpu_seconds_total"), ("host", host), ("mode", "idle")]),
            samples: vec![Sample::new(t, 1.0)],
        };
        backend.write(vec![cpu("a", t0), cpu("b", t0)]).await.unwrap();
        backend.write(vec![cpu("b", t0 + 180_000)]).await.unwrap();
        let sink = Arc::new(Sink::default());
        let ev = Evaluator { backend: backend.clone(), sink: sink.clone(), opts: EvalOptions::default() };
        let b = Builtins { watchdog: false, ..Builtins::default() };
        let mut g = GroupState::new(group(&b, Duration::from_secs(15)).unwrap());

        ev.eval(&mut g, Timestamp(t0 + 60_000)).await;
        assert!(sink.0.lock().unwrap().is_empty(), "both hosts seen within 2m");
        ev.eval(&mut g, Timestamp(t0 + 180_000)).await;
        let sent = sink.0.lock().unwrap().clone();
        let got: Vec<String> = sent.iter().map(|a| format!("{:?} {:?}", a.labels, a.annotations)).collect();
        expect_test::expect![[r#"
            [
                "{\"alertname\": \"HostDown\", \"host\": \"a\", \"severity\": \"critical\"} {\"summary\": \"Host a has sent no samples for 180s\"}",
            ]
        "#]]
        .assert_debug_eq(&got);
        let QueryValue::Vector(seen) = backend.query_instant(LAST_SEEN, t0 + 180_000).await.unwrap() else {
            panic!("a vector")
        };
        let seen: Vec<(String, f64)> = seen.iter().map(|(l, s)| (l.get("host").unwrap().to_string(), s.v)).collect();
        let secs = |t: i64| (t / 1000) as f64;
        assert_eq!(seen, [("a".to_string(), secs(t0)), ("b".to_string(), secs(t0 + 180_000))]);
    }
}
