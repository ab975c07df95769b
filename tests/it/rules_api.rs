//! The store's `/api/v1/rules` and `/api/v1/alerts` answering the rule groups `argus serve`
//! evaluates, in Prometheus 2.42's shape: compared with the answer Prometheus 2.42 gave for the same
//! rule file (below), and with a real Prometheus (Debian package prometheus) when one is installed.
//! External labels and URL reach the templates, and the alerts alertd receives, not the rules' alerts.

use crate::support::server;

use serde_json::{Value, json};
use server::Server;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const RULES: &str = r#"
groups:
  - name: api
    interval: 1s
    rules:
      - alert: AlwaysFiring
        expr: vector(1)
        labels: {severity: warning}
        annotations: {summary: "value is {{ $value }} in {{ $externalLabels.cluster }} at {{ $externalURL }}"}
      - alert: Pending
        expr: vector(2)
        for: 1h
        keep_firing_for: 5m
      - record: job:three
        expr: vector(1) + on() group_left vector(2)
        labels: {a: b}
"#;

const ALERTD: &str = "route:\n  receiver: none\nreceivers:\n- name: none\nargus:\n  rules:\n    files: [rules.yml]\n    defaults: false\n    watchdog: false\n    host_down: false\n    external_labels: {cluster: c1}\n    external_url: https://argus.example/\n";

/// What Prometheus 2.42.0 answered to `/api/v1/rules` for `RULES` (with `global.external_labels:
/// {cluster: c1}` and `--web.external-url=https://argus.example/`), through [`normalized`].
fn prometheus_rules() -> Value {
    // An alerting rule with its one alert: the rule's annotations as written, the alert's expanded.
    let alerting =
        |name: &str, query: &str, state: &str, timing: (u64, u64), labels: Value, annotations: [Value; 2]| {
            let mut alert_labels = labels.clone();
            alert_labels["alertname"] = json!(name);
            let [written, expanded] = annotations;
            json!({
                "state": state, "name": name, "query": query, "duration": timing.0, "keepFiringFor": timing.1,
                "labels": labels, "annotations": written,
                "alerts": [{"labels": alert_labels, "annotations": expanded, "state": state, "activeAt": "<time>",
                    "value": if name == "Pending" { "2e+00" } else { "1e+00" }}],
                "health": "ok", "evaluationTime": "<seconds>", "lastEvaluation": "<time>", "type": "alerting",
            })
        };
    let summary = "value is {{ $value }} in {{ $externalLabels.cluster }} at {{ $externalURL }}";
    json!({"groups": [{
        "name": "api", "file": "rules.yml", "interval": 1, "limit": 0,
        "evaluationTime": "<seconds>", "lastEvaluation": "<time>",
        "rules": [
            alerting("AlwaysFiring", "vector(1)", "firing", (0, 0), json!({"severity": "warning"}),
                [json!({"summary": summary}), json!({"summary": "value is 1 in c1 at https://argus.example"})]),
            alerting("Pending", "vector(2)", "pending", (3600, 300), json!({}), [json!({}), json!({})]),
            {"name": "job:three", "query": "vector(1) + on () group_left () vector(2)", "labels": {"a": "b"},
                "health": "ok", "evaluationTime": "<seconds>", "lastEvaluation": "<time>", "type": "recording"},
        ],
    }]})
}

/// `data` with what differs between runs replaced: times (checked to be RFC 3339 and after the first
/// evaluation), evaluation durations (checked to be numbers), and the rule file's directory.
fn normalized(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = match k.as_str() {
                        "lastEvaluation" | "activeAt" => {
                            let t = v.as_str().unwrap_or_else(|| panic!("{k} is not a string: {v}"));
                            assert!(t.ends_with('Z') && t.starts_with("20") && t.contains('T'), "{k}: {t}");
                            json!("<time>")
                        }
                        "evaluationTime" => {
                            assert!(v.as_f64().is_some_and(|s| s >= 0.0), "{k}: {v}");
                            json!("<seconds>")
                        }
                        "file" => json!(v.as_str().unwrap_or("").rsplit('/').next().unwrap_or("")),
                        _ => normalized(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(normalized).collect()),
        v => v.clone(),
    }
}

/// Whether every rule has been evaluated and `AlwaysFiring` fires.
fn settled(rules: &Value) -> bool {
    let Some(groups) = rules["groups"].as_array() else { return false };
    let all: Vec<&Value> = groups.iter().flat_map(|g| g["rules"].as_array().into_iter().flatten()).collect();
    !all.is_empty()
        && all.iter().all(|r| r["health"] == "ok")
        && all.iter().any(|r| r["name"] == "AlwaysFiring" && r["state"] == "firing")
}

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(url: &str) -> (u16, Value) {
    let r = reqwest::blocking::Client::builder().no_proxy().build().unwrap().get(url).send().expect("GET");
    let status = r.status().as_u16();
    (status, r.json().unwrap_or(Value::Null))
}

