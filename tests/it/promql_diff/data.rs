//! The data both servers receive: about 180 series of a small GPU cluster over [`SPAN_MS`] (2 h 50 min),
//! deterministic (a seeded LCG per series), with the edge cases PromQL engines get wrong.
//!
//! Times below are offsets from the base time `T` the harness picks (a whole hour, so that subquery
//! and step alignment to multiples of minutes are the same on every run). The corpus refers to them.
//!
//! | metric | series | spacing | notable |
//! |---|---|---|---|
//! | `gpu_utilization{host,gpu,job}` | 4 hosts × 4 GPUs | 15 s, exact | integers 0–100; gpu-04/3 idle (< 5); gpu-02 idle 80–90 m |
//! | `gpu_memory_used_bytes{host,gpu,job}` | 16 | 15 s + host × 137 ms | huge integers (GB) |
//! | `gpu_memory_total_bytes{host,gpu,job}` | 16 | 60 s | 80 GiB constant |
//! | `gpu_temperature_celsius{host,gpu,job}` | 16 | 30 s (gpu 3: + 7 s) | two decimals; gpu-03/2 ramps 50 → 85 |
//! | `net_receive_bytes_total{host,device,job}` | 4 × eth0/ib0 | 15 s + 500 ms + host × 11 ms | resets: gpu-02/eth0 at 70 m, gpu-03/ib0 at 40 m and 41 m, gpu-04/eth0 to 0 at 100 m |
//! | `xid_errors_total{host,gpu,job}` | 16 | 30 s | +1 gpu-01/2 at 50 m; +2 gpu-03/1 at 100 m, +1 at 130 m; +1 gpu-04/0 at 165 m |
//! | `request_duration_seconds_{bucket,sum,count}{job,instance,handler}` | 2 instances × 2 handlers, 11 `le` | 15 s + 250 ms | instance gpu-04:8000 restarts at 95 m |
//! | `up{job,instance}` | 4 | 15 s | gpu-02:9400 is 0 from 80 m to 90 m |
//! | `node_info{host,datacenter,rack}` | 4 | 60 s | value 1; gpu-04 has no `rack` |
//! | `gpu_info{host,gpu,model,uuid}` | 16 | 60 s | value 1; A100 on train, H100 on infer |
//! | `edge_gauge{kind}` | 14 | 15 s unless noted | see [`edge_gauges`] |
//! | `edge_counter_total{kind}` | 3 | | `sparse` every 2 m; `stale` ends with a stale marker at 90 m 15 s; `float` adds 0.1 |

use argus_model::{Labels, Sample};
use argus_store::remote_write::WriteSeries;

pub const MINUTE: i64 = 60_000;
/// The data covers `[T, T + SPAN_MS]`. Under 3 h, so Prometheus' head never compacts during the test.
pub const SPAN_MS: i64 = 170 * MINUTE;
/// Prometheus' stale marker: a NaN with exactly these bits ends a series.
pub const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// One generated series: labels (the name included as `__name__`) and samples at offsets from `T`.
pub struct Series {
    pub labels: Vec<(String, String)>,
    pub samples: Vec<(i64, f64)>,
}

pub const HOSTS: [&str; 4] = ["gpu-01", "gpu-02", "gpu-03", "gpu-04"];

/// Every series, in a fixed order.
pub fn all() -> Vec<Series> {
    let mut out = Vec::new();
    gpu_gauges(&mut out);
    net_counters(&mut out);
    xid_counters(&mut out);
    histograms(&mut out);
    info_and_up(&mut out);
    edge_gauges(&mut out);
    edge_counters(&mut out);
    out
}

