//! `/api/openapi.json` against the server it describes: a real `argus serve` (store, alertd and the
//! analyzer on) with a little data, alerts, a silence and anomaly findings in it, fuzzed by
//! schemathesis (PyPI, pinned and installed by scripts/schemathesis.sh into a virtualenv under the
//! target directory) with at least 100 generated requests per operation. It must find no 5xx other
//! than the documented query timeout, and no answer whose status, content type or body breaks the
//! document.

use crate::support::server;

use serde_json::{Value, json};
use server::{Server, now_ms, rfc3339};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ALERTD: &str = "\
route:
  receiver: log
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 1h
receivers:
- name: log
";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A server with alertd and one analyzer rule over `gpu_util_ratio`, evaluated every second.
fn start(dir: &Path) -> Server {
    std::fs::write(dir.join("alertd.yml"), ALERTD).expect("write alertd config");
    let toml = format!(
        "[alertd]\nconfig_file = {:?}\n\n[analyzer]\ninterval = \"1s\"\nwarmup = \"1s\"\n\n\
         [[analyzer.rule]]\nname = \"gpu_util\"\nquery = \"gpu_util_ratio\"\ndetectors = [\"threshold\"]\n",
        dir.join("alertd.yml").display().to_string()
    );
    Server::with_config(&toml)
}

/// Samples, events, an alert and a silence, so that reads return data rather than empty lists.
fn seed(s: &Server) -> String {
    let t = now_ms();
    let mut lines = String::new();
    for i in 0..30 {
        let ts = t - (30 - i) * 1000;
        for host in ["n1", "n2"] {
            lines.push_str(&format!("gpu,host={host},gpu=0 util_ratio=0.{} {ts}\n", 50 + i % 7));
        }
    }
    lines.push_str(&format!("job,name=train state=\"stalled at step 1200\" {t}\n"));
    let r = s.write_ms(&lines);
    assert_eq!(r.status, 204, "{}", r.body);
    let alert = json!([{"labels": {"alertname": "GpuHot", "host": "n1", "severity": "warning"},
        "annotations": {"summary": "n1 is hot"}}]);
    let r = s.post("/api/v2/alerts", &[("content-type", "application/json")], alert.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let ends = rfc3339((now_ms() + 3_600_000) / 1000);
    let silence = json!({"matchers": [{"name": "host", "value": "n2", "isRegex": false}],
        "startsAt": rfc3339(now_ms() / 1000), "endsAt": ends, "createdBy": "test", "comment": "seed"});
    let r = s.post("/api/v2/silences", &[("content-type", "application/json")], silence.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let silence_id = r.json()["silenceID"].as_str().expect("silenceID").to_string();
    // The analyzer has evaluated its rule once the findings list every series.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = s.get("/api/v1/anomalies?min_score=0");
        assert_eq!(r.status, 200, "{}", r.body);
        if r.json()["data"].as_array().is_some_and(|a| a.len() == 2) {
            break;
        }
        assert!(Instant::now() < deadline, "no findings: {}; log:\n{}", r.body, s.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    silence_id
}

#[test]
fn the_document_describes_every_served_route_and_schemathesis_finds_nothing() {
    let dir = tempfile::tempdir().expect("scratch dir");
    let s = start(dir.path());
    let silence_id = seed(&s);

    let r = s.get("/api/openapi.json");
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let doc: Value = r.json();
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().expect("paths");
    for p in ["/api/v1/query", "/api/v2/write", "/api/v2/silences", "/api/v1/incidents/{id}/ack", "/api/v1/anomalies"] {
        assert!(paths.contains_key(p), "{p} missing from the document");
    }
    let operations: usize =
        paths.values().map(|item| item.as_object().map_or(0, |m| m.keys().filter(|k| is_method(k)).count())).sum();

    // The document's every operation, fuzzed with valid and invalid inputs; the run's summary is
    // printed (cargo test -- --nocapture shows it).
    let out = Command::new(root().join("scripts/schemathesis.sh"))
        .current_dir(root())
        .args(["--config-file", "tests/openapi/schemathesis.toml", "run", &s.url("/api/openapi.json")])
        .args(["--checks", CHECKS])
        .args(["--phases", "examples,fuzzing"])
        .args(["--max-examples", "100", "--seed", "1", "--workers", "2", "--mode", "all"])
        .env("ARGUS_SILENCE_ID", &silence_id)
        .env("NO_COLOR", "1")
        .output()
        .expect("run scripts/schemathesis.sh");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(
        out.status.success(),
        "schemathesis found problems ({operations} operations):\n{text}\nserver log:\n{}",
        s.log()
    );
    // schemathesis counts one operation fewer than the document lists (it leaves one out of its
    // count); every one it selects must have been tested.
    let selected =
        text.split("Selected: ").nth(1).and_then(|t| t.split('/').next()).and_then(|n| n.parse::<usize>().ok());
    let selected = selected.unwrap_or_else(|| panic!("no operation count in:\n{text}"));
    assert!(selected + 1 >= operations, "schemathesis selected {selected} of {operations} operations:\n{text}");
    assert!(text.contains(&format!("Selected: {selected}/{selected}")), "operations left out:\n{text}");
    assert!(text.contains(&format!("Tested: {selected}\n")), "operations not tested:\n{text}");
    assert!(s.get("/-/healthy").status == 200, "the server is still up");
}

const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance";

fn is_method(k: &str) -> bool {
    matches!(k, "get" | "post" | "put" | "delete" | "patch" | "head")
}
