//! Argus watching itself, end to end on the real binary: its own metrics stored under `job="argus"`
//! and read back through PromQL, `/api/v1/status/tsdb` on known series, Prometheus' rule metrics after
//! evaluations, and a query over `max_query_samples` refused with 422 and counted.

use crate::support::server::{self, Server};

use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Polls `f` every 200 ms until it answers, or fails after `within`.
fn wait_for<T>(within: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + within;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < until, "{what}: not within {within:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn its_own_metrics_land_under_job_argus_and_read_back_through_promql() {
    let s = Server::with_config("[self_monitoring]\ninterval = \"1s\"\n");
    let instance = s.base().trim_start_matches("http://").to_string();
    let result = wait_for(Duration::from_secs(20), "argus_store_head_series{job=\"argus\"}", || {
        let data = s.query("argus_store_head_series{job=\"argus\"}", server::now_ms());
        data["result"].as_array().filter(|r| !r.is_empty()).cloned()
    });
    assert_eq!(result.len(), 1, "{result:?}");
    assert_eq!(result[0]["metric"]["instance"], json!(instance), "{result:?}");
    let up = s.query("up{job=\"argus\"}", server::now_ms());
    assert_eq!(up["result"][0]["value"][1], json!("1"), "{up}");
    // The next rounds count this process's own HTTP requests, the queries above among them.
    let q = format!("argus_http_requests_total{{job=\"argus\",instance=\"{instance}\",handler=\"/api/v1/query\"}}");
    wait_for(Duration::from_secs(20), "the self-scrape counting queries", || {
        let data = s.query(&q, server::now_ms());
        let v = data["result"][0]["value"][1].as_str()?.parse::<f64>().ok()?;
        (v >= 1.0).then_some(())
    });
}

#[test]
fn self_monitoring_can_be_turned_off() {
    let s = Server::with_config("[self_monitoring]\nenabled = false\n");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(s.series("{job=\"argus\"}"), Vec::new());
}

#[test]
fn tsdb_status_counts_known_series_exactly() {
    // The store alone: no rule, analyzer or self-monitoring series beside the ones written here.
    let s = Server::start_with(Some("[self_monitoring]\nenabled = false\n"), &["--role", "store"]);
    let t = server::now_ms() - 60_000;
    let lines = [
        format!("gpu,host=a,gpu=0 util=1 {t}"),
        format!("gpu,host=a,gpu=1 util=1 {t}"),
        format!("gpu,host=b,gpu=0 util=1,temp=40 {t}"),
        format!("node,host=a load=1 {t}"),
    ];
    let r = s.write_ms(&lines.join("\n"));
    assert_eq!(r.status, 204, "{}", r.body);
    let r = s.get("/api/v1/status/tsdb?limit=2");
    assert_eq!(r.status, 200, "{}", r.body);
    let d = &r.json()["data"];
    // gpu_util ×3, gpu_temp ×1, node_load ×1.
    // Every sample at `t`; nothing flushed to a block yet: one open head chunk per series.
    assert_eq!(
        d["headStats"],
        json!({"numSeries": 5, "numLabelPairs": 7, "chunkCount": 5, "minTime": t, "maxTime": t}),
        "{d}"
    );
    assert_eq!(d["totalSeries"], json!(5));
    assert_eq!(d["totalLabelValuePairs"], json!(14));
    assert_eq!(
        d["seriesCountByMetricName"],
        json!([{"name": "gpu_util", "value": 3}, {"name": "gpu_temp", "value": 1}]),
        "{d}"
    );
    // Ties (host=a, gpu=0 and __name__=gpu_util hold three series each) go by name.
    assert_eq!(
        d["seriesCountByLabelValuePair"],
        json!([{"name": "__name__=gpu_util", "value": 3}, {"name": "gpu=0", "value": 3}]),
        "{d}"
    );
    assert_eq!(
        d["labelValueCountByLabelName"],
        json!([{"name": "__name__", "value": 3}, {"name": "gpu", "value": 2}]),
        "{d}"
    );
    // VictoriaMetrics' parameters: a selector, topN and a focus label.
    let r = s.get("/api/v1/status/tsdb?match[]=gpu_util&topN=5&focusLabel=host");
    let d = &r.json()["data"];
    assert_eq!(d["totalSeries"], json!(3), "{d}");
    assert_eq!(d["seriesCountByFocusLabelValue"], json!([{"name": "a", "value": 2}, {"name": "b", "value": 1}]), "{d}");
    let r = s.get("/api/v1/status/tsdb?topN=0");
    assert_eq!((r.status, r.json()["errorType"].clone()), (400, json!("bad_data")), "{}", r.body);
}

