//! `argus serve --role …` on a remote store: the rules, the analyzer and alertd running against a real
//! VictoriaMetrics, and against a real Prometheus with its remote-write receiver
//! (scripts/install-peers.sh installs both). A rule from `argus.rules.files` writes
//! `ALERTS` there, the analyzer warms up on history it reads from there and writes
//! `argus_anomaly_score` there, and alertd holds both alerts; the same parts split over two processes
//! hand their alerts over through `[server] alert_urls` (with the token of `alert_token_file` where
//! alertd asks for one). Refused role sets name the reason.

use crate::support::server;

use crate::support::peers;

use argus_model::{Labels, Sample};
use argus_store::backend::{Flavour, PrometheusOptions, RemoteSpec, StoreBackend};
use argus_store::remote_write::WriteSeries;
use peers::Peer;
use serde_json::Value;
use server::{Server, free_port, now_ms};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const STEP: i64 = 10_000;

/// A Prometheus-compatible store the roles run on, and how Argus names its kind.
struct RemoteStore {
    peer: Peer,
    flavour: Flavour,
}

fn victoria_metrics() -> Option<RemoteStore> {
    Some(RemoteStore { peer: Peer::victoria_metrics()?, flavour: Flavour::VictoriaMetrics })
}

fn prometheus() -> Option<RemoteStore> {
    Some(RemoteStore { peer: Peer::prometheus()?, flavour: Flavour::Prometheus })
}

impl RemoteStore {
    fn backend(&self) -> Arc<dyn StoreBackend> {
        let spec = RemoteSpec { flavour: self.flavour, url: Some(self.peer.base.clone()), ..Default::default() };
        let opts: PrometheusOptions = spec.validate().unwrap();
        Arc::new(argus_store::backend::Prometheus::new(opts).unwrap())
    }

    /// The series an instant PromQL query answers now, after making fresh writes searchable.
    fn query(&self, q: &str) -> Vec<Value> {
        let http = reqwest::blocking::Client::new();
        if self.flavour == Flavour::VictoriaMetrics {
            self.peer.flush();
        }
        let body = format!("query={}", url_encode(q));
        let r: Value = http
            .post(format!("{}/api/v1/query", self.peer.base))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .unwrap()
            .json()
            .unwrap();
        r["data"]["result"].as_array().cloned().unwrap_or_default()
    }
}

/// Percent-encodes every byte outside the unreserved set, for a form body.
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Eight GPUs of one host around 60 °C every 10 s over `[from, to]`; GPU 3 at 95 °C from `fault`.
fn temperatures(from: i64, to: i64, fault: i64) -> Vec<WriteSeries> {
    (0..8)
        .map(|gpu: i64| {
            let labels = Labels::from_pairs([
                ("__name__", "gpu_temperature_celsius".to_string()),
                ("host", "node-1".to_string()),
                ("gpu", gpu.to_string()),
            ]);
            let samples = (from / STEP..=to / STEP)
                .map(|i| {
                    let t = i * STEP;
                    let noise = ((i * 7919 + gpu * 104729) % 17) as f64 * 0.15;
                    let v = if gpu == 3 && t >= fault { 95.0 + noise } else { 60.0 + gpu as f64 * 0.4 + noise };
                    Sample { t, v }
                })
                .collect();
            WriteSeries { labels, samples }
        })
        .collect()
}

const RULES: &str = "
groups:
- name: gpu
  interval: 2s
  rules:
  - alert: GpuTooHot
    expr: gpu_temperature_celsius > 90
    labels:
      severity: critical
";

const ANALYZER: &str = r#"
[analyzer]
warmup = "1h"
alert_after = 2
resolve_after = 3
[[analyzer.rule]]
name = "gpu_temperature"
query = "gpu_temperature_celsius"
detectors = ["ewma", "peer"]
peer_by = ["host"]
peer_window = "2m"
direction = "above"
severity = "critical"
"#;

/// An alerting file whose rules are `RULES`, with every notification going to a black hole, in `dir`.
fn alerting_files(dir: &std::path::Path) -> std::path::PathBuf {
    std::fs::write(dir.join("rules.yml"), RULES).unwrap();
    let alerting = "route:\n  receiver: none\nreceivers:\n- name: none\nargus:\n  rules:\n    files: [rules.yml]\n";
    std::fs::write(dir.join("alertd.yml"), alerting).unwrap();
    dir.join("alertd.yml")
}

