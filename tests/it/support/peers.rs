//! Peer stores the tests start on loopback (scripts/install-peers.sh installs them). A test whose
//! peer is not installed is skipped with a message, and fails under `CI`, so CI never drops one.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

/// A child process killed when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether `cmd` runs; when it does not, the test is reported skipped with the reason, or fails under
/// `CI` ([`argus_testkit::missing_peer`]), so CI never drops a comparison silently.
pub fn installed(cmd: &str, version_flag: &str) -> bool {
    let ok = Command::new(cmd).arg(version_flag).stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !ok {
        argus_testkit::missing_peer(&argus_testkit::Missing(format!(
            "{cmd} is not installed (run scripts/install-peers.sh)"
        )));
    }
    ok
}

/// Starts a peer on a free port until its health path answers 200; `args` gets the address.
pub fn start_peer(cmd: &str, health: &str, args: impl Fn(&str) -> Vec<String>) -> (Killed, String) {
    let http = reqwest::blocking::Client::builder().no_proxy().timeout(Duration::from_secs(2)).build().expect("client");
    for _ in 0..5 {
        let addr = format!("127.0.0.1:{}", super::server::free_port());
        let child = Command::new(cmd).args(args(&addr)).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
        let mut peer = Killed(child.expect("spawn peer"));
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if peer.0.try_wait().expect("try_wait").is_some() {
                break; // probably the port was taken in between: try another
            }
            if http.get(format!("http://{addr}{health}")).send().is_ok_and(|r| r.status().is_success()) {
                return (peer, format!("http://{addr}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    panic!("{cmd} did not become healthy");
}

/// A peer store on its own data directory, at `base`.
pub struct Peer {
    pub base: String,
    _proc: Killed,
    _dir: TempDir,
}

impl Peer {
    /// VictoriaMetrics single-node: no latency offset and no cache, so fresh writes answer at once.
    pub fn victoria_metrics() -> Option<Peer> {
        if !installed("victoria-metrics", "-version") {
            return None;
        }
        let dir = tempfile::tempdir().expect("vm dir");
        let path = dir.path().display().to_string();
        let (proc, base) = start_peer("victoria-metrics", "/health", |addr| {
            vec![
                format!("-storageDataPath={path}"),
                format!("-httpListenAddr={addr}"),
                "-search.latencyOffset=0s".into(),
                "-search.disableCache".into(),
                "-loggerLevel=ERROR".into(),
            ]
        });
        Some(Peer { base, _proc: proc, _dir: dir })
    }

    /// Prometheus with nothing to scrape and its remote-write receiver on: it holds what is written.
    pub fn prometheus() -> Option<Peer> {
        if !installed("prometheus", "--version") {
            return None;
        }
        let dir = tempfile::tempdir().expect("prometheus dir");
        let cfg = dir.path().join("prometheus.yml");
        std::fs::write(&cfg, "global:\n  scrape_interval: 1h\nscrape_configs: []\n").expect("config");
        let data = dir.path().join("data");
        let (proc, base) = start_peer("prometheus", "/-/ready", |addr| {
            vec![
                format!("--config.file={}", cfg.display()),
                format!("--storage.tsdb.path={}", data.display()),
                format!("--web.listen-address={addr}"),
                "--web.enable-remote-write-receiver".into(),
                "--log.level=error".into(),
            ]
        });
        Some(Peer { base, _proc: proc, _dir: dir })
    }

    /// Makes what VictoriaMetrics was given searchable now rather than within a second or two.
    pub fn flush(&self) {
        let r = reqwest::blocking::Client::new().get(format!("{}/internal/force_flush", self.base)).send();
        assert!(r.is_ok_and(|r| r.status().is_success()), "force_flush failed");
    }
}
