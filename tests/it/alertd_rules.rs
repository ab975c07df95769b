//! Prometheus rule evaluation inside `argus serve`: a rule file named by the alertd config's
//! `argus.rules`, samples written to the store, and the alert seen in `/api/v2/alerts` and as `ALERTS`
//! through `/api/v1/query`; a refused rule file skipped and reported while the others run.

use crate::support::server;

use serde_json::Value;
use server::{Server, now_ms};
use std::time::{Duration, Instant};

const ALERTD: &str = "route:\n  receiver: none\nreceivers:\n- name: none\nargus:\n  rules:\n    files: [rules.yml]\n";
const RULES: &str = "groups:\n- name: gpu\n  interval: 1s\n  rules:\n  - alert: GpuHot\n    expr: gpu_temp_celsius > 80\n    labels: {severity: warning}\n    annotations: {summary: '{{ $labels.host }} at {{ $value }}C'}\n";

#[test]
fn rule_fires_into_the_api_and_alerts_series() {
    let dir = tempfile::tempdir().expect("scratch dir");
    std::fs::write(dir.path().join("alertd.yml"), ALERTD).expect("write alertd config");
    std::fs::write(dir.path().join("rules.yml"), RULES).expect("write rules");
    let toml = format!("[alertd]\nconfig_file = {:?}\n", dir.path().join("alertd.yml").display().to_string());
    let s = Server::with_config(&toml);
    let t = now_ms();
    let r = s.write_ms(&format!("gpu,host=n1 temp_celsius=91 {t}\ngpu,host=n2 temp_celsius=40 {t}"));
    assert_eq!(r.status, 204, "{}", r.body);

    let deadline = Instant::now() + Duration::from_secs(20);
    let alerts = loop {
        let r = s.get("/api/v2/alerts");
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        let mut a: Vec<Value> = v.as_array().cloned().unwrap_or_default();
        a.sort_by_key(|a| a["labels"]["alertname"].as_str().unwrap_or("").to_string());
        if a.iter().any(|a| a["labels"]["alertname"] == "GpuHot") {
            break a;
        }
        assert!(Instant::now() < deadline, "no alert from the rule: {v}; log:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    };
    let names: Vec<&str> = alerts.iter().map(|a| a["labels"]["alertname"].as_str().unwrap_or("")).collect();
    assert_eq!(names, ["GpuHot", "Watchdog"], "one GpuHot (n2 is cool) and the built-in Watchdog");
    let a = &alerts[0];
    assert_eq!(a["labels"]["host"], "n1");
    assert_eq!(a["labels"]["severity"], "warning");
    assert_eq!(a["annotations"]["summary"], "n1 at 91C");
    assert_eq!(a["status"]["state"], "active");
    assert_eq!(alerts[1]["labels"]["severity"], "none");

    // ALERTS are written from the evaluation after the one that restores `for` state.
    let result = loop {
        let data = s.query("ALERTS{alertname=\"GpuHot\"}", now_ms());
        let result = data["result"].as_array().cloned().unwrap_or_default();
        if !result.is_empty() {
            break result;
        }
        assert!(Instant::now() < deadline, "no ALERTS series: {data}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(result.len(), 1, "{result:?}");
    let m = &result[0]["metric"];
    assert_eq!((&m["alertname"], &m["alertstate"], &m["host"]), (&"GpuHot".into(), &"firing".into(), &"n1".into()));
}

/// A refused rule file is reported and skipped: the server starts and evaluates the other files;
/// `argus check-config` still refuses it.
#[test]
fn a_bad_rule_file_is_skipped_and_reported() {
    let dir = tempfile::tempdir().expect("scratch dir");
    let alertd = ALERTD.replace("files: [rules.yml]", "files: [bad.yml, rules.yml]");
    std::fs::write(dir.path().join("alertd.yml"), alertd).expect("write alertd config");
    std::fs::write(dir.path().join("rules.yml"), RULES).expect("write rules");
    std::fs::write(dir.path().join("bad.yml"), "groups:\n- name: broken\n  rules:\n  - alert: A\n    expr: up ==\n")
        .expect("write the bad rules");
    let toml = format!("[alertd]\nconfig_file = {:?}\n", dir.path().join("alertd.yml").display().to_string());
    let s = Server::with_config(&toml);
    let t = now_ms();
    let r = s.write_ms(&format!("gpu,host=n1 temp_celsius=91 {t}"));
    assert_eq!(r.status, 204, "{}", r.body);

    // The good file's rule fires.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = s.get("/api/v2/alerts?filter=alertname%3D%22GpuHot%22").json();
        if v.as_array().is_some_and(|a| !a.is_empty()) {
            break;
        }
        assert!(Instant::now() < deadline, "no alert from the good rule file: {v}; log:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    // The bad one is reported: its error in the log, the count in the metrics, and it is not served.
    let log = s.log();
    assert!(log.contains("bad.yml:5: groups[0].rules[0].expr:"), "{log}");
    assert_eq!(s.metric("argus_rules_files_refused"), Some(1.0));
    assert_eq!(s.metric("argus_rules_last_reload_successful"), Some(0.0));
    let rules = s.get("/api/v1/rules").success_data();
    let groups: Vec<&str> = rules["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap()).collect();
    assert!(groups.contains(&"gpu") && !groups.contains(&"broken"), "{groups:?}");

    // check-config refuses it, through the alertd file or given the rule file itself.
    for f in ["alertd.yml", "bad.yml"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_argus"))
            .arg("check-config")
            .arg(dir.path().join(f))
            .output()
            .expect("run argus check-config");
        assert!(!out.status.success(), "{f}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("bad.yml:5: groups[0].rules[0].expr:"), "{f}: {err}");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_argus"))
        .arg("check-config")
        .arg(dir.path().join("rules.yml"))
        .output()
        .expect("run argus check-config");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}
