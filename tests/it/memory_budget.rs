//! The store under a memory limit: four writers push high-cardinality line protocol (a new series per
//! line) as fast as they can until the server pushes back with 503/429 and `Retry-After`. Meanwhile the
//! server's resident memory (VmRSS) is sampled; it must stay under the configured `memory_limit`.
//!
//! `ARGUS_TEST_MEMORY_LIMIT_MIB` overrides the limit (default 96), to find the smallest one the server
//! honours; the report (peak RSS, time of the first pushback) is printed with `--nocapture`.

use crate::support::server;

use server::{Server, now_ms};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WRITERS: u64 = 4;
const LINES_PER_BATCH: u64 = 10_000;
/// The whole run is bounded, pushback or not.
const MAX_RUN: Duration = Duration::from_secs(60);
/// How long the writers keep pushing after the first pushback, to see memory while the server refuses:
/// past the upkeep's 10-second tick, so the flush it starts is sampled too.
const AFTER_PUSHBACK: Duration = Duration::from_secs(11);

fn limit_mib() -> u64 {
    std::env::var("ARGUS_TEST_MEMORY_LIMIT_MIB").ok().and_then(|v| v.parse().ok()).unwrap_or(96)
}

fn start(limit_mib: u64) -> Server {
    Server::with_config(&format!("[store]\nmemory_limit = \"{limit_mib}MiB\"\nwal_sync = \"never\"\n"))
}

/// What the run saw.
#[derive(Debug, Default)]
struct Report {
    /// Answers by status.
    statuses: BTreeMap<u16, u64>,
    /// (time since start, status, Retry-After) of the first 503 or 429.
    first_pushback: Option<(Duration, u16, Option<String>)>,
    /// Other failures (transport errors, unexpected statuses), the first few.
    failures: Vec<String>,
    series_accepted: u64,
    /// Writers with at least one acknowledged batch.
    writers_accepted: std::collections::BTreeSet<String>,
    peak_rss_kib: u64,
    peak_at: Duration,
    /// RSS every half second: (seconds since start, MiB).
    rss_trace: Vec<(f64, u64)>,
    elapsed: Duration,
}

