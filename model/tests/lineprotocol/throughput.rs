//! Parse throughput on GPU telemetry, per CPU second. Run with
//! `cargo test -p argus-model --release --test lineprotocol -- --ignored --nocapture throughput`.

use std::fmt::Write;
use std::time::Instant;

use argus_model::lineprotocol::{Line, field_as_f64, parse, parse_each, series_name};

const LINES: usize = 100_000;
const RUNS: usize = 10;

fn body() -> String {
    let mut body = String::with_capacity(LINES * 200);
    for i in 0..LINES {
        let (node, gpu) = (i / 8, i % 8);
        let _ = writeln!(
            body,
            "gpu,cluster=prod,rack=rack-{:02},host=gpu-node-{node:03},gpu={gpu},model=H200 \
             utilization={}.{},memory_used_bytes={}i,temperature_celsius={}.{},power_watts={}.{} {}",
            node % 40,
            i % 100,
            i % 10,
            123_456_789 + i * 4096,
            40 + i % 45,
            i % 10,
            300 + i % 400,
            i % 10,
            1_700_000_000_000_000_000u64 + (i as u64 / 1000) * 10_000_000_000,
        );
    }
    body
}

/// This thread's CPU time in seconds, so that other processes on a busy machine do not count; wall
/// time where the kernel does not say.
fn cpu_seconds() -> f64 {
    let schedstat = std::fs::read_to_string("/proc/thread-self/schedstat").ok();
    let ns = schedstat.and_then(|s| s.split_whitespace().next().and_then(|n| n.parse::<u64>().ok()));
    match ns {
        Some(ns) => ns as f64 / 1e9,
        None => {
            static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
            START.get_or_init(Instant::now).elapsed().as_secs_f64()
        }
    }
}

/// The best of `RUNS` CPU times of `f`.
fn best(mut f: impl FnMut()) -> f64 {
    (0..RUNS)
        .map(|_| {
            let start = cpu_seconds();
            f();
            cpu_seconds() - start
        })
        .fold(f64::MAX, f64::min)
}

/// What the store's hot path does with a point: a name and a value per field.
fn consume(line: &Line<'_>, name: &mut String, sum: &mut f64) {
    for (field, value) in &line.fields {
        name.clear();
        series_name(&line.measurement, field, name);
        *sum += field_as_f64(value).unwrap_or(0.0) + name.len() as f64;
    }
}

#[test]
#[ignore = "a measurement, not a check; run in release"]
fn throughput() {
    let body = body();
    let (mut name, mut sum) = (String::new(), 0.0);
    let report = |what: &str, secs: f64| {
        let per_line = secs / LINES as f64;
        println!(
            "{what}: {:.0} lines/s, {:.0} ns/line, {:.0} MB/s",
            1.0 / per_line,
            per_line * 1e9,
            body.len() as f64 / secs / 1e6
        );
    };

    report("parse", best(|| assert_eq!(parse(&body).map(|l| l.len()), Ok(LINES))));
    report(
        "parse + names + values",
        best(|| {
            for line in parse(&body).unwrap() {
                consume(&line, &mut name, &mut sum);
            }
        }),
    );
    report(
        "parse_each + names + values",
        best(|| assert_eq!(parse_each(&body, |line| consume(line, &mut name, &mut sum)), Ok(LINES))),
    );
    assert!(sum > 0.0);
}