/// Remote-write requests in increasing time order: each holds every series' samples of one
/// `slice_ms`-long slice (Prometheus refuses samples more than an hour behind its newest one).
pub fn batches(series: &[Series], base_ms: i64, slice_ms: i64) -> Vec<Vec<WriteSeries>> {
    let mut out = Vec::new();
    let mut from = series.iter().flat_map(|s| s.samples.first()).map(|s| s.0).min().unwrap_or(0);
    let last = series.iter().flat_map(|s| s.samples.last()).map(|s| s.0).max().unwrap_or(0);
    while from <= last {
        let to = from + slice_ms;
        let batch: Vec<WriteSeries> = series
            .iter()
            .filter_map(|s| {
                let samples: Vec<Sample> = s
                    .samples
                    .iter()
                    .filter(|(t, _)| (from..to).contains(t))
                    .map(|&(t, v)| Sample::new(base_ms + t, v))
                    .collect();
                (!samples.is_empty()).then(|| WriteSeries {
                    labels: Labels::from_pairs(s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str()))),
                    samples,
                })
            })
            .collect();
        if !batch.is_empty() {
            out.push(batch);
        }
        from = to;
    }
    out
}

// === the cluster ===

fn job(host: usize) -> &'static str {
    if host < 2 { "train" } else { "infer" }
}

fn gpu_labels(name: &str, host: usize, gpu: usize) -> Vec<(String, String)> {
    labels(&[("__name__", name), ("host", HOSTS[host]), ("gpu", &gpu.to_string()), ("job", job(host))])
}

fn gpu_gauges(out: &mut Vec<Series>) {
    for host in 0..4 {
        for gpu in 0..4 {
            let mut rng = Lcg::new(&format!("util{host}{gpu}"));
            let samples = every(15_000, 0, 0, SPAN_MS)
                .map(|t| {
                    let v = if host == 3 && gpu == 3 {
                        rng.below(5) as f64
                    } else if host == 1 && (80 * MINUTE..90 * MINUTE).contains(&t) {
                        rng.below(3) as f64
                    } else if host < 2 {
                        85.0 + rng.below(16) as f64
                    } else {
                        let wave = ((t as f64 / (20.0 * MINUTE as f64)) + gpu as f64).sin();
                        (45.0 + 25.0 * wave + rng.below(10) as f64).round()
                    };
                    (t, v)
                })
                .collect();
            out.push(Series { labels: gpu_labels("gpu_utilization", host, gpu), samples });

            let mut rng = Lcg::new(&format!("mem{host}{gpu}"));
            let mut mib = 20_000.0 + rng.below(40_000) as f64;
            let samples = every(15_000, host as i64 * 137, 0, SPAN_MS)
                .map(|t| {
                    mib = (mib + rng.below(2001) as f64 - 1000.0).clamp(1_000.0, 79_000.0);
                    (t, mib * 1_048_576.0)
                })
                .collect();
            out.push(Series { labels: gpu_labels("gpu_memory_used_bytes", host, gpu), samples });

            let samples = every(60_000, 0, 0, SPAN_MS).map(|t| (t, 85_899_345_920.0)).collect();
            out.push(Series { labels: gpu_labels("gpu_memory_total_bytes", host, gpu), samples });

            let mut rng = Lcg::new(&format!("temp{host}{gpu}"));
            let offset = if gpu == 3 { 7_000 } else { 0 };
            let samples = every(30_000, offset, 0, SPAN_MS)
                .map(|t| {
                    let base = if host == 2 && gpu == 2 {
                        50.0 + 35.0 * t as f64 / SPAN_MS as f64
                    } else {
                        55.0 + 4.0 * host as f64 + gpu as f64
                    };
                    (t, ((base + rng.unit() * 3.0) * 100.0).round() / 100.0)
                })
                .collect();
            out.push(Series { labels: gpu_labels("gpu_temperature_celsius", host, gpu), samples });
        }
    }
}

