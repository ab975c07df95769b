//! Argus' rule evaluation and templates against Prometheus 2.42's (the Debian package's
//! `promtool`): the rule corpus in tests/fixtures/rules-corpus/ is evaluated by Argus' rules
//! (`GroupState` and `Evaluator` over an embedded store, Argus' PromQL engine) every minute over
//! generated node-exporter and kube-state-metrics series; the alerts Argus fires at the end are
//! written, labels and annotations, as the expected alerts of a `promtool test rules` file over the
//! same series, one `alert_rule_test` per alerting rule of the corpus (rules Argus does not fire
//! expect none). promtool evaluates the same files with Prometheus' engine and template expansion
//! and passes only where every firing alert of every rule is equal.

use argus_alertd::rules::group::{AlertSink, EvalOptions, Evaluator, GroupState};
use argus_alertd::rules::{Rule, RuleGroup};
use argus_model::{Labels, Sample};
use argus_store::backend::{Embedded, StoreBackend};
use argus_store::query::QueryLimits;
use argus_store::remote_write::WriteSeries;
use argus_store::{Db, Options};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The corpus files loaded into both.
const FILES: &[&str] = &[
    "awesome-host-and-hardware-node-exporter.yml",
    "awesome-kubernetes-kubestate-exporter.yml",
    "kube-prometheus-nodeExporter.yaml",
    "kube-prometheus-kubeStateMetrics.yaml",
    "kube-prometheus-kubePrometheus.yaml",
    "kube-prometheus-kubernetesControlPlane.yaml",
];

/// Rules beside the corpus whose templates use what the corpus does not: `query` (also built from
/// a label, and from another query's answer), `range`, `with`, `if`/`else if`, variables, and the
/// humanize, time and string functions.
const TEMPLATES: &str = r#"groups:
- name: templates
  rules:
  - alert: TemplateFunctions
    expr: node_memory_MemTotal_bytes
    labels:
      size: '{{ $value | humanize1024 }}'
      host: '{{ $labels.instance | stripPort }}'
    annotations:
      query: '{{ with query "sum(node_load1)" }}{{ . | first | value | humanize }}{{ end }}'
      chained: '{{ $m := query (printf "node_memory_MemAvailable_bytes{instance=%q}" $labels.instance) | first }}{{ with query (printf "vector(%v) * 2" (value $m)) }}{{ . | first | value }}{{ end }}'
      range: '{{ range query "node_cpu_seconds_total" | sortByLabel "mode" }}{{ .Labels.mode }}={{ .Value }} {{ end }}'
      branch: '{{ if gt $value 1e12 }}huge{{ else if gt $value 1e9 }}{{ humanize $value }}B{{ else }}small{{ end }}'
      numbers: '{{ $value }} {{ printf "%.3e %g %5.1f%%" $value 0.000012345 12.345 }} {{ humanizePercentage 0.0625 }} {{ humanizeDuration 3725.5 }}'
      time: '{{ humanizeTimestamp 1700000000.25 }} {{ parseDuration "1h30m" }} {{ toTime 1700000000 }}'
      strings: '{{ title "host is down" }} {{ toUpper $labels.job }} {{ reReplaceAll "n([0-9]+):.*" "node-$1" $labels.instance }} {{ match "^n[0-9]" $labels.instance }} {{ graphLink "up == 0" }} {{ len $labels }} {{ index $labels "job" }}'
      missing: '[{{ $labels.nope }}] {{ query "absent_metric" }}{{ range query "absent_metric" }}x{{ else }}none{{ end }}'
"#;

/// Minutes of samples (one a minute from 0) and the minute at which alerts are compared.
const SAMPLES: i64 = 150;
const EVAL_AT: i64 = 120;

