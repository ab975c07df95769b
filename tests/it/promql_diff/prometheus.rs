//! A real Prometheus (2.42 from Debian) on a free loopback port: remote-write receiver on, an empty
//! scrape config, a temporary TSDB. Killed when dropped.

use std::fs::File;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// Subqueries without a step use the global evaluation interval; written out so both engines agree.
pub const EVALUATION_INTERVAL: &str = "1m";

pub struct Prometheus {
    child: Child,
    base: String,
    dir: TempDir,
}

impl Prometheus {
    /// The installed `prometheus --version` line, or `None` when it is not installed.
    pub fn version() -> Option<String> {
        let out = Command::new("prometheus").arg("--version").output().ok()?;
        let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
        Some(text.lines().next().unwrap_or_default().to_string())
    }

    /// Starts Prometheus and waits for `/-/ready`; retries on another port if the one picked was taken.
    pub fn start() -> Prometheus {
        let mut dir = tempfile::tempdir().expect("prometheus dir");
        let config = dir.path().join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 15s\n  evaluation_interval: {EVALUATION_INTERVAL}\nscrape_configs: []\n"
            ),
        )
        .expect("write prometheus.yml");
        for attempt in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0").expect("bind :0").local_addr().expect("addr").port();
            let log_path = dir.path().join(format!("prometheus-{attempt}.log"));
            let log = File::create(&log_path).expect("prometheus log");
            let child = Command::new("prometheus")
                .arg(format!("--config.file={}", config.display()))
                .arg(format!("--storage.tsdb.path={}", dir.path().join(format!("tsdb-{attempt}")).display()))
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg("--web.enable-remote-write-receiver")
                .stdin(Stdio::null())
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .expect("spawn prometheus");
            let mut p = Prometheus { child, base: format!("http://127.0.0.1:{port}"), dir };
            match p.wait_ready() {
                Ok(()) => return p,
                Err(()) => {
                    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                    if !log.contains("address already in use") {
                        panic!("prometheus did not become ready; its log:\n{log}");
                    }
                    dir = p.into_dir();
                }
            }
        }
        panic!("prometheus could not bind a free port in 5 tries");
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    fn wait_ready(&mut self) -> Result<(), ()> {
        let probe = reqwest::blocking::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()
            .expect("probe client");
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.child.try_wait().expect("try_wait").is_some() {
                return Err(());
            }
            if let Ok(r) = probe.get(format!("{}/-/ready", self.base)).send()
                && r.status().as_u16() == 200
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        Err(())
    }

    /// Stops this process and hands back its directory for another try.
    fn into_dir(mut self) -> TempDir {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = std::mem::replace(&mut self.dir, tempfile::tempdir().expect("temp dir"));
        drop(self);
        dir
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