/// A real Prometheus evaluating `RULES`, until its rules settled: its base URL.
fn prometheus(dir: &std::path::Path) -> Option<(Killed, String)> {
    let program = match argus_testkit::program("prometheus", "install the Debian package prometheus") {
        Ok(p) => p,
        Err(missing) => {
            argus_testkit::missing_peer(&missing);
            return None;
        }
    };
    std::fs::write(
        dir.join("prometheus.yml"),
        "global:\n  evaluation_interval: 1s\n  external_labels: {cluster: c1}\nrule_files: [rules.yml]\n",
    )
    .unwrap();
    let port = argus_testkit::free_port();
    let child = Command::new(program)
        .arg(format!("--config.file={}", dir.join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", dir.join("prom").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg("--web.external-url=https://argus.example/")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .expect("start prometheus");
    let prom = Killed(child);
    // With an external URL, Prometheus serves its API under that URL's path: here, the root.
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let answer = reqwest::blocking::get(format!("{base}/api/v1/rules")).ok().and_then(|r| r.json::<Value>().ok());
        if answer.is_some_and(|a| settled(&a["data"])) {
            return Some((prom, base));
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus' rules did not settle; its log:\n{}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn rules_and_alerts_in_prometheus_shape() {
    let dir = tempfile::tempdir().expect("scratch dir");
    std::fs::write(dir.path().join("alertd.yml"), ALERTD).unwrap();
    std::fs::write(dir.path().join("rules.yml"), RULES).unwrap();
    let s = Server::with_config(&format!(
        "[alertd]\nconfig_file = {:?}\n",
        dir.path().join("alertd.yml").display().to_string()
    ));
    let deadline = Instant::now() + Duration::from_secs(20);
    let rules = loop {
        let r = s.get("/api/v1/rules");
        assert_eq!(r.status, 200, "{}", r.body);
        let data = r.success_data();
        if settled(&data) {
            break data;
        }
        assert!(Instant::now() < deadline, "rules did not settle: {data}; log:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(normalized(&rules), prometheus_rules(), "{rules:#}");

    // The type filter keeps the group, with the rules of that type only.
    let names = |q: &str| -> Vec<String> {
        let data = s.get(&format!("/api/v1/rules{q}")).success_data();
        data["groups"][0]["rules"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names("?type=alert"), ["AlwaysFiring", "Pending"]);
    assert_eq!(names("?type=RECORD"), ["job:three"]);
    let bad = s.get("/api/v1/rules?type=bogus");
    assert_eq!(bad.status, 400, "{}", bad.body);
    let bad = bad.json();
    assert_eq!(bad["error"], r#"invalid parameter "type": not supported value "bogus""#);

    // /api/v1/alerts: the active alerts of every alerting rule.
    let alerts = normalized(&s.get("/api/v1/alerts").success_data());
    let expected_rules = prometheus_rules();
    let expected: Vec<Value> = expected_rules["groups"][0]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["alerts"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(alerts, json!({ "alerts": expected }));

    // The alert alertd received carries the external label; the rule's own alerts do not.
    let received = s.get("/api/v2/alerts?filter=alertname%3D%22AlwaysFiring%22").json();
    assert_eq!(received[0]["labels"]["cluster"], "c1", "{received}");
    assert_eq!(received[0]["annotations"]["summary"], "value is 1 in c1 at https://argus.example");

    // The same answers from a real Prometheus, when installed.
    if let Some((_prom, base)) = prometheus(dir.path()) {
        let (status, prom) = get(&format!("{base}/api/v1/rules"));
        assert_eq!(status, 200);
        assert_eq!(normalized(&prom["data"]), prometheus_rules(), "{prom:#}");
        let (_, prom_alerts) = get(&format!("{base}/api/v1/alerts"));
        assert_eq!(normalized(&prom_alerts["data"]), alerts);
        let (status, prom_bad) = get(&format!("{base}/api/v1/rules?type=bogus"));
        assert_eq!((status, &prom_bad["error"]), (400, &bad["error"]));
    }
}

/// Where the rules role runs in another process, the store answers no rule groups and no alerts.
#[test]
fn without_the_rules_role_the_store_answers_none() {
    let dir = tempfile::tempdir().expect("scratch dir");
    std::fs::write(dir.path().join("alertd.yml"), ALERTD).unwrap();
    std::fs::write(dir.path().join("rules.yml"), RULES).unwrap();
    let toml = format!("[alertd]\nconfig_file = {:?}\n", dir.path().join("alertd.yml").display().to_string());
    let s = Server::start_with(Some(&toml), &["--role", "store,alertd"]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(s.get("/api/v1/rules").success_data(), json!({ "groups": [] }));
    assert_eq!(s.get("/api/v1/alerts").success_data(), json!({ "alerts": [] }));
}
