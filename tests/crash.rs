//! Crash safety: a writer streams batches while the server is killed with SIGKILL at random moments
//! (some during a flush). After each restart every acknowledged batch is wholly present, and a batch
//! that was in flight is either wholly present or wholly absent.
//!
//! `ARGUS_CRASH_KILLS` sets the number of kills (default 5 here; bench/crash.sh runs 25).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SERIES: usize = 50;

/// A bare HTTP/1.1 exchange: the test needs only the status and body, and no client library
/// should stand between it and a server that may die mid-request.
fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad response {text:?}")))?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((status, body))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn start(dir: &std::path::Path, addr: &str) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["serve", "--no-collector", "--listen", addr, "--data-dir"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if matches!(http(addr, "GET", "/-/healthy", b""), Ok((200, _))) {
            return child;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("server did not become healthy");
}

fn batch(k: u64, t0: i64) -> Vec<u8> {
    let t = t0 + k as i64;
    (0..SERIES).map(|i| format!("crash,s={i} v={k} {t}\n")).collect::<String>().into_bytes()
}

/// Number of series holding batch k's sample, for every k up to `last`: raw samples through a range
/// selector, each batch's value being its own number.
fn present(addr: &str, t0: i64, last: u64) -> Vec<usize> {
    let at = (t0 + 3_600_000) as f64 / 1000.0;
    let q = format!("/api/v1/query?query=crash_v%5B2h%5D&time={at}");
    let (status, body) = http(addr, "GET", &q, b"").unwrap();
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut counts = vec![0usize; last as usize + 1];
    for series in v["data"]["result"].as_array().unwrap() {
        for p in series["values"].as_array().unwrap() {
            let t = (p[0].as_f64().unwrap() * 1000.0).round() as i64;
            let k = (t - t0) as usize;
            assert_eq!(p[1].as_str().unwrap().parse::<usize>().unwrap(), k, "sample of batch {k} has its value");
            counts[k] += 1;
        }
    }
    counts
}

#[test]
fn sigkill_loses_no_acknowledged_batch() {
    let kills: usize = std::env::var("ARGUS_CRASH_KILLS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    let dir = tempfile::tempdir().unwrap();
    let addr = format!("127.0.0.1:{}", free_port());
    let t0 = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64 - 3_600_000;
    let mut acked: Vec<u64> = Vec::new();
    let mut next = 0u64;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..kills {
        let mut child = start(dir.path(), &addr);
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let run_for = Duration::from_millis(100 + seed % 400);
        let flush_at = (seed >> 20).is_multiple_of(3);
        let killer_addr = addr.clone();
        let pid = child.id();
        let killer = std::thread::spawn(move || {
            if flush_at {
                std::thread::sleep(run_for / 2);
                // Kill may land while this flush writes blocks.
                let _ = http(&killer_addr, "POST", "/internal/force_flush", b"");
            }
            std::thread::sleep(run_for);
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        });
        // The batch whose request broke off when the server died.
        let in_flight = loop {
            match http(&addr, "POST", "/api/v2/write?precision=ms", &batch(next, t0)) {
                Ok((204, _)) => {
                    acked.push(next);
                    next += 1;
                }
                Ok((status, body)) => panic!("round {round}: unexpected {status}: {body}"),
                Err(_) => break next,
            }
        };
        killer.join().unwrap();
        let _ = child.wait();
        // The unacknowledged batch may or may not have landed; either way it is retried as the same k.
        let mut child = start(dir.path(), &addr);
        let counts = present(&addr, t0, next);
        for k in &acked {
            assert_eq!(counts[*k as usize], SERIES, "round {round}: acknowledged batch {k} incomplete");
        }
        let c = counts.get(in_flight as usize).copied().unwrap_or(0);
        assert!(c == 0 || c == SERIES, "round {round}: in-flight batch {in_flight} half visible ({c} of {SERIES})");
        let _ = Command::new("kill").args(["-9", &child.id().to_string()]).status();
        let _ = child.wait();
    }
    assert!(acked.len() > kills, "the writer made progress ({} batches)", acked.len());
    println!("{kills} kills, {} batches acknowledged, none lost or half visible", acked.len());
}
