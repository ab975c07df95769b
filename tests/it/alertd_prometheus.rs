//! Prometheus (Debian package prometheus) evaluating an alerting rule and sending its alerts to
//! alertd inside `argus serve` over Alertmanager's API v2, as it would to an Alertmanager.

use crate::support::server;

use server::Server;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const RULES: &str = r#"
groups:
  - name: argus-test
    interval: 1s
    rules:
      - alert: AlwaysFiring
        expr: vector(1)
        labels: {severity: warning, host: h1}
        annotations: {summary: "value is {{ $value }}"}
"#;

#[test]
fn prometheus_sends_its_alerts_to_alertd() {
    let s = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let target = s.base().trim_start_matches("http://").to_string();
    std::fs::write(dir.path().join("rules.yml"), RULES).unwrap();
    let config = format!(
        "global:\n  evaluation_interval: 1s\nrule_files: [rules.yml]\nalerting:\n  alertmanagers:\n    \
         - api_version: v2\n      static_configs:\n        - targets: ['{target}']\n"
    );
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(&cfg, config).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _prom = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("prom").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            // The first send can come before Alertmanager discovery has run; resend soon.
            .arg("--rules.alert.resend-delay=1s")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.path().join("prometheus.log")).unwrap())
            .spawn()
            .expect("prometheus runs (install the Debian package prometheus)"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let alert = loop {
        let list = s.get("/api/v2/alerts").json();
        if let Some(a) = list.as_array().and_then(|l| l.first()) {
            break a.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no alert from Prometheus within 30 s; argus log:\n{}\nprometheus log:\n{}",
            s.log(),
            std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(alert["labels"]["alertname"], "AlwaysFiring");
    assert_eq!(alert["labels"]["host"], "h1");
    assert_eq!(alert["annotations"]["summary"], "value is 1");
    assert!(alert["generatorURL"].as_str().unwrap().contains("vector%281%29"), "{alert}");
    assert_eq!(alert["status"]["state"], "active");
    assert!(!s.log().contains("Alerts refused"));
}