fn net_counters(out: &mut Vec<Series>) {
    for (host, name) in HOSTS.iter().enumerate() {
        for device in ["eth0", "ib0"] {
            let mut rng = Lcg::new(&format!("net{host}{device}"));
            // (offset, back to exactly zero) of each counter reset
            let resets: &[(i64, bool)] = match (host, device) {
                (1, "eth0") => &[(70 * MINUTE, false)],
                (2, "ib0") => &[(40 * MINUTE, false), (41 * MINUTE, false)],
                (3, "eth0") => &[(100 * MINUTE, true)],
                _ => &[],
            };
            let mut next_reset = 0;
            let scale = if device == "eth0" { 1e6 } else { 1e8 };
            let mut v = rng.below(1_000_000_000) as f64;
            let samples = every(15_000, 500 + host as i64 * 11, 0, SPAN_MS)
                .map(|t| {
                    let inc = ((1.0 + rng.unit() * 9.0) * scale).round();
                    match resets.get(next_reset) {
                        Some(&(at, zero)) if t >= at => {
                            next_reset += 1;
                            v = if zero { 0.0 } else { inc };
                        }
                        _ => v += inc,
                    }
                    (t, v)
                })
                .collect();
            let labels = labels(&[
                ("__name__", "net_receive_bytes_total"),
                ("host", name),
                ("device", device),
                ("job", job(host)),
            ]);
            out.push(Series { labels, samples });
        }
    }
}

fn xid_counters(out: &mut Vec<Series>) {
    for host in 0..4 {
        for gpu in 0..4 {
            let bumps: &[(i64, f64)] = match (host, gpu) {
                (0, 2) => &[(50 * MINUTE, 1.0)],
                (2, 1) => &[(100 * MINUTE, 2.0), (130 * MINUTE, 1.0)],
                (3, 0) => &[(165 * MINUTE, 1.0)],
                _ => &[],
            };
            let samples = every(30_000, 0, 0, SPAN_MS)
                .map(|t| (t, bumps.iter().filter(|(at, _)| t >= *at).map(|(_, n)| n).sum::<f64>()))
                .collect();
            out.push(Series { labels: gpu_labels("xid_errors_total", host, gpu), samples });
        }
    }
}

/// Classic histograms of request latency, as a Prometheus client library exposes them.
fn histograms(out: &mut Vec<Series>) {
    const LE: [f64; 10] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];
    for instance in ["gpu-03:8000", "gpu-04:8000"] {
        for handler in ["/generate", "/embed"] {
            let mut rng = Lcg::new(&format!("hist{instance}{handler}"));
            let times: Vec<i64> = every(15_000, 250, 0, SPAN_MS).collect();
            let mut buckets = vec![Vec::with_capacity(times.len()); LE.len() + 1];
            let (mut sum, mut count) = (Vec::new(), Vec::new());
            let (mut b, mut s, mut c) = ([0.0; 11], 0.0, 0.0);
            for &t in &times {
                if instance == "gpu-04:8000" && (95 * MINUTE..95 * MINUTE + 15_000).contains(&t) {
                    (b, s, c) = ([0.0; 11], 0.0, 0.0);
                }
                let n = if handler == "/generate" { 5 + rng.below(35) } else { 50 + rng.below(150) };
                for _ in 0..n {
                    // log-uniform over about two decades
                    let d = if handler == "/generate" {
                        0.05 * 80f64.powf(rng.unit())
                    } else {
                        0.002 * 100f64.powf(rng.unit())
                    };
                    for (i, le) in LE.iter().enumerate() {
                        if d <= *le {
                            b[i] += 1.0;
                        }
                    }
                    b[10] += 1.0;
                    s += d;
                    c += 1.0;
                }
                for (i, bucket) in buckets.iter_mut().enumerate() {
                    bucket.push((t, b[i]));
                }
                sum.push((t, s));
                count.push((t, c));
            }
            let base = [("job", "infer"), ("instance", instance), ("handler", handler)];
            for (i, samples) in buckets.into_iter().enumerate() {
                let le = LE.get(i).map_or("+Inf".to_string(), |l| l.to_string());
                let mut l = labels(&base);
                l.push(("__name__".into(), "request_duration_seconds_bucket".into()));
                l.push(("le".into(), le));
                out.push(Series { labels: l, samples });
            }
            for (name, samples) in [("request_duration_seconds_sum", sum), ("request_duration_seconds_count", count)] {
                let mut l = labels(&base);
                l.push(("__name__".into(), name.into()));
                out.push(Series { labels: l, samples });
            }
        }
    }
}

