//! Replay end to end against a golden file: webhook v4 bodies, incident details, timing in virtual
//! time. `UPDATE_GOLDEN=1 cargo test -p argus-alertd --test it replay::` rewrites the golden file.

use std::path::Path;

const CONFIG: &str = r#"
route:
  receiver: team
  group_by: [cluster]
  group_wait: 30s
  group_interval: 1m
receivers:
  - name: team
    webhook_configs: [{url: 'http://localhost:5001/', send_resolved: true, max_alerts: 2}]
argus:
  external_url: http://alertd.example/
  correlation: {labels: [host], window: 10m}
"#;

#[test]
fn replay_matches_golden() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let cfg = argus_alertd::config::parse(CONFIG, "replay.yml").unwrap();
    let input = std::fs::read(dir.join("replay_input.jsonl")).unwrap();
    let mut out = Vec::new();
    let summary = argus_alertd::replay::replay(cfg, input.as_slice(), &mut out).unwrap();
    assert_eq!((summary.lines, summary.alerts), (4, 4));
    let golden = dir.join("replay_output.jsonl");
    let got = String::from_utf8(out).unwrap();
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&golden, &got).unwrap();
    }
    let want = std::fs::read_to_string(&golden).expect("golden file missing: run with UPDATE_GOLDEN=1");
    assert_eq!(got, want, "replay output differs from {}", golden.display());
}

#[test]
fn replay_refuses_bad_input_with_its_line() {
    let cfg = argus_alertd::config::parse(CONFIG, "replay.yml").unwrap();
    let input =
        "{\"at\": \"2020-09-13T12:26:40Z\", \"alerts\": []}\n{\"at\": \"2020-09-13T12:00:00Z\", \"alerts\": []}\n";
    let err = argus_alertd::replay::replay(cfg, input.as_bytes(), Vec::new()).unwrap_err();
    assert_eq!(err.to_string(), "input line 2: time goes backwards to 2020-09-13T12:00:00Z");
    let cfg = argus_alertd::config::parse(CONFIG, "replay.yml").unwrap();
    let err = argus_alertd::replay::replay(cfg, "{\"at\": \"x\", \"alerts\": []}".as_bytes(), Vec::new()).unwrap_err();
    assert!(err.to_string().starts_with("input line 1: invalid RFC 3339 time \"x\""), "{err}");
}