fn vm_rss_kib(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn batch(writer: u64, seq: u64, t: i64) -> String {
    let mut out = String::with_capacity(LINES_PER_BATCH as usize * 64);
    for i in 0..LINES_PER_BATCH {
        let id = (writer << 40) | (seq * LINES_PER_BATCH + i);
        out.push_str(&format!("hc,writer=w{writer},id={id:012} value={i} {t}\n"));
    }
    out
}

/// Drives the load and samples RSS until the pushback has gone on for `AFTER_PUSHBACK`, or `MAX_RUN`.
fn pressure(srv: &Server) -> Report {
    let pid = srv.pid();
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let report = Arc::new(Mutex::new(Report::default()));
    let accepted = Arc::new(AtomicU64::new(0));

    let sampler = {
        let (stop, report) = (stop.clone(), report.clone());
        std::thread::spawn(move || {
            let mut next_trace = Duration::ZERO;
            while !stop.load(Ordering::SeqCst) {
                if let Some(kib) = vm_rss_kib(pid) {
                    let at = started.elapsed();
                    let mut r = report.lock().expect("report");
                    if kib > r.peak_rss_kib {
                        r.peak_rss_kib = kib;
                        r.peak_at = at;
                    }
                    if at >= next_trace {
                        r.rss_trace.push(((at.as_millis() as f64 / 1000.0), kib / 1024));
                        next_trace += Duration::from_millis(500);
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };

    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (stop, report, accepted) = (stop.clone(), report.clone(), accepted.clone());
            let url = srv.url("/api/v2/write?org=o&bucket=b&precision=ms");
            std::thread::spawn(move || {
                let http = reqwest::blocking::Client::builder()
                    .no_proxy()
                    .timeout(Duration::from_secs(30))
                    .build()
                    .expect("client");
                let mut seq = 0;
                while !stop.load(Ordering::SeqCst) && started.elapsed() < MAX_RUN {
                    let body = batch(w, seq, now_ms() - 60_000);
                    seq += 1;
                    let res = http.post(&url).body(body).send();
                    let mut r = report.lock().expect("report");
                    match res {
                        Ok(resp) => {
                            let status = resp.status().as_u16();
                            *r.statuses.entry(status).or_default() += 1;
                            match status {
                                204 => {
                                    accepted.fetch_add(LINES_PER_BATCH, Ordering::SeqCst);
                                    r.writers_accepted.insert(format!("w{w}"));
                                }
                                429 | 503 if r.first_pushback.is_none() => {
                                    let retry = resp
                                        .headers()
                                        .get("retry-after")
                                        .and_then(|v| v.to_str().ok())
                                        .map(String::from);
                                    r.first_pushback = Some((started.elapsed(), status, retry));
                                }
                                429 | 503 => {}
                                _ if r.failures.len() < 5 => {
                                    let body = resp.text().unwrap_or_default();
                                    r.failures.push(format!("status {status}: {body}"));
                                }
                                _ => {}
                            }
                        }
                        Err(e) if r.failures.len() < 5 => r.failures.push(format!("transport: {e}")),
                        Err(_) => {}
                    }
                }
            })
        })
        .collect();

    while started.elapsed() < MAX_RUN {
        let pushed_back_at = report.lock().expect("report").first_pushback.as_ref().map(|p| p.0);
        if pushed_back_at.is_some_and(|at| started.elapsed() >= at + AFTER_PUSHBACK) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        w.join().expect("writer");
    }
    sampler.join().expect("sampler");
    let mut r = std::mem::take(&mut *report.lock().expect("report"));
    r.series_accepted = accepted.load(Ordering::SeqCst);
    r.elapsed = started.elapsed();
    r
}

fn describe(limit: u64, r: &Report, srv: &Server) -> String {
    let m = |name: &str| srv.metric(name).unwrap_or(f64::NAN);
    format!(
        "memory_limit {limit} MiB: peak VmRSS {:.1} MiB at {:.1}s; first pushback {:?}; answers {:?}; \
         {} series accepted in {:.1}s; after the run: head_bytes {} head_series {} head_samples {} flushes {}; \
         allocator allocated {} resident {}; failures {:?}\nRSS trace (s, MiB): {:?}",
        r.peak_rss_kib as f64 / 1024.0,
        r.peak_at.as_secs_f64(),
        r.first_pushback,
        r.statuses,
        r.series_accepted,
        r.elapsed.as_secs_f64(),
        m("argus_store_head_bytes"),
        m("argus_store_head_series"),
        m("argus_store_head_samples"),
        m("argus_store_flushes_total"),
        m("argus_allocator_bytes{kind=\"allocated\"}"),
        m("argus_allocator_bytes{kind=\"resident\"}"),
        r.failures,
        r.rss_trace,
    )
}

#[test]
fn pushes_back_with_retry_after_and_keeps_what_it_acknowledged() {
    let limit = limit_mib();
    let srv = start(limit);
    let r = pressure(&srv);
    let report = describe(limit, &r, &srv);
    eprintln!("{report}");
    assert!(r.failures.is_empty(), "{report}");
    let (_, status, retry_after) =
        r.first_pushback.clone().unwrap_or_else(|| panic!("no 503/429 within {MAX_RUN:?}\n{report}"));
    assert!(matches!(status, 429 | 503), "{report}");
    assert!(retry_after.as_deref().is_some_and(|v| v.parse::<u64>().is_ok_and(|s| s >= 1)), "no Retry-After\n{report}");
    // Reads go on while writes are refused: every acknowledged series is there, no refused one is.
    assert_eq!(srv.get("/-/healthy").status, 200);
    let ids = srv.get("/api/v1/label/id/values").success_data();
    assert_eq!(ids.as_array().map(Vec::len), Some(r.series_accepted as usize), "{report}");
    let writers = srv.get("/api/v1/label/writer/values").success_data();
    // Under a tight limit not every writer gets a batch in; those that did are all there.
    assert_eq!(writers, serde_json::json!(r.writers_accepted), "{report}");
}

/// `argus_allocator_bytes` accounts for the resident set in jemalloc's own terms: the live blocks lie
/// in active pages, which are resident, which are mapped; all of it within the process's VmRSS.
#[test]
fn allocator_statistics_are_exposed_and_consistent() {
    let srv = start(limit_mib());
    let lines: String = (0..2_000).map(|i| format!("alloc_probe,id={i} v={i} {}\n", now_ms())).collect();
    assert_eq!(srv.post("/api/v2/write?precision=ms", &[], lines).status, 204);
    let kind = |k: &str| {
        srv.metric(&format!("argus_allocator_bytes{{kind=\"{k}\"}}"))
            .unwrap_or_else(|| panic!("no argus_allocator_bytes{{kind=\"{k}\"}} in /metrics"))
    };
    let (allocated, active, resident, mapped) = (kind("allocated"), kind("active"), kind("resident"), kind("mapped"));
    let rss = vm_rss_kib(srv.pid()).expect("VmRSS") as f64 * 1024.0;
    let all = format!("allocated {allocated} active {active} resident {resident} mapped {mapped} VmRSS {rss}");
    assert!(allocated > 1e6, "{all}");
    assert!(allocated <= active && active <= resident && active <= mapped, "{all}");
    assert!(resident <= rss, "{all}");
}

#[test]
fn rss_stays_under_the_memory_limit_while_pushing_back() {
    let limit = limit_mib();
    let srv = start(limit);
    let r = pressure(&srv);
    let report = describe(limit, &r, &srv);
    eprintln!("{report}");
    assert!(r.first_pushback.is_some(), "no 503/429 within {MAX_RUN:?}\n{report}");
    assert!(r.peak_rss_kib < limit * 1024, "peak RSS over the limit\n{report}");
}

#[test]
fn writes_are_accepted_again_after_pushing_back() {
    let limit = limit_mib();
    let srv = start(limit);
    let r = pressure(&srv);
    let report = describe(limit, &r, &srv);
    eprintln!("{report}");
    assert!(r.first_pushback.is_some(), "no 503/429 within {MAX_RUN:?}\n{report}");
    // A client that honours Retry-After gets a small write in once upkeep (every 10s) has flushed.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = now_ms();
        let w = srv.write_ms(&format!("after,probe=1 value=7 {t}"));
        if w.status == 204 {
            let got = srv.raw_samples("after_value", t, "1m");
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0].1, vec![(t, "7".to_string())]);
            break;
        }
        assert!(matches!(w.status, 429 | 503), "{}: {}", w.status, w.body);
        let wait: u64 = w.header("retry-after").and_then(|v| v.parse().ok()).expect("Retry-After on a pushback");
        assert!(
            Instant::now() < deadline,
            "still refused 30s after the load stopped: {}\n{}",
            w.body,
            describe(limit, &r, &srv)
        );
        std::thread::sleep(Duration::from_secs(wait));
    }
    assert_eq!(srv.get("/-/healthy").status, 200);
}