/// Feeds VictoriaMetrics the last hour of history now, then a sample a step as time passes (GPU 3 hot
/// from `fault`), until dropped.
struct Feeder {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Feeder {
    fn start(backend: Arc<dyn StoreBackend>, fault: i64) -> Feeder {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let now = now_ms() / STEP * STEP;
        rt.block_on(backend.write(temperatures(now - 70 * 60_000, now, fault))).expect("history into the store");
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut last = now;
            while !flag.load(Ordering::Relaxed) {
                let t = now_ms() / STEP * STEP;
                if t > last {
                    rt.block_on(backend.write(temperatures(last + STEP, t, fault))).expect("live samples");
                    last = t;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        });
        Feeder { stop, thread: Some(thread) }
    }
}

impl Drop for Feeder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Waits up to `secs` for `check`, then fails with `what` and the server's log.
fn wait_for(secs: u64, what: &str, log: &dyn Fn() -> String, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("{what} within {secs} s; log:\n{}", log());
}

/// Whether alertd holds both the rule's alert and the analyzer's (besides the built-in rules' own,
/// such as Watchdog).
fn holds_both(alertd: &Server) -> bool {
    let names = alertnames(alertd);
    names.iter().any(|n| n == "AnomalyDetected") && names.iter().any(|n| n == "GpuTooHot")
}

/// The alert names alertd holds.
fn alertnames(alertd: &Server) -> Vec<String> {
    let alerts = alertd.get("/api/v2/alerts").json();
    let mut names: Vec<String> = alerts
        .as_array()
        .map(|a| a.iter().filter_map(|x| x["labels"]["alertname"].as_str().map(String::from)).collect())
        .unwrap_or_default();
    names.sort();
    names.dedup();
    names
}

fn remote_config(vm: &RemoteStore, alerting: &std::path::Path, extra: &str) -> String {
    format!(
        "[store]\nbackend = \"prometheus\"\n[store.remote]\nflavour = \"{}\"\nurl = \"{}\"\n{extra}\n\
         [alertd]\nconfig_file = \"{}\"\n{ANALYZER}",
        vm.flavour.name(),
        vm.peer.base,
        alerting.display()
    )
}

#[test]
fn rules_analyzer_and_alertd_run_on_victoriametrics() {
    let Some(vm) = victoria_metrics() else { return };
    rules_analyzer_and_alertd_run_on(vm);
}

#[test]
fn rules_analyzer_and_alertd_run_on_prometheus() {
    let Some(prom) = prometheus() else { return };
    rules_analyzer_and_alertd_run_on(prom);
}

fn rules_analyzer_and_alertd_run_on(vm: RemoteStore) {
    let files = tempfile::tempdir().unwrap();
    let alerting = alerting_files(files.path());
    // The fault starts a minute after the server does, so the analyzer learns the healthy hour first.
    let fault = (now_ms() / STEP + 6) * STEP;
    let _feeder = Feeder::start(vm.backend(), fault);
    let argus = Server::start_with(Some(&remote_config(&vm, &alerting, "")), &["--role", "rules,analyzer,alertd"]);
    let log = || argus.log();
    assert!(!argus.data_dir().join("wal").exists(), "a process without the store role opened a store");
    // The query API is passed through to the remote store (the data is not here).
    let r = argus.get("/api/v1/query?query=1");
    assert_eq!(r.status, 200, "the query API passes through to the remote store: {}", r.body);
    // Prometheus answers `1` as a scalar, VictoriaMetrics as a one-sample vector: as the store gave it.
    assert_eq!(r.json()["status"], "success", "{}", r.body);
    wait_for(120, "ALERTS in the store", &log, || !vm.query(r#"ALERTS{alertname="GpuTooHot"}"#).is_empty());
    wait_for(120, "argus_anomaly_score in the store", &log, || {
        !vm.query(r#"argus_anomaly_score{metric="gpu_temperature_celsius",gpu="3"}"#).is_empty()
    });
    wait_for(120, "both alerts in alertd", &log, || holds_both(&argus));
    let hot = vm.query(r#"ALERTS{alertname="GpuTooHot",alertstate="firing"}"#);
    assert!(hot.iter().all(|s| s["metric"]["gpu"] == "3"), "only the hot GPU fires: {hot:?}");
}

#[test]
fn rules_and_analyzer_post_to_alert_urls_of_another_process() {
    let Some(vm) = victoria_metrics() else { return };
    let files = tempfile::tempdir().unwrap();
    let alerting = alerting_files(files.path());
    let fault = (now_ms() / STEP + 6) * STEP;
    let _feeder = Feeder::start(vm.backend(), fault);
    let alertd = Server::start_with(Some(&remote_config(&vm, &alerting, "")), &["--role", "alertd"]);
    let server = format!("[server]\nalert_urls = [\"{}\"]\n", alertd.base());
    let workers = Server::start_with(
        Some(&format!("{server}{}", remote_config(&vm, &alerting, ""))),
        &["--role", "rules,analyzer"],
    );
    let log = || format!("alertd:\n{}\nrules and analyzer:\n{}", alertd.log(), workers.log());
    wait_for(150, "both alerts posted to the alertd process", &log, || holds_both(&alertd));
    // The alertd-only process evaluates no rule of its own: ALERTS come from the rules process alone.
    assert!(!alertd.log().contains("Evaluating rules against the store"), "{}", alertd.log());
    assert_eq!(workers.get("/api/v2/alerts").status, 404, "alertd's API belongs to the alertd role");
}

#[test]
fn rules_and_analyzer_post_to_alert_urls_with_the_token_of_alert_token_file() {
    let Some(vm) = victoria_metrics() else { return };
    let files = tempfile::tempdir().unwrap();
    let alerting = alerting_files(files.path());
    let fault = (now_ms() / STEP + 6) * STEP;
    let _feeder = Feeder::start(vm.backend(), fault);
    // alertd takes alerts only with the token (reading them needs none here, for the test).
    let digest = server::token_digest("argus_fleet");
    let auth = format!(
        "[auth]\nanonymous = [\"read\"]\n[[auth.tokens]]\nname = \"fleet\"\nscopes = [\"write\"]\nsha256 = \"{digest}\"\n"
    );
    let alertd =
        Server::start_with(Some(&format!("{auth}{}", remote_config(&vm, &alerting, ""))), &["--role", "alertd"]);
    let token = files.path().join("alert-token");
    std::fs::write(&token, "argus_not_the_token\n").unwrap();
    let server = format!("[server]\nalert_urls = [\"{}\"]\nalert_token_file = {:?}\n", alertd.base(), token);
    let rules = Server::start_with(
        Some(&format!("{server}{}", remote_config(&vm, &alerting, ""))),
        &["--role", "rules,analyzer"],
    );
    let log = || format!("alertd:\n{}\nrules:\n{}", alertd.log(), rules.log());
    // A wrong token is refused, and the alert does not get in.
    wait_for(150, "a post refused for its token", &log, || rules.log().contains("answered 401"));
    assert!(!alertnames(&alertd).iter().any(|n| n == "GpuTooHot"), "{}", log());
    // The file is read again for every post: the right token gets the alert in without a restart.
    std::fs::write(&token, "argus_fleet\n").unwrap();
    // The rule's alert and the analyzer's anomaly alike.
    wait_for(150, "the rule's and the analyzer's alerts posted with the token", &log, || holds_both(&alertd));
}

/// `argus serve` with `args`, expected to refuse to start with a message containing `want`.
fn refused(config: Option<&str>, args: &[&str], want: &str) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_argus"));
    cmd.arg("serve").arg("--listen").arg(format!("127.0.0.1:{}", free_port())).arg("--data-dir").arg(dir.path());
    if let Some(c) = config {
        std::fs::write(dir.path().join("argus.toml"), c).unwrap();
        cmd.arg("--config").arg(dir.path().join("argus.toml"));
    }
    let out = cmd.args(args).stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains(want), "{args:?}: {stderr}");
}

#[test]
fn role_sets_that_cannot_work_are_refused_with_the_reason() {
    refused(None, &["--role", "rules,analyzer"], "this process has no store: add `store` to --role");
    refused(None, &["--role", "gpu"], "invalid value 'gpu' for '--role");
    let remote = "[store]\nbackend = \"prometheus\"\n[store.remote]\nurl = \"http://127.0.0.1:1\"\n";
    refused(Some(remote), &["--role", "store"], "--role store runs the embedded store");
    refused(Some(remote), &["--role", "rules", "--no-collector"], "the rules role needs [server] alert_urls");
    let mimir = "[store]\nbackend = \"prometheus\"\n[store.remote]\nflavour = \"mimir\"\nurl = \"http://127.0.0.1:1\"\ntenant = \"a\"\n";
    refused(
        Some(mimir),
        &["--role", "collector"],
        "the collector cannot write to [store.remote] by itself (flavour \"mimir\"",
    );
    refused(Some(remote), &["--demo"], "--demo runs on the embedded store");
}
