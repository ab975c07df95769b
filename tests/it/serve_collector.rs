//! `argus serve` runs the node collector of its `[collector]` section into its own embedded store, over
//! loopback remote write; `--no-collector` turns it off; `check-config` accepts the section.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `argus serve` with the fixture-tree collector config, returns it and its base URL.
fn serve(dir: &std::path::Path, extra: &[&str]) -> (std::process::Child, String) {
    serve_with(dir, extra, "")
}

/// `serve` with more of argus.toml after the collector's sections.
fn serve_with(dir: &std::path::Path, extra: &[&str], more_toml: &str) -> (std::process::Child, String) {
    let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("collector/tests/fixtures");
    let f = f.display();
    let config = dir.join("argus.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[collector]
interval = "200ms"
procfs_root = "{f}/node/proc"
sysfs_root = "{f}/infiniband/sys"
[collector.labels]
host = "serve-test"
[collector.gpu]
backend = "fake"
fake_fixture = "{f}/gpu/h100.json"
kernel_log = ""
[collector.disk]
enabled = false
[collector.events]
enabled = false
{more_toml}
"#
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(dir.join("data"))
        .arg("--config")
        .arg(&config)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("serve.log")).unwrap())
        .spawn()
        .unwrap();
    (child, format!("http://127.0.0.1:{port}"))
}

/// How many series answer `q` at the latest time, once the server is up.
fn series_count(base: &str, q: &str) -> Option<usize> {
    let url = format!("{base}/api/v1/query?query={q}");
    let v: serde_json::Value = reqwest::blocking::get(url).ok()?.json().ok()?;
    v["data"]["result"].as_array().map(Vec::len)
}

fn terminate(mut child: std::process::Child) -> std::process::ExitStatus {
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    child.wait().unwrap()
}

#[test]
fn serve_collects_its_own_machine_into_the_store() {
    collects_into_the_store("");
}

/// With tokens configured writes need one: the embedded collector gets its own, made at start.
#[test]
fn serve_collects_its_own_machine_with_auth_on() {
    collects_into_the_store(
        "[auth]\nanonymous = [\"read\"]\n[[auth.tokens]]\nname = \"other\"\nscopes = [\"admin\"]\n\
         sha256 = \"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"\n",
    );
}

fn collects_into_the_store(more_toml: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (child, base) = serve_with(dir.path(), &[], more_toml);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut found = None;
    while Instant::now() < deadline {
        let host = series_count(&base, "host_load1%7Bhost%3D%22serve-test%22%7D");
        let gpus = series_count(&base, "gpu_power_watts%7Bhost%3D%22serve-test%22%7D");
        if let (Some(1), Some(2)) = (host, gpus) {
            found = Some(());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let status = terminate(child);
    let log = std::fs::read_to_string(dir.path().join("serve.log")).unwrap();
    assert!(found.is_some(), "no collected series in the store; log:\n{log}");
    assert!(status.success(), "serve did not stop cleanly: {status}; log:\n{log}");
    assert!(dir.path().join("data/collector/spool/default").is_dir(), "spool under the data directory");
}

#[test]
fn no_collector_means_no_collected_series() {
    let dir = tempfile::tempdir().unwrap();
    let (child, base) = serve(dir.path(), &["--no-collector"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while series_count(&base, "up").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(series_count(&base, "host_load1"), Some(0));
    assert!(terminate(child).success());
}

#[test]
fn check_config_accepts_the_collector_section() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let ok = Command::new(env!("CARGO_BIN_EXE_argus"))
        .arg("check-config")
        .arg(root.join("config/collector.toml"))
        .output()
        .unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("argus.toml");
    std::fs::write(&bad, "[collector]\n[collector.scrape]\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_argus")).arg("check-config").arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("argus.toml:2:1: collector.scrape.targets: no targets"), "{err}");
}
