//! amtool (Alertmanager 0.25's CLI, Debian package prometheus-alertmanager) against alertd inside
//! `argus serve`: query alerts, add, query and expire silences — and the silence survives a restart.

use crate::support::server;

use serde_json::{Value, json};
use server::Server;
use std::process::Command;

/// Runs amtool against the server; returns stdout, failing the test with stderr when it fails.
fn amtool(s: &Server, args: &[&str]) -> String {
    let out = Command::new("amtool")
        .arg(format!("--alertmanager.url={}", s.base()))
        .args(args)
        .output()
        .expect("amtool runs (install the Debian package prometheus-alertmanager)");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "amtool {args:?} failed: {}{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout
}

fn names(v: &Value) -> Vec<String> {
    let mut n: Vec<String> = v
        .as_array()
        .expect("a JSON array")
        .iter()
        .map(|a| {
            format!(
                "{}@{}",
                a["labels"]["alertname"].as_str().unwrap_or(""),
                a["labels"]["host"].as_str().unwrap_or("")
            )
        })
        .collect();
    n.sort();
    n
}

#[test]
fn amtool_queries_alerts_and_manages_silences() {
    if !crate::support::peers::installed("amtool", "--version") {
        return;
    }
    let mut s = Server::start();
    let alerts = json!([
        {"labels": {"alertname": "GpuHot", "host": "gpu-1", "severity": "warning"}, "annotations": {"summary": "hot"}},
        {"labels": {"alertname": "DiskFull", "host": "gpu-2", "severity": "critical"}}
    ]);
    let r = s.post("/api/v2/alerts", &[("content-type", "application/json")], alerts.to_string());
    assert_eq!(r.status, 200, "{}", r.body);

    let all: Value = serde_json::from_str(&amtool(&s, &["alert", "query", "-o", "json"])).unwrap();
    assert_eq!(names(&all), ["DiskFull@gpu-2", "GpuHot@gpu-1"]);
    let hot: Value = serde_json::from_str(&amtool(&s, &["alert", "query", "-o", "json", "alertname=GpuHot"])).unwrap();
    assert_eq!(names(&hot), ["GpuHot@gpu-1"]);
    assert_eq!(hot[0]["annotations"]["summary"], "hot");

    let id = amtool(&s, &["silence", "add", "host=gpu-1", "--author=ops", "--comment=fan swap", "--duration=1h"]);
    let id = id.trim().to_string();
    assert_eq!(id.len(), 36, "amtool prints the new silence's id: {id:?}");
    assert_eq!(amtool(&s, &["silence", "query", "-q"]).trim(), id);
    let listed: Value = serde_json::from_str(&amtool(&s, &["silence", "query", "-o", "json", "host=gpu-1"])).unwrap();
    assert_eq!(listed[0]["comment"], "fan swap");
    assert_eq!(listed[0]["createdBy"], "ops");
    assert_eq!(listed[0]["status"]["state"], "active");

    // amtool shows active alerts by default; the silenced one is now left out, and shown on asking.
    let active: Value = serde_json::from_str(&amtool(&s, &["alert", "query", "-o", "json"])).unwrap();
    assert_eq!(names(&active), ["DiskFull@gpu-2"]);
    let silenced: Value = serde_json::from_str(&amtool(&s, &["alert", "query", "-o", "json", "--silenced"])).unwrap();
    assert_eq!(names(&silenced), ["GpuHot@gpu-1"]);
    assert_eq!(silenced[0]["status"]["silencedBy"], json!([id]));

    // The silence is in alertd.db: a restart keeps it, and it still mutes.
    s.restart();
    assert_eq!(amtool(&s, &["silence", "query", "-q"]).trim(), id);
    let r = s.post("/api/v2/alerts", &[("content-type", "application/json")], alerts.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let active: Value = serde_json::from_str(&amtool(&s, &["alert", "query", "-o", "json"])).unwrap();
    assert_eq!(names(&active), ["DiskFull@gpu-2"]);

    amtool(&s, &["silence", "expire", &id]);
    assert_eq!(amtool(&s, &["silence", "query", "-q"]).trim(), "");
    assert_eq!(amtool(&s, &["silence", "query", "-q", "--expired"]).trim(), id);
    let active: Value = serde_json::from_str(&amtool(&s, &["alert", "query", "-o", "json"])).unwrap();
    assert_eq!(names(&active), ["DiskFull@gpu-2", "GpuHot@gpu-1"]);

    // A bad matcher is refused by alertd with a message naming it, and nothing changes.
    let r = s.get("/api/v2/alerts?filter=host%3D~%22(%22");
    assert_eq!(r.status, 400);
    assert!(r.body.contains("invalid regex"), "{}", r.body);
    assert!(std::fs::metadata(s.data_dir().join("alertd.db")).is_ok());
}

#[test]
fn check_config_validates_alertd_yaml() {
    if !crate::support::peers::installed("amtool", "--version") {
        return;
    }
    let run =
        |f: &std::path::Path| Command::new(env!("CARGO_BIN_EXE_argus")).arg("check-config").arg(f).output().unwrap();
    let ok = run(std::path::Path::new("config/alertd.yml"));
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("alerts.yaml");
    std::fs::write(&bad, "route:\n  receiver: r\n  group_wiat: 10s\nreceivers: [{name: r}]\n").unwrap();
    let out = run(&bad);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("alerts.yaml:3: route: unknown field `group_wiat`"), "{err}");
}
