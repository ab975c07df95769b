//! Crash safety: a writer streams batches while the server is killed with SIGKILL at random moments:
//! during ingest, during a flush, while alertd evaluates a rule and while it notifies a webhook (a
//! receiver here, answering after a random delay, counting deliveries by `Idempotency-Key`). After
//! each restart every acknowledged batch is wholly present, and a batch that was in flight is either
//! wholly present or wholly absent; the store always reopens. At the end every alert the rule fired has
//! been delivered, and a notification delivered twice came both times under one key.
//!
//! `ARGUS_CRASH_KILLS` sets the number of kills (default 5 here; bench/crash.sh runs 50).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const SERIES: usize = 50;

use crate::support::raw_http;

use raw_http::{free_port, http};

fn start(dir: &Path, config: &Path, addr: &str) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["serve", "--no-collector", "--listen", addr, "--config"])
        .arg(config)
        .arg("--data-dir")
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
    panic!("the store did not reopen: the server did not become healthy");
}

/// One webhook delivery as received: its `Idempotency-Key`, and the notification it carries (group
/// key, then each alert's `round` label and status).
#[derive(Debug, Clone)]
struct Delivery {
    key: String,
    notification: String,
    rounds: Vec<String>,
}

/// The webhook receiver: answers 200 after 0-150 ms (so that kills land while a send is open), and
/// records each request it read whole.
fn receiver() -> (u16, Arc<Mutex<Vec<Delivery>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let got2 = got.clone();
    std::thread::spawn(move || {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let delay = Duration::from_millis(seed % 150);
            let got = got2.clone();
            std::thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let Some((key, body)) = raw_http::read_delivery(&mut r) else { return };
                let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else { return };
                let mut alerts: Vec<String> = v["alerts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| format!("{}={}", a["labels"]["round"].as_str().unwrap_or("?"), a["status"]))
                    .collect();
                alerts.sort();
                let rounds = v["alerts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|a| a["status"] == "firing")
                    .map(|a| a["labels"]["round"].as_str().unwrap_or("?").to_string())
                    .collect();
                let notification = format!("{} {}", v["groupKey"], alerts.join(","));
                got.lock().unwrap().push(Delivery { key, notification, rounds });
                std::thread::sleep(delay);
                let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            });
        }
    });
    (port, got)
}

/// alertd with a rule firing one alert per `round` the writer marks, each its own group, sent to the
/// webhook receiver on `port`.
fn configure(dir: &Path, port: u16) -> std::path::PathBuf {
    let rules =
        "groups:\n- name: crash\n  interval: 1s\n  rules:\n  - alert: CrashRound\n    expr: crash_alert_v > 0\n";
    std::fs::write(dir.join("rules.yml"), rules).unwrap();
    let alertd = format!(
        "route:\n  receiver: hook\n  group_by: [round]\n  group_wait: 0s\n  group_interval: 1s\n  \
         repeat_interval: 24h\nreceivers:\n- name: hook\n  webhook_configs:\n  - url: http://127.0.0.1:{port}/hook\n\
         argus:\n  rules:\n    files: [rules.yml]\n    watchdog: false\n    host_down: false\n"
    );
    std::fs::write(dir.join("alertd.yml"), alertd).unwrap();
    let toml = format!("[alertd]\nconfig_file = {:?}\n", dir.join("alertd.yml").display().to_string());
    std::fs::write(dir.join("argus.toml"), toml).unwrap();
    dir.join("argus.toml")
}

/// Marks rounds `0..=round` as alerting (each round's series re-stamped now, so none goes stale).
fn mark_rounds(addr: &str, round: usize) -> bool {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    let body: String = (0..=round).map(|r| format!("crash_alert,round=r{r:03} v=1 {now}\n")).collect();
    matches!(http(addr, "POST", "/api/v2/write?precision=ms", body.as_bytes()), Ok((204, _)))
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
    let scratch = tempfile::tempdir().unwrap();
    let (port, deliveries) = receiver();
    let config = configure(scratch.path(), port);
    let addr = format!("127.0.0.1:{}", free_port());
    let mut marked = 0;
    let t0 = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64 - 3_600_000;
    let mut acked: Vec<u64> = Vec::new();
    let mut next = 0u64;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..kills {
        let mut child = start(dir.path(), &config, &addr);
        if mark_rounds(&addr, round) {
            marked = round + 1;
        }
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
        let mut child = start(dir.path(), &config, &addr);
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

    // Every round's alert is delivered once the server stays up; a repeat carries the same key.
    let mut child = start(dir.path(), &config, &addr);
    let want: BTreeSet<String> = (0..marked).map(|r| format!("r{r:03}")).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = loop {
        let got = deliveries.lock().unwrap().clone();
        let seen: BTreeSet<String> = got.iter().flat_map(|d| d.rounds.iter().cloned()).collect();
        if want.is_subset(&seen) {
            break got;
        }
        if Instant::now() > deadline {
            let missing: Vec<_> = want.difference(&seen).collect();
            panic!("notifications lost: no delivery for rounds {missing:?} of {marked}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = Command::new("kill").args(["-9", &child.id().to_string()]).status();
    let _ = child.wait();
    let mut keys: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for d in &got {
        keys.entry(d.notification.as_str()).or_default().insert(d.key.as_str());
    }
    for (n, k) in &keys {
        assert_eq!(k.len(), 1, "notification {n} delivered under several idempotency keys: {k:?}");
        assert!(k.iter().all(|k| k.len() == 64), "idempotency key missing: {k:?}");
    }
    let repeats = got.len() - keys.len();
    assert!(marked >= kills.min(3), "the rule had rounds to fire on ({marked})");
    println!(
        "{kills} kills, {} batches acknowledged, none lost or half visible; {marked} alerts fired, {} notifications, \
         {} deliveries ({repeats} repeats, each under its first key), none lost",
        acked.len(),
        keys.len(),
        got.len()
    );
}