const RULES: &str = "groups:\n  - name: selfmon\n    interval: 1s\n    rules:\n      - record: job:two\n        expr: vector(1) + vector(1)\n      - record: job:broken\n        expr: '\"text\"'\n";

#[test]
fn rule_metrics_follow_the_evaluations() {
    let dir = tempfile::tempdir().unwrap();
    let alertd = "route:\n  receiver: none\nreceivers:\n- name: none\nargus:\n  rules:\n    files: [rules.yml]\n    defaults: false\n    watchdog: false\n    host_down: false\n";
    std::fs::write(dir.path().join("alertd.yml"), alertd).unwrap();
    std::fs::write(dir.path().join("rules.yml"), RULES).unwrap();
    let s = Server::with_config(&format!(
        "[alertd]\nconfig_file = {:?}\n[self_monitoring]\ninterval = \"1s\"\n",
        dir.path().join("alertd.yml").display().to_string()
    ));
    // `rule_group` is `<file>;<group>`, the file as alertd names it (the path it was loaded from).
    let g = "rule_group=~\".*rules.yml;selfmon\"";
    // Every evaluation: one rule fails (a string is no vector), the other writes one sample. Read
    // until one reading of /metrics falls between evaluations (its counters then agree).
    let until = Instant::now() + Duration::from_secs(20);
    let metrics = loop {
        let body = s.get("/metrics").body;
        let value = |name: &str| -> Option<f64> {
            let prefix = format!("{name}{{rule_group=\"");
            body.lines()
                .filter_map(|l| l.strip_prefix(prefix.as_str()))
                .find_map(|rest| rest.split_once("rules.yml;selfmon\"} ").map(|(_, v)| v.trim().to_string()))
                .and_then(|v| v.parse().ok())
        };
        let names = [
            "prometheus_rule_group_iterations_total",
            "prometheus_rule_evaluation_failures_total",
            "prometheus_rule_evaluations_total",
            "prometheus_rule_group_last_evaluation_samples",
            "prometheus_rule_group_rules",
            "prometheus_rule_group_interval_seconds",
            "prometheus_rule_group_iterations_missed_total",
        ];
        let v: Vec<Option<f64>> = names.iter().map(|n| value(n)).collect();
        if let Some(v) = v.iter().copied().collect::<Option<Vec<f64>>>()
            && v[0] >= 2.0
            && v[1] == v[0]
            && v[2] == 2.0 * v[0]
        {
            break v;
        }
        assert!(Instant::now() < until, "no two evaluations with one failure each in 20 s: {names:?} = {v:?}");
        std::thread::sleep(Duration::from_millis(200));
    };
    // Missed iterations exist from the start (their count depends on the machine's load).
    assert_eq!(metrics[3..6], [1.0, 2.0, 1.0], "samples, rules, interval: {metrics:?}");
    // Stored by the self-scrape too, for the dashboard and alerts to read.
    let q = format!("prometheus_rule_evaluation_failures_total{{job=\"argus\",{g}}}");
    wait_for(Duration::from_secs(20), "rule failures stored", || {
        let data = s.query(&q, server::now_ms());
        data["result"].as_array().filter(|r| !r.is_empty()).map(|_| ())
    });
}

#[test]
fn a_query_over_the_sample_limit_is_refused_with_422_and_counted() {
    let s = Server::with_config("[store]\nmax_query_samples = 200\n[self_monitoring]\nenabled = false\n");
    let t = server::now_ms() - 600_000;
    let lines: Vec<String> = (0..300).map(|i| format!("big,host=h{} v={i} {}", i % 3, t + i * 1000)).collect();
    assert_eq!(s.write_ms(&lines.join("\n")).status, 204);
    let counted = "argus_http_requests_total{handler=\"/api/v1/query\",code=\"422\"}";
    assert_eq!(s.metric(counted), None);
    let r = s.get(&format!("/api/v1/query?query=sum(count_over_time(big_v[10m]))&time={}", (t + 300_000) / 1000));
    assert_eq!(r.status, 422, "{}", r.body);
    let body: Value = r.json();
    assert_eq!(body["errorType"], json!("execution"), "{body}");
    assert!(body["error"].as_str().unwrap().contains("too many samples"), "{body}");
    assert_eq!(s.metric(counted), Some(1.0));
    // A query within the limit still runs: the five-minute lookback at the end holds 10 samples.
    let r = s.get(&format!("/api/v1/query?query=sum(big_v)&time={}", (t + 590_000) / 1000));
    assert_eq!(r.status, 200, "{}", r.body);
}