fn info_and_up(out: &mut Vec<Series>) {
    for (host, name) in HOSTS.iter().enumerate() {
        let instance = format!("{name}:9400");
        let samples = every(15_000, 0, 0, SPAN_MS)
            .map(|t| (t, if host == 1 && (80 * MINUTE..90 * MINUTE).contains(&t) { 0.0 } else { 1.0 }))
            .collect();
        out.push(Series { labels: labels(&[("__name__", "up"), ("job", "dcgm"), ("instance", &instance)]), samples });

        let dc = if host < 2 { "dc1" } else { "dc2" };
        let mut l = labels(&[("__name__", "node_info"), ("host", name), ("datacenter", dc)]);
        if host < 3 {
            l.push(("rack".into(), format!("r{}", host % 2 + 1)));
        }
        out.push(Series { labels: l, samples: every(60_000, 0, 0, SPAN_MS).map(|t| (t, 1.0)).collect() });

        for gpu in 0..4 {
            let model = if host < 2 { "A100" } else { "H100" };
            let uuid = format!("GPU-{:08x}", Lcg::new(&format!("uuid{host}{gpu}")).below(u32::MAX as u64));
            let l = labels(&[
                ("__name__", "gpu_info"),
                ("host", name),
                ("gpu", &gpu.to_string()),
                ("model", model),
                ("uuid", &uuid),
            ]);
            out.push(Series { labels: l, samples: every(60_000, 0, 0, SPAN_MS).map(|t| (t, 1.0)).collect() });
        }
    }
}

// === edge cases ===