/// One generated series: its selector, first value and increment per minute (promtool's
/// `start+stepxN`); `clock` series hold Unix seconds, so their first value counts from the start.
struct Gen(&'static str, f64, f64, bool);

const NODE: &str = r#"job="node-exporter",instance="n1:9100",namespace="monitoring",service="node-exporter""#;
const KSM: &str = r#"job="kube-state-metrics",namespace="default""#;

fn data() -> Vec<(String, f64, f64, bool)> {
    let node = |s: &str| s.replace("NODE", NODE);
    let ksm = |s: &str| s.replace("KSM", KSM);
    let fs = r#"device="/dev/sda1",fstype="ext4",mountpoint="/""#;
    let gens = [
        Gen("up{NODE}", 0.0, 0.0, false),
        Gen("node_filesystem_avail_bytes{NODE,FS}", 1e9, 0.0, false),
        Gen("node_filesystem_size_bytes{NODE,FS}", 1e11, 0.0, false),
        Gen("node_filesystem_readonly{NODE,FS}", 0.0, 0.0, false),
        Gen("node_filesystem_files_free{NODE,FS}", 100.0, 0.0, false),
        Gen("node_filesystem_files{NODE,FS}", 1e6, 0.0, false),
        Gen("node_memory_MemAvailable_bytes{NODE}", 1e8, 0.0, false),
        Gen("node_memory_MemTotal_bytes{NODE}", 1.6e10, 0.0, false),
        Gen("node_load1{NODE}", 50.0, 0.0, false),
        Gen(r#"node_cpu_seconds_total{NODE,cpu="0",mode="idle"}"#, 0.0, 3.0, false),
        Gen(r#"node_cpu_seconds_total{NODE,cpu="0",mode="user"}"#, 0.0, 57.0, false),
        Gen("node_timex_offset_seconds{NODE}", 0.2, 0.0, false),
        Gen("node_timex_sync_status{NODE}", 0.0, 0.0, false),
        Gen("node_timex_maxerror_seconds{NODE}", 20.0, 0.0, false),
        Gen("node_time_seconds{NODE}", 100.0, 60.0, true),
        Gen(r#"node_network_receive_errs_total{NODE,device="eth0"}"#, 0.0, 600.0, false),
        Gen(r#"node_network_receive_packets_total{NODE,device="eth0"}"#, 0.0, 6000.0, false),
        Gen(r#"node_systemd_unit_state{NODE,name="nginx.service",state="failed"}"#, 1.0, 0.0, false),
        Gen(r#"node_hwmon_temp_celsius{NODE,chip="platform_coretemp_0",sensor="temp1"}"#, 95.0, 0.0, false),
        Gen(r#"node_hwmon_temp_crit_alarm_celsius{NODE,chip="platform_coretemp_0",sensor="temp1"}"#, 1.0, 0.0, false),
        Gen(r#"node_disk_io_time_seconds_total{NODE,device="sda"}"#, 0.0, 59.4, false),
        Gen(
            r#"kube_pod_container_status_waiting_reason{KSM,reason="CrashLoopBackOff",pod="web-1",container="app"}"#,
            1.0,
            0.0,
            false,
        ),
        Gen(r#"kube_pod_container_status_restarts_total{KSM,pod="web-1",container="app"}"#, 0.0, 1.0, false),
        Gen(r#"kube_deployment_spec_replicas{KSM,deployment="web"}"#, 3.0, 0.0, false),
        Gen(r#"kube_deployment_status_replicas_available{KSM,deployment="web"}"#, 1.0, 0.0, false),
        Gen(r#"kube_deployment_status_replicas_updated{KSM,deployment="web"}"#, 1.0, 0.0, false),
        Gen(r#"kube_deployment_status_observed_generation{KSM,deployment="web"}"#, 1.0, 0.0, false),
        Gen(r#"kube_deployment_metadata_generation{KSM,deployment="web"}"#, 2.0, 0.0, false),
        Gen(r#"kube_node_status_condition{KSM,node="n1",condition="Ready",status="true"}"#, 0.0, 0.0, false),
        Gen(r#"kube_node_status_condition{KSM,node="n1",condition="Ready",status="false"}"#, 1.0, 0.0, false),
        Gen(r#"kube_node_status_condition{KSM,node="n1",condition="MemoryPressure",status="true"}"#, 1.0, 0.0, false),
        Gen(r#"kube_persistentvolume_status_phase{KSM,persistentvolume="pv1",phase="Failed"}"#, 1.0, 0.0, false),
        Gen(r#"kube_job_status_failed{KSM,job_name="backup"}"#, 1.0, 0.0, false),
        Gen(r#"kube_pod_status_phase{KSM,pod="web-2",phase="Pending"}"#, 1.0, 0.0, false),
    ];
    gens.iter().map(|Gen(s, a, b, c)| (ksm(&node(s)).replace("FS", fs), *a, *b, *c)).collect()
}

/// `name{a="b",…}` as labels.
fn labels(selector: &str) -> Labels {
    let (name, rest) = selector.split_once('{').unwrap();
    let mut pairs = vec![("__name__".to_string(), name.to_string())];
    for kv in rest.trim_end_matches('}').split(',') {
        let (k, v) = kv.split_once('=').unwrap();
        pairs.push((k.to_string(), v.trim_matches('"').to_string()));
    }
    Labels::from_pairs(pairs)
}

struct Discard;

impl AlertSink for Discard {
    fn send(&self, _: argus_alertd::time::Timestamp, _: Vec<argus_alertd::alert::PostableAlert>) {}
}

/// Argus' firing alerts at `EVAL_AT` per rule name: labels without `alertname`, annotations.
type Fired = BTreeMap<String, Vec<(BTreeMap<String, String>, BTreeMap<String, String>)>>;

fn argus_alerts(groups: Vec<RuleGroup>, data: &[(String, f64, f64, bool)]) -> Fired {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path())).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, QueryLimits::default()));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    // Recent enough for the store; whole minutes, as promtool's times from 0 are.
    let base = (now - (SAMPLES + 10) * 60_000) / 60_000 * 60_000;
    let series: Vec<WriteSeries> = data
        .iter()
        .map(|(sel, start, step, clock)| {
            let mut v = if *clock { start + (base / 1000) as f64 } else { *start };
            let mut samples = Vec::new();
            for k in 0..=SAMPLES {
                samples.push(Sample::new(base + k * 60_000, v));
                // promtool's expanding notation adds the step again and again.
                v += step;
            }
            WriteSeries { labels: labels(sel), samples }
        })
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        backend.write(series).await.unwrap();
        let ev = Evaluator { backend: backend.clone(), sink: Arc::new(Discard), opts: EvalOptions::default() };
        let mut states: Vec<GroupState> = groups.into_iter().map(GroupState::new).collect();
        for k in 0..=EVAL_AT {
            for g in &mut states {
                ev.eval(g, argus_alertd::time::Timestamp(base + k * 60_000)).await;
            }
        }
        let mut fired = Fired::new();
        for g in &states {
            for rule in g.alerting() {
                let entry = fired.entry(rule.rule.name.clone()).or_default();
                for a in rule.alerts() {
                    if a.state != argus_alertd::rules::alerting::State::Firing {
                        continue;
                    }
                    let l =
                        a.labels.iter().filter(|l| l.name != "alertname").map(|l| (l.name.clone(), l.value.clone()));
                    let n = a.annotations.iter().map(|l| (l.name.clone(), l.value.clone()));
                    entry.push((l.collect(), n.collect()));
                }
            }
        }
        fired
    })
}

/// The promtool test file: the series, and each rule's expected alerts (Argus').
fn promtool_test(data: &[(String, f64, f64, bool)], fired: &Fired) -> String {
    let files: Vec<&str> = FILES.iter().copied().chain(["templates.yml"]).collect();
    let mut t =
        format!("rule_files: {}\nevaluation_interval: 1m\ntests:\n- interval: 1m\n  input_series:\n", json(&files));
    for (sel, start, step, _) in data {
        t.push_str(&format!("  - series: {}\n    values: '{start}+{step}x{SAMPLES}'\n", json(sel)));
    }
    t.push_str("  alert_rule_test:\n");
    for (name, alerts) in fired {
        t.push_str(&format!("  - eval_time: {EVAL_AT}m\n    alertname: {}\n    exp_alerts:", json(name)));
        if alerts.is_empty() {
            t.push_str(" []\n");
        }
        t.push('\n');
        for (l, a) in alerts {
            t.push_str(&format!("    - exp_labels: {}\n      exp_annotations: {}\n", json(l), json(a)));
        }
    }
    t
}

/// JSON is YAML: values written as JSON need no YAML escaping of their own.
fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap()
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rules-corpus")
}

#[test]
fn corpus_alerts_equal_prometheus() {
    let promtool = match argus_testkit::program("promtool", "apt-get install prometheus (2.42)") {
        Ok(p) => p,
        Err(missing) => return argus_testkit::missing_peer(&missing),
    };
    let mut groups = argus_alertd::rules::parse(TEMPLATES, "templates.yml").unwrap_or_else(|e| panic!("{e}"));
    for f in FILES {
        groups.extend(argus_alertd::rules::load(&corpus().join(f)).unwrap_or_else(|e| panic!("{e}")));
    }
    let mut names: Vec<String> = groups
        .iter()
        .flat_map(|g| &g.rules)
        .filter_map(|r| match r {
            Rule::Alerting(a) => Some(a.name.clone()),
            Rule::Recording(_) => None,
        })
        .collect();
    names.sort();
    names.dedup();
    let data = data();
    let mut fired = argus_alerts(groups, &data);
    for n in names {
        fired.entry(n).or_default();
    }
    let firing: Vec<&String> = fired.iter().filter(|(_, a)| !a.is_empty()).map(|(n, _)| n).collect();
    let with_templates = fired.values().flatten().filter(|(_, a)| a.values().any(|v| v.contains(' '))).count();
    assert!(firing.len() >= 15, "too few alerts fire on the generated data to compare: {firing:?}");
    assert!(with_templates >= 15, "{with_templates} alerts with expanded annotations");
    assert_eq!(fired["TemplateFunctions"].len(), 1, "{:?}", fired["TemplateFunctions"]);

    let dir = tempfile::tempdir().unwrap();
    for f in FILES {
        std::fs::copy(corpus().join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(dir.path().join("templates.yml"), TEMPLATES).unwrap();
    let test = dir.path().join("test.yml");
    std::fs::write(&test, promtool_test(&data, &fired)).unwrap();
    let out = std::process::Command::new(promtool).arg("test").arg("rules").arg(&test).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "promtool disagrees with Argus ({} rules firing: {firing:?}):\n{stdout}{}",
        firing.len(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("SUCCESS"), "{stdout}");
}
