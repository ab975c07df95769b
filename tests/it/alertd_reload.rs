//! alertd's configuration reload inside `argus serve`: `POST /-/reload` after a route change, a
//! broken file refused with its line while the running configuration stays, and SIGHUP.

use crate::support::server;

use server::Server;
use std::time::{Duration, Instant};

const BEFORE: &str = "route:\n  receiver: team\nreceivers:\n- name: team\n";
const AFTER: &str = "route:\n  receiver: team\n  routes:\n  - matchers: ['severity=\"page\"']\n    receiver: pager\nreceivers:\n- name: team\n- name: pager\n";
const BROKEN: &str = "route:\n  receiver: team\n  group_wait: soon\nreceivers:\n- name: team\n";
const HUP: &str = "route:\n  receiver: oncall\nreceivers:\n- name: oncall\n";

fn receivers(s: &Server) -> String {
    let r = s.get("/api/v2/receivers");
    assert_eq!(r.status, 200, "{}", r.body);
    r.json().as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap().to_string()).collect::<Vec<_>>().join(",")
}

/// The receivers of the alerts' groups, for one alert labelled `severity="page"`.
fn routed_to(s: &Server) -> String {
    let r = s.get("/api/v2/alerts?filter=alertname%3D%22Probe%22");
    let v = r.json();
    let mut names: Vec<String> =
        v[0]["receivers"].as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap().to_string()).collect();
    names.sort();
    names.join(",")
}

#[test]
fn reload_applies_a_changed_route_refuses_a_broken_file_and_follows_sighup() {
    let dir = tempfile::tempdir().expect("scratch dir");
    let file = dir.path().join("alertd.yml");
    std::fs::write(&file, BEFORE).unwrap();
    let s = Server::with_config(&format!("[alertd]\nconfig_file = {:?}\n", file.display().to_string()));
    let alert = r#"[{"labels": {"alertname": "Probe", "severity": "page"}}]"#;
    assert_eq!(s.post("/api/v2/alerts", &[("content-type", "application/json")], alert).status, 200);
    assert_eq!((receivers(&s), routed_to(&s)), ("team".into(), "team".into()));
    assert_eq!(s.metric("alertmanager_config_last_reload_successful"), Some(1.0));

    std::fs::write(&file, AFTER).unwrap();
    let r = s.post("/-/reload", &[], "");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!((receivers(&s), routed_to(&s)), ("pager,team".into(), "pager".into()));
    assert!(s.get("/api/v2/status").json()["config"]["original"].as_str().unwrap().contains("pager"));

    std::fs::write(&file, BROKEN).unwrap();
    let r = s.post("/-/reload", &[], "");
    assert_eq!(r.status, 500, "{}", r.body);
    let want = format!("failed to reload config: {}:3: route.group_wait: invalid duration", file.display());
    assert!(r.body.contains(&want), "{}", r.body);
    assert_eq!(receivers(&s), "pager,team", "the running configuration stays");
    assert_eq!(s.metric("alertmanager_config_last_reload_successful"), Some(0.0));

    std::fs::write(&file, HUP).unwrap();
    let status = std::process::Command::new("kill").args(["-HUP", &s.pid().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while receivers(&s) != "oncall" {
        assert!(Instant::now() < deadline, "SIGHUP did not reload; log:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(routed_to(&s), "oncall");
    assert_eq!(s.metric("alertmanager_config_last_reload_successful"), Some(1.0));
    assert!(s.metric("alertmanager_config_last_reload_success_timestamp_seconds").unwrap() > 1.6e9);
}

const RULES_ALERTD: &str = "route:\n  receiver: team\nreceivers:\n- name: team\nargus:\n  rules:\n    files: [good.yml, other.yml]\n    defaults: false\n    watchdog: false\n    host_down: false\n";
const GOOD: &str = "groups:\n- name: good\n  interval: 1s\n  rules:\n  - record: one\n    expr: vector(1)\n";
const BAD: &str = "groups:\n- name: other\n  interval: 1s\n  rules:\n  - record: two\n    expr: vector(2) +\n";
const FIXED: &str = "groups:\n- name: other\n  interval: 1s\n  rules:\n  - record: two\n    expr: vector(2)\n";

/// The rule groups `/api/v1/rules` lists.
fn rule_groups(s: &Server) -> Vec<String> {
    let data = s.get("/api/v1/rules").success_data();
    data["groups"].as_array().unwrap().iter().map(|g| g["name"].as_str().unwrap().to_string()).collect()
}

/// A reload skips a refused rule file and reports it, keeps evaluating the others, and picks the
/// file up once it is fixed.
#[test]
fn reload_skips_a_bad_rule_file_and_reports_it() {
    let dir = tempfile::tempdir().expect("scratch dir");
    std::fs::write(dir.path().join("alertd.yml"), RULES_ALERTD).unwrap();
    std::fs::write(dir.path().join("good.yml"), GOOD).unwrap();
    std::fs::write(dir.path().join("other.yml"), FIXED).unwrap();
    let toml = format!("[alertd]\nconfig_file = {:?}\n", dir.path().join("alertd.yml").display().to_string());
    let s = Server::with_config(&toml);
    assert_eq!(rule_groups(&s), ["good", "other"]);
    assert_eq!(s.metric("argus_rules_files_refused"), Some(0.0));
    assert_eq!(s.metric("argus_rules_last_reload_successful"), Some(1.0));

    std::fs::write(dir.path().join("other.yml"), BAD).unwrap();
    let r = s.post("/-/reload", &[], "");
    assert_eq!(r.status, 200, "the other files still apply: {}", r.body);
    assert_eq!(rule_groups(&s), ["good"]);
    assert_eq!(s.metric("argus_rules_files_refused"), Some(1.0));
    assert_eq!(s.metric("argus_rules_last_reload_successful"), Some(0.0));
    assert_eq!(s.metric("alertmanager_config_last_reload_successful"), Some(1.0));
    assert!(s.log().contains("other.yml:6: groups[0].rules[0].expr:"), "{}", s.log());
    // The good group goes on being evaluated.
    let deadline = Instant::now() + Duration::from_secs(10);
    while s.query("one", server::now_ms())["result"].as_array().is_none_or(|r| r.is_empty()) {
        assert!(Instant::now() < deadline, "the good group is not evaluated; log:\n{}", s.log());
        std::thread::sleep(Duration::from_millis(200));
    }

    std::fs::write(dir.path().join("other.yml"), FIXED).unwrap();
    assert_eq!(s.post("/-/reload", &[], "").status, 200);
    assert_eq!(rule_groups(&s), ["good", "other"]);
    assert_eq!(s.metric("argus_rules_files_refused"), Some(0.0));
    assert_eq!(s.metric("argus_rules_last_reload_successful"), Some(1.0));
}