/// `edge_gauge{kind=…}`, every 15 s from `T` unless noted (sample `i` is at `i × 15 s`):
/// - `nan`: NaN where `i % 8 == 0` (every 2 minutes, on the minute), else `i % 50 + 0.5`;
/// - `inf`: +Inf where `i % 10 == 5` (e.g. 91 m 15 s), else `i % 30`; `neginf`: the same negated;
/// - `gap`: none in `[40 m, 60 m)` (longer than the lookback) and `[100 m, 103 m)` (shorter);
/// - `stale`: until 120 m, then a stale marker at 120 m 15 s;
/// - `stale_resume`: until 60 m, a stale marker at 60 m 15 s, again from 80 m;
/// - `ends`: until 120 m, no stale marker;
/// - `irregular`: intervals from 1 s to 90 s with milliseconds;
/// - `single`: one sample, 42 at 60 m;
/// - `int`: integers cycling 0 1 2 3 5 (label `unit="count"`);
/// - `zero`: always 0 (`unit="count"`); `negative`: −1 − (i % 10)/4 (`unit="count"`);
/// - `huge`: ±1e300 × (1 + i % 7); `tiny`: 1e-300 × (1 + i % 5);
/// - `late`: starts at 150 m.
fn edge_gauges(out: &mut Vec<Series>) {
    let stale = f64::from_bits(STALE_NAN);
    let regular = |f: &dyn Fn(i64) -> f64| every(15_000, 0, 0, SPAN_MS).map(|t| (t, f(t / 15_000))).collect::<Vec<_>>();
    let mut push = |kind: &str, unit: Option<&str>, samples: Vec<(i64, f64)>| {
        let mut l = labels(&[("__name__", "edge_gauge"), ("kind", kind)]);
        if let Some(u) = unit {
            l.push(("unit".into(), u.into()));
        }
        out.push(Series { labels: l, samples });
    };
    push("nan", None, regular(&|i| if i % 8 == 0 { f64::NAN } else { (i % 50) as f64 + 0.5 }));
    push("inf", None, regular(&|i| if i % 10 == 5 { f64::INFINITY } else { (i % 30) as f64 }));
    push("neginf", None, regular(&|i| if i % 10 == 5 { f64::NEG_INFINITY } else { -((i % 30) as f64) }));
    let gap = every(15_000, 0, 0, SPAN_MS)
        .filter(|t| !(40 * MINUTE..60 * MINUTE).contains(t) && !(100 * MINUTE..103 * MINUTE).contains(t))
        .map(|t| (t, (t as f64 / 600_000.0).sin() * 10.0))
        .collect();
    push("gap", None, gap);
    let mut s: Vec<(i64, f64)> = every(15_000, 0, 0, 120 * MINUTE).map(|t| (t, (t / 15_000 % 17) as f64)).collect();
    s.push((120 * MINUTE + 15_000, stale));
    push("stale", None, s);
    let mut s: Vec<(i64, f64)> = every(15_000, 0, 0, 60 * MINUTE).map(|t| (t, (t / 15_000 % 17) as f64)).collect();
    s.push((60 * MINUTE + 15_000, stale));
    s.extend(every(15_000, 0, 80 * MINUTE, SPAN_MS).map(|t| (t, (t / 15_000 % 17) as f64 + 100.0)));
    push("stale_resume", None, s);
    push("ends", None, every(15_000, 0, 0, 120 * MINUTE).map(|t| (t, (t / 15_000 % 13) as f64 * 1.5)).collect());
    let mut rng = Lcg::new("irregular");
    let mut irregular = Vec::new();
    let mut t = 0;
    while t <= SPAN_MS {
        irregular.push((t, 10.0 + rng.unit() * 5.0));
        t += 1_000 + rng.below(89_000) as i64;
    }
    push("irregular", None, irregular);
    push("single", None, vec![(60 * MINUTE, 42.0)]);
    push("int", Some("count"), regular(&|i| [0.0, 1.0, 2.0, 3.0, 5.0][(i % 5) as usize]));
    push("zero", Some("count"), regular(&|_| 0.0));
    push("negative", Some("count"), regular(&|i| -1.0 - (i % 10) as f64 / 4.0));
    push("huge", None, regular(&|i| (if i / 3 % 2 == 0 { 1e300 } else { -1e300 }) * (1 + i % 7) as f64));
    push("tiny", None, regular(&|i| 1e-300 * (1 + i % 5) as f64));
    push("late", None, every(15_000, 0, 150 * MINUTE, SPAN_MS).map(|t| (t, (t / 15_000 % 9) as f64)).collect());
}

fn edge_counters(out: &mut Vec<Series>) {
    let mut rng = Lcg::new("sparse");
    let mut v = 0.0;
    let sparse = every(120_000, 0, 0, SPAN_MS)
        .map(|t| {
            v += 10.0 + rng.below(91) as f64;
            (t, v)
        })
        .collect();
    let mut v = 0.0;
    let mut stale: Vec<(i64, f64)> = every(15_000, 0, 0, 90 * MINUTE)
        .map(|t| {
            v += 3.0;
            (t, v)
        })
        .collect();
    stale.push((90 * MINUTE + 15_000, f64::from_bits(STALE_NAN)));
    let mut v = 0.0;
    let float = every(15_000, 0, 0, SPAN_MS)
        .map(|t| {
            v += 0.1;
            (t, v)
        })
        .collect();
    for (kind, samples) in [("sparse", sparse), ("stale", stale), ("float", float)] {
        out.push(Series { labels: labels(&[("__name__", "edge_counter_total"), ("kind", kind)]), samples });
    }
}

// === helpers ===

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Offsets `from + offset, from + offset + step, …` up to `to` inclusive.
fn every(step: i64, offset: i64, from: i64, to: i64) -> impl Iterator<Item = i64> {
    (0..).map(move |i| from + offset + i * step).take_while(move |t| *t <= to)
}

/// Knuth's MMIX LCG, seeded from a name so that adding a series leaves the others unchanged.
struct Lcg(u64);

impl Lcg {
    fn new(seed: &str) -> Lcg {
        // FNV-1a
        let h = seed.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
        Lcg(h)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// Uniform in `[0, n)`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 31) as f64
    }
}
