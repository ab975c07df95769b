//! A real Prometheus (2.42, from Debian, started here on loopback) scrapes Argus' own `/metrics` and
//! remote-writes the result to Argus; the samples are read back through `/api/v1/query_range`.
//! Skipped with a message when `prometheus` is not installed (scripts/install-peers.sh installs it,
//! and scripts/test.sh runs that first).

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::support::raw_http;

use raw_http::{free_port, http};

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn get(addr: &str, path: &str) -> Option<(u16, String)> {
    http(addr, "GET", path, b"").ok()
}

fn wait_healthy(addr: &str, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if matches!(get(addr, path), Some((200, _))) {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("{addr}{path} did not become healthy");
}

#[test]
fn prometheus_remote_writes_a_scrape_of_our_metrics() {
    if !crate::support::peers::installed("prometheus", "--version") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let argus = format!("127.0.0.1:{}", free_port());
    let prom = format!("127.0.0.1:{}", free_port());
    let _a = Killed(
        Command::new(env!("CARGO_BIN_EXE_argus"))
            .args(["serve", "--no-collector", "--listen", &argus, "--data-dir"])
            .arg(dir.path().join("argus"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_healthy(&argus, "/-/healthy");
    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: argus\n    static_configs:\n      - targets: ['{argus}']\n\
         remote_write:\n  - url: http://{argus}/api/v1/write\n    queue_config:\n      batch_send_deadline: 1s\n"
    );
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(&cfg, config).unwrap();
    let _p = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("prom").display()))
            .arg(format!("--web.listen-address={prom}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_healthy(&prom, "/-/ready");
    let start = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - 60;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let end = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let q = format!("/api/v1/query_range?query=up%7Bjob%3D%22argus%22%7D&start={start}&end={end}&step=1");
        let (status, body) = get(&argus, &q).unwrap();
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let result = v["data"]["result"].as_array().unwrap();
        if let Some(series) = result.first() {
            assert_eq!(series["metric"]["instance"], argus.as_str(), "Prometheus' target labels arrived");
            let values = series["values"].as_array().unwrap();
            assert!(values.iter().all(|p| p[1] == "1"), "every scrape of Argus succeeded: {values:?}");
            // Our own counter, scraped by Prometheus and written back through remote write.
            let q = format!("/api/v1/query?query=argus_store_samples_ingested_total%7Bjob%3D%22argus%22%7D&time={end}");
            let (_, body) = get(&argus, &q).unwrap();
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            let n: f64 = v["data"]["result"][0]["value"][1].as_str().unwrap_or("0").parse().unwrap();
            if n > 0.0 {
                return;
            }
        }
        assert!(Instant::now() < deadline, "no remote-written samples arrived within 60 s: {body}");
        std::thread::sleep(Duration::from_millis(500));
    }
}
