//! `[store] max_query_memory` on a running server: a Grafana-like range query over every series is
//! refused with 422 naming the limit and the setting, a small query is still answered,
//! `argus_query_memory_refusals_total{caller="http"}` counts each refused request once, and the
//! rules keep evaluating meanwhile (their quarter of the budget is theirs alone).
//!
//! The refused reads are large enough to be split among threads (200 series, more than the 64
//! chunks a read decodes before it spreads): each thread grows the query's reservation and each may
//! be refused before the first error stops the others. Those refusals are one query's, and counted
//! once. Counted per refused thread, one refused request sometimes read 2 (100 refused requests
//! read 112 on two cores): neither a retry nor a second call of the client.

use crate::support::server;

use server::{Server, enc, now_ms, secs};
use std::time::{Duration, Instant};

/// Series of `big_value`, one per host, and their samples: an hour at 10 s.
const SERIES: usize = 200;
const SAMPLES: i64 = 360;
const STEP_MS: i64 = 10_000;
/// The budget: a quarter kept for the rules, 768 KiB for the API. A range query over all 200 series
/// at 15 s for an hour holds about 200 × (200 + 241 × 16) bytes = 790 KiB of points, more than the
/// API's share; one series, 4 KiB.
const BUDGET: &str = "1MiB";
const BUDGET_BYTES: f64 = 1_048_576.0;

const RULES: &str =
    "groups:\n  - name: memory\n    interval: 1s\n    rules:\n      - record: big:sum\n        expr: sum(big_value)\n";
const ALERTD: &str = "route:\n  receiver: none\nreceivers:\n- name: none\nargus:\n  rules:\n    files: [rules.yml]\n    defaults: false\n    watchdog: false\n    host_down: false\n";

fn start(dir: &std::path::Path) -> Server {
    std::fs::write(dir.join("alertd.yml"), ALERTD).unwrap();
    std::fs::write(dir.join("rules.yml"), RULES).unwrap();
    let alertd = dir.join("alertd.yml").display().to_string();
    Server::with_config(&format!("[store]\nmax_query_memory = \"{BUDGET}\"\n\n[alertd]\nconfig_file = {alertd:?}\n"))
}

/// Writes the hour of `big_value` ending at `end`.
fn write(s: &Server, end: i64) {
    for host in (0..SERIES).collect::<Vec<_>>().chunks(50) {
        let mut lines = String::new();
        for h in host {
            for k in 0..SAMPLES {
                let t = end - (SAMPLES - 1 - k) * STEP_MS;
                lines.push_str(&format!("big,host=h{h:03},job=gpu value={} {t}\n", (k * (*h as i64 + 1)) % 97));
            }
        }
        let r = s.write_ms(&lines);
        assert_eq!(r.status, 204, "write: {}", r.body);
    }
}

/// The value of the one `/metrics` sample whose name is `name` and whose labels contain `label`.
fn metric_with(s: &Server, name: &str, label: &str) -> Option<f64> {
    let r = s.get("/metrics");
    assert_eq!(r.status, 200, "{}", r.body);
    r.body
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(label))
        .find_map(|l| l.rsplit_once(' ').map(|(_, v)| v.parse().expect("metric value")))
}

fn refusals(s: &Server, caller: &str) -> f64 {
    s.metric(&format!("argus_query_memory_refusals_total{{caller=\"{caller}\"}}")).expect("refusals exported")
}

/// The group's last evaluation time, once it has one.
fn last_evaluation(s: &Server) -> Option<f64> {
    metric_with(s, "prometheus_rule_group_last_evaluation_timestamp_seconds", ";memory\"")
}

/// Waits until the rule group has evaluated after `after` (Unix seconds); its time.
fn evaluated_after(s: &Server, after: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(t) = last_evaluation(s).filter(|&t| t > after) {
            return t;
        }
        assert!(Instant::now() < deadline, "the rule group did not evaluate after {after}:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_query_past_max_query_memory_is_refused_once_while_small_queries_and_rules_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path());
    let end = now_ms() / 1000 * 1000;
    write(&s, end);
    let start = end - (SAMPLES - 1) * STEP_MS;
    assert_eq!(s.metric("argus_query_memory_limit_bytes"), Some(BUDGET_BYTES));
    assert_eq!(refusals(&s, "http"), 0.0);

    // The rules evaluate over the data (one sample of `sum(big_value)`) before anything is refused.
    let before = evaluated_after(&s, now_ms() as f64 / 1000.0);
    assert_eq!(metric_with(&s, "prometheus_rule_group_last_evaluation_samples", ";memory\""), Some(1.0));

    // A Grafana panel: rate over every series, an hour at 15 s, with Grafana's parameters.
    let panel = format!(
        "/api/v1/query_range?query={}&start={}&end={}&step=15&timeout=2m",
        enc("rate(big_value[1m])"),
        secs(start),
        secs(end)
    );
    let r = s.get(&panel);
    assert_eq!(r.status, 422, "{}", r.body);
    let body = r.json();
    assert_eq!(body["errorType"], "execution", "{body}");
    let error = body["error"].as_str().unwrap();
    assert!(error.starts_with("query needs "), "{error}");
    assert!(error.contains(" of the 1 MiB shared query memory (max_query_memory)"), "{error}");
    assert!(error.ends_with(", 256 KiB kept for rule evaluation"), "{error}");
    assert_eq!(refusals(&s, "http"), 1.0, "one refused request, one refusal");

    // More refused requests, of the range API's fast path (a plain selector) and of the general
    // evaluator, and an instant query of the raw samples: each request refused and counted once.
    // Counted per refused thread, 100 such requests read 112 (two cores, debug build).
    let range_of =
        |q: &str| format!("/api/v1/query_range?query={}&start={}&end={}&step=15", enc(q), secs(start), secs(end));
    let mut refused = 1;
    for q in ["big_value", "rate(big_value[1m])"].repeat(15) {
        let r = s.get(&range_of(q));
        assert_eq!(r.status, 422, "{q}: {}", r.body);
        refused += 1;
    }
    let r = s.get(&format!("/api/v1/query?query={}&time={}", enc("big_value[1h]"), secs(end)));
    assert_eq!(r.status, 422, "{}", r.body);
    refused += 1;
    assert_eq!(refusals(&s, "http"), refused as f64, "{refused} refused requests");

    // One series is answered, in full, and so is the rule's own query at one instant.
    let one = s.query_range("big_value{host=\"h007\"}", start, end, "15s");
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].1.len(), ((end - start) / 15_000 + 1) as usize);
    let sum = s.query("sum(big_value)", end);
    assert_eq!(sum["result"].as_array().map(Vec::len), Some(1), "{sum}");
    assert_eq!(refusals(&s, "http"), refused as f64, "answered queries are no refusals");

    // The rules went on evaluating, over the data, without a refusal or a failure.
    let later = evaluated_after(&s, before + 1.0);
    assert!(later >= before + 1.0, "{before} → {later}");
    assert_eq!(metric_with(&s, "prometheus_rule_group_last_evaluation_samples", ";memory\""), Some(1.0));
    assert_eq!(metric_with(&s, "prometheus_rule_evaluation_failures_total", ";memory\""), Some(0.0));
    assert_eq!(refusals(&s, "rules"), 0.0);
    // Every query gave back what it held.
    let deadline = Instant::now() + Duration::from_secs(5);
    while s.metric("argus_query_memory_bytes") != Some(0.0) {
        assert!(Instant::now() < deadline, "query memory still held: {:?}", s.metric("argus_query_memory_bytes"));
        std::thread::sleep(Duration::from_millis(50));
    }
}
