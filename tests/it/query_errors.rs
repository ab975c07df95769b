//! Bad queries against the real server: each is answered in Prometheus' error envelope with the status
//! Prometheus gives it (400 `bad_data`, 422 `execution`, 503 `timeout`), and afterwards the server is
//! still healthy and still answers an ordinary query.

use crate::support::server;

use serde_json::Value;
use server::{Reply, Server, enc, now_ms, secs};

const SEC: i64 = 1000;

/// 240 samples of `load_avg` for host a and b, one every 15 s, ending a minute ago on a whole second.
fn write_load(srv: &Server) -> i64 {
    let end = (now_ms() - 60 * SEC) / SEC * SEC;
    let lines: Vec<String> = (0..240)
        .flat_map(|i| ["a", "b"].map(|h| format!("load,host={h} avg={} {}", i % 5, end - i * 15 * SEC)))
        .collect();
    let r = srv.write_ms(&lines.join("\n"));
    assert_eq!(r.status, 204, "{}", r.body);
    end
}

/// Asserts the error envelope, status and type, and returns the message.
fn error(r: &Reply, status: u16, kind: &str) -> String {
    assert_eq!(r.status, status, "{}", r.body);
    let j: Value = r.json();
    assert_eq!(j["status"], "error", "{j}");
    assert_eq!(j["errorType"], kind, "{j}");
    j["error"].as_str().expect("error message").to_string()
}

/// `/-/healthy` is 200 and an ordinary instant query still gives both hosts.
fn still_serves(srv: &Server, at: i64) {
    let h = srv.get("/-/healthy");
    assert_eq!(h.status, 200, "{}", h.body);
    let d = srv.query("count(load_avg)", at);
    assert_eq!(d["result"][0]["value"][1], "2", "{d}");
}

fn instant(srv: &Server, q: &str, at: i64) -> Reply {
    srv.get(&format!("/api/v1/query?query={}&time={}", enc(q), secs(at)))
}

#[test]
fn syntax_errors_and_unknown_functions_are_bad_data_with_the_position() {
    let srv = Server::start();
    let at = write_load(&srv);
    for (q, want) in [
        // Prometheus' `line:col: parse error:` prefix; columns count bytes from 1.
        ("sum(rate(load_avg[5m])", "invalid parameter \"query\": 1:23: parse error: unclosed left parenthesis"),
        ("load_avg{host=}", "invalid parameter \"query\": 1:15: parse error: "),
        ("1 +", "invalid parameter \"query\": 1:4: parse error: "),
        ("sum by (host load_avg) (load_avg)", "invalid parameter \"query\": 1:14: parse error: "),
        ("rate(load_avg)", "invalid parameter \"query\": 1:6: parse error: "),
    ] {
        let msg = error(&instant(&srv, q, at), 400, "bad_data");
        assert!(msg.starts_with(want), "{q}: {msg}");
        still_serves(&srv, at);
    }
    let msg = error(&instant(&srv, "nope_fn(load_avg)", at), 400, "bad_data");
    assert_eq!(msg, "invalid parameter \"query\": 1:1: parse error: unknown function with name 'nope_fn'");
    // The same through query_range.
    let r = srv.get(&format!(
        "/api/v1/query_range?query={}&start={}&end={}&step=15",
        enc("frobnicate(load_avg)"),
        secs(at - 3_600 * SEC),
        secs(at)
    ));
    assert!(error(&r, 400, "bad_data").contains("frobnicate"));
    still_serves(&srv, at);
}

#[test]
fn too_many_samples_is_an_execution_error() {
    let srv = Server::with_config("[store]\nmax_query_samples = 100\n");
    let at = write_load(&srv);
    // 480 raw samples in the hour; the limit is 100.
    let msg = error(&instant(&srv, "load_avg[1h]", at), 422, "execution");
    assert!(msg.contains("too many samples"), "{msg}");
    let r = srv.get(&format!(
        "/api/v1/query_range?query={}&start={}&end={}&step=15",
        enc("sum_over_time(load_avg[1h])"),
        secs(at - 3_600 * SEC),
        secs(at)
    ));
    assert!(error(&r, 422, "execution").contains("too many samples"));
    still_serves(&srv, at);
}

/// A subquery at a 1 ms step over hours evaluates its inner expression millions of times.
const EXPENSIVE: &str = "max_over_time(max_over_time(load_avg[1h:10ms])[2h:10ms])";

#[test]
fn a_query_past_query_timeout_is_a_timeout() {
    let srv = Server::with_config("[store]\nquery_timeout = \"300ms\"\n");
    let at = write_load(&srv);
    let t = std::time::Instant::now();
    let msg = error(&instant(&srv, EXPENSIVE, at), 503, "timeout");
    assert!(msg.starts_with("query timed out"), "{msg}");
    assert!(t.elapsed() < std::time::Duration::from_secs(20), "stopped late: {:?}", t.elapsed());
    still_serves(&srv, at);
}

#[test]
fn the_timeout_parameter_lowers_the_time_limit() {
    let srv = Server::start();
    let at = write_load(&srv);
    let r = srv.get(&format!("/api/v1/query?query={}&time={}&timeout=300ms", enc(EXPENSIVE), secs(at)));
    assert!(error(&r, 503, "timeout").starts_with("query timed out"));
    still_serves(&srv, at);
}

#[test]
fn huge_ranges_with_tiny_steps_are_refused_before_evaluation() {
    let srv = Server::start();
    let at = write_load(&srv);
    // Ten years at one second: 315 million points per series.
    let r = srv.get(&format!(
        "/api/v1/query_range?query=load_avg&start={}&end={}&step=1",
        secs(at - 10 * 365 * 86_400 * SEC),
        secs(at)
    ));
    let msg = error(&r, 400, "bad_data");
    assert!(msg.starts_with("exceeded maximum resolution of 11,000 points per timeseries"), "{msg}");
    for (params, want) in [
        ("start=10&end=5&step=1", "invalid parameter \"end\""),
        ("start=0&end=5&step=0", "invalid parameter \"step\""),
        ("start=0&end=5&step=-1", "invalid parameter \"step\""),
        ("start=0&end=5&step=soon", "invalid parameter \"step\""),
        ("start=now&end=5&step=1", "invalid parameter \"start\""),
        ("start=0&step=1", "invalid parameter \"end\""),
    ] {
        let msg = error(&srv.get(&format!("/api/v1/query_range?query=load_avg&{params}")), 400, "bad_data");
        assert!(msg.starts_with(want), "{params}: {msg}");
    }
    still_serves(&srv, at);
}
