//! A full disk: `argus serve` on a small tmpfs takes batches until the disk fills, then refuses with a
//! 503 that says the disk is full; it stays up and answers queries, a flush into blocks (the write
//! compaction does too) fails without harm, and once space returns writes, flushes and a restart all
//! work, with every acknowledged batch whole and nothing of a refused one stored.
//!
//! Needs to mount a tmpfs (root, and a kernel that lets this process mount); otherwise it prints why
//! and passes without running.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SERIES: usize = 500;

use crate::support::raw_http;

use raw_http::http;

/// The tmpfs, unmounted when dropped.
struct Mount(PathBuf);

impl Mount {
    fn new(at: &Path, size: &str) -> Result<Mount, String> {
        std::fs::create_dir_all(at).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Mount(at.to_path_buf()))
    }

    fn resize(&self, size: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .expect("mount -o remount");
        assert!(st.success(), "remount to {size}");
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

struct Server {
    child: Child,
    addr: String,
    log: PathBuf,
}

impl Server {
    fn start(data: &Path, log: PathBuf) -> Server {
        let addr = format!("127.0.0.1:{}", TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
        let child = Command::new(env!("CARGO_BIN_EXE_argus"))
            .args(["serve", "--no-collector", "--listen", &addr, "--data-dir"])
            .arg(data)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let s = Server { child, addr, log };
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if matches!(http(&s.addr, "GET", "/-/healthy", b""), Ok((200, _))) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("server did not become healthy:\n{}", s.log());
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn stop(mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn batch(k: u64, t0: i64) -> Vec<u8> {
    let t = t0 + k as i64 * 1000;
    (0..SERIES)
        .map(|i| format!("df,series=s{i:03},pad=padding-padding-padding v={k} {t}\n"))
        .collect::<String>()
        .into_bytes()
}

/// The batches present, each required whole (all its series).
fn present(addr: &str, t0: i64) -> BTreeSet<u64> {
    let at = (t0 + 3_600_000) as f64 / 1000.0;
    let (status, body) = http(addr, "GET", &format!("/api/v1/query?query=df_v%5B2h%5D&time={at}"), b"").unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut counts = std::collections::BTreeMap::<u64, usize>::new();
    for series in v["data"]["result"].as_array().unwrap() {
        for p in series["values"].as_array().unwrap() {
            let t = (p[0].as_f64().unwrap() * 1000.0).round() as i64;
            let k = ((t - t0) / 1000) as u64;
            assert_eq!(p[1].as_str().unwrap(), k.to_string(), "batch {k}'s sample has its value");
            *counts.entry(k).or_default() += 1;
        }
    }
    for (k, n) in &counts {
        assert_eq!(*n, SERIES, "batch {k} is partly stored ({n} of {SERIES})");
    }
    counts.into_keys().collect()
}

#[test]
fn full_disk_refuses_clearly_and_recovers() {
    let scratch = tempfile::tempdir().unwrap();
    let mount = match Mount::new(&scratch.path().join("disk"), "2m") {
        Ok(m) => m,
        Err(why) => {
            println!("skipped: cannot mount a tmpfs here ({why}); run as root where mounts are allowed");
            return;
        }
    };
    let data = mount.0.join("data");
    let t0 = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64 - 3_600_000;
    let s = Server::start(&data, scratch.path().join("1.log"));

    // Ingest until the disk is full.
    let mut acked = BTreeSet::new();
    let mut refused = BTreeSet::new();
    let mut k = 0u64;
    let full = loop {
        assert!(k < 4000, "2 MiB never filled");
        let (status, body) = http(&s.addr, "POST", "/api/v2/write?precision=ms", &batch(k, t0)).unwrap();
        match status {
            204 => {
                acked.insert(k);
            }
            _ => {
                refused.insert(k);
                break (status, body);
            }
        }
        k += 1;
    };
    assert_eq!(full.0, 503, "{}", full.1);
    assert!(full.1.contains("disk is full") && full.1.contains("nothing of this request was stored"), "{}", full.1);
    assert!(acked.len() > 5, "some batches fit first ({})", acked.len());
    // More writes while full: refused the same way, never half stored.
    for _ in 0..3 {
        k += 1;
        let (status, body) = http(&s.addr, "POST", "/api/v2/write?precision=ms", &batch(k, t0)).unwrap();
        assert_eq!(status, 503, "{body}");
        refused.insert(k);
    }

    // Still up: health, queries (every acknowledged batch whole, no refused one), metrics.
    assert_eq!(http(&s.addr, "GET", "/-/healthy", b"").unwrap().0, 200);
    assert_eq!(present(&s.addr, t0), acked, "while full");
    // A flush into blocks (what compaction writes too) fails or succeeds, and harms nothing.
    let (status, body) = http(&s.addr, "POST", "/internal/force_flush", b"").unwrap();
    println!("flush while full: {status} {body}");
    assert_eq!(http(&s.addr, "GET", "/-/healthy", b"").unwrap().0, 200);
    assert_eq!(present(&s.addr, t0), acked, "after a flush on a full disk");

    // Space returns: writes and flushes work again, with no restart.
    mount.resize("64m");
    for _ in 0..3 {
        k += 1;
        let (status, body) = http(&s.addr, "POST", "/api/v2/write?precision=ms", &batch(k, t0)).unwrap();
        assert_eq!(status, 204, "after space returned: {body}\n{}", s.log());
        acked.insert(k);
    }
    let (status, body) = http(&s.addr, "POST", "/internal/force_flush", b"").unwrap();
    assert_eq!(status, 200, "flush after space returned: {body}\n{}", s.log());
    assert_eq!(present(&s.addr, t0), acked, "after recovery");
    let log = s.log();
    assert!(log.contains("No space left on device"), "the log names the cause:\n{log}");
    s.stop();

    // And a restart finds everything acknowledged, whole, and nothing refused.
    let s = Server::start(&data, scratch.path().join("2.log"));
    assert_eq!(present(&s.addr, t0), acked, "after a restart");
    assert!(!s.log().contains("truncated"), "no torn WAL: {}", s.log());
    s.stop();
}
