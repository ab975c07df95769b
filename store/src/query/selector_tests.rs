//! The range-query path for plain selectors (`Ev::selector_points`) against the general evaluator and
//! against a direct reading of Prometheus' rules, on random series with gaps, stale markers, several
//! blocks written out of order and a part still in the head; and the decoded-chunk cache under it.

use super::{LOOKBACK_MS, QueryLimits, STALE_NAN_BITS, Value, eval};
use crate::wal::WalSync;
use crate::{Db, Options};
use argus_model::{Labels, Sample};
use std::time::Duration;

const T0: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;

/// A small deterministic generator (PCG-style LCG): the cases are random but repeatable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn open(dir: &std::path::Path, cache: Option<usize>) -> Db {
    let mut o = Options::new(dir);
    o.retention = Duration::from_secs(200 * 365 * 86_400);
    o.wal_sync = WalSync::Never;
    o.chunk_cache = cache;
    Db::open(o).expect("open db")
}

/// Six hours of one series: a 10 s grid with jitter, gaps of up to 20 minutes (longer than the
/// lookback), stale markers followed by silence or by new samples, and repeated values.
fn random_series(rng: &mut Rng) -> Vec<Sample> {
    let mut out = Vec::new();
    let mut t = T0 + rng.below(10_000) as i64;
    let mut v = 50.0;
    while t < T0 + 6 * HOUR {
        match rng.below(100) {
            0..=1 => t += 60_000 + rng.below(1_200_000) as i64, // a gap
            2..=3 => out.push(Sample::new(t, f64::from_bits(STALE_NAN_BITS))),
            4..=10 => out.push(Sample::new(t, v)), // unchanged value
            _ => {
                v = ((v + rng.below(21) as f64 - 10.0) * 10.0).round() / 10.0;
                out.push(Sample::new(t, v));
            }
        }
        t += 10_000 + rng.below(3) as i64 - 1;
    }
    out
}

/// Prometheus' rule for an instant selector at `t`: the latest sample at or before `t`, if it is
/// within the lookback and is not a stale marker.
fn reference(samples: &[Sample], t: i64) -> Option<f64> {
    let s = samples.iter().rev().find(|s| s.t <= t)?;
    (s.t >= t - LOOKBACK_MS && s.v.to_bits() != STALE_NAN_BITS).then_some(s.v)
}

/// A store holding `series` series over 6 h: written in four slices in the order 2, 0, 3, 1 with a
/// flush after each of the first three (so blocks overlap in time and arrive out of order), the last
/// slice left in the head. Returns the samples each series holds.
fn store(db: &Db, rng: &mut Rng, series: usize) -> Vec<(Labels, Vec<Sample>)> {
    let all: Vec<(Labels, Vec<Sample>)> = (0..series)
        .map(|i| (Labels::from_pairs([("__name__", "m".to_string()), ("i", format!("{i:02}"))]), random_series(rng)))
        .collect();
    let slice = |k: i64, s: &[Sample]| -> Vec<Sample> {
        s.iter().filter(|x| x.t >= T0 + k * 90 * 60_000 && x.t < T0 + (k + 1) * 90 * 60_000).copied().collect()
    };
    for (n, k) in [2, 0, 3, 1].into_iter().enumerate() {
        let part: Vec<(Labels, Vec<Sample>)> =
            all.iter().map(|(l, s)| (l.clone(), slice(k, s))).filter(|(_, s)| !s.is_empty()).collect();
        db.write_series(&part).expect("write");
        if n < 3 {
            db.flush().expect("flush");
        }
    }
    all
}

fn matrix(v: Value) -> Vec<(Labels, Vec<(i64, u64)>)> {
    let Value::Matrix(m) = v else { panic!("not a matrix: {v:?}") };
    m.into_iter().map(|(l, s)| ((*l).clone(), s.iter().map(|x| (x.t, x.v.to_bits())).collect())).collect()
}

#[test]
fn plain_selectors_match_the_general_evaluator_and_prometheus_rules() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), None);
    let mut rng = Rng(7);
    let all = store(&db, &mut rng, 6);
    let limits = QueryLimits::default();
    let queries = ["m", "m{i=\"03\"}", "(m{i=~\"0[12]\"})", "m offset 7m", "m @ 1700010000", "m{i!=\"00\"} offset -3m"];
    for case in 0..60 {
        let q = queries[case % queries.len()];
        let start = T0 - 10 * 60_000 + rng.below(7 * HOUR as u64) as i64;
        let step = [1_000, 9_999, 10_000, 15_000, 60_000, 3_600_000][rng.below(6) as usize];
        let end = start + rng.below(3 * HOUR as u64) as i64;
        let fast = matrix(super::range(&db, q, start, end, step, &limits).unwrap());
        let expr = crate::query::parse_expr(q).unwrap();
        let mem = limits.memory.reserve();
        let ev = eval::Ev::new(&db, start, end, step, &limits, &mem);
        let general = matrix(super::evaluated(&ev, &expr, start, step).unwrap());
        assert_eq!(fast, general, "{q} over [{start}, {end}] step {step}");
        if q == "m" {
            // Independently of both: every series, every step, by the rule itself.
            let want: Vec<(Labels, Vec<(i64, u64)>)> = all
                .iter()
                .map(|(l, s)| {
                    let mut t = start;
                    let mut pts = Vec::new();
                    while t <= end {
                        pts.extend(reference(s, t).map(|v| (t, v.to_bits())));
                        t += step;
                    }
                    (l.clone(), pts)
                })
                .filter(|(_, p)| !p.is_empty())
                .collect();
            assert_eq!(fast, want, "{q} over [{start}, {end}] step {step}");
        }
    }
}

#[test]
fn plain_selectors_keep_the_point_limit() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), None);
    let all = store(&db, &mut Rng(3), 2);
    let points: usize = all.iter().map(|(_, s)| s.len()).sum();
    let limits = QueryLimits { max_samples: points / 2, ..QueryLimits::default() };
    let e = super::range(&db, "m", T0, T0 + 6 * HOUR, 10_000, &limits).unwrap_err();
    assert!(e.to_string().contains("too many samples"), "{e}");
}

#[test]
fn the_chunk_cache_answers_repeated_reads_with_the_same_samples() {
    let d = tempfile::tempdir().unwrap();
    let cached = open(d.path(), Some(64 << 20));
    store(&cached, &mut Rng(11), 4);
    let limits = QueryLimits::default();
    let read = |db: &Db| matrix(super::range(db, "m", T0, T0 + 6 * HOUR, 10_000, &limits).unwrap());
    let first = read(&cached);
    let m = &cached.metrics().chunk_cache;
    let (misses, hits) = (m.misses.get(), m.hits.get());
    assert!(misses > 0 && hits == 0, "a first read decodes: {misses} misses, {hits} hits");
    assert_eq!(read(&cached), first);
    assert_eq!(m.misses.get(), misses, "a second read decodes nothing");
    assert_eq!(m.hits.get(), misses);
    assert!(m.bytes.get() > 0 && m.entries.get() as u64 == misses);
    cached.close();
    let uncached = open(d.path(), Some(0));
    assert_eq!(read(&uncached), first, "the same answer without the cache");
    assert_eq!(uncached.metrics().chunk_cache.hits.get() + uncached.metrics().chunk_cache.misses.get(), 0);
}

/// Aggregations into one group over a selector are folded a window of series at a time
/// (`Ev::fold_selector`); they give the same bits as the general fold over the whole matrix (reached
/// here through `x + 0`, which is not a plain selector), over more series than one window, several
/// blocks and the head, with values of every magnitude so that a change in the order of addition
/// would show.
#[test]
fn aggregations_folded_by_window_match_the_general_fold() {
    let d = tempfile::tempdir().unwrap();
    let db = open(d.path(), None);
    let mut rng = Rng(11);
    let n = super::aggregate::FOLD_WINDOW * 2 + 300;
    let all: Vec<(Labels, Vec<Sample>)> = (0..n)
        .map(|i| {
            let scale = [1e-9, 1.0, 1e6, 1e15][i % 4];
            let samples = (0..40)
                .filter(|k| (k + i) % 7 != 0)
                .map(|k| Sample::new(T0 + k as i64 * 60_000 + (i % 5) as i64, (rng.below(1000) as f64 - 500.0) * scale))
                .collect();
            let labels = [("__name__", "w".to_string()), ("g", format!("{}", i % 13)), ("i", format!("{i:05}"))];
            (Labels::from_pairs(labels), samples)
        })
        .collect();
    let half: Vec<(Labels, Vec<Sample>)> =
        all.iter().map(|(l, s)| (l.clone(), s.iter().filter(|x| x.t < T0 + 20 * 60_000).copied().collect())).collect();
    db.write_series(&half).expect("write");
    db.flush().expect("flush");
    let rest: Vec<(Labels, Vec<Sample>)> =
        all.iter().map(|(l, s)| (l.clone(), s.iter().filter(|x| x.t >= T0 + 20 * 60_000).copied().collect())).collect();
    db.write_series(&rest).expect("write");
    let limits = QueryLimits::default();
    for op in ["sum", "avg", "count", "min", "max", "group", "stddev", "stdvar"] {
        let q = |e: &str| matrix(super::range(&db, e, T0, T0 + 45 * 60_000, 30_000, &limits).expect(e));
        let streamed = q(&format!("{op}(w)"));
        assert_eq!(streamed, q(&format!("{op}(w + 0)")), "{op}");
        assert_eq!(streamed, q(&format!("{op} by () ((w))")), "{op} by ()");
        assert_eq!(streamed.len(), 1, "{op}");
        assert!(streamed[0].1.len() > 80, "{op}: a value at most steps");
        // 13 groups by `g` (or without `i`), one per series without `g` or by both, one by a label no
        // series has.
        for grouping in ["by (g)", "without (i)", "without (g)", "by (g, i)", "by (nothing)"] {
            let streamed = q(&format!("{op} {grouping} (w)"));
            assert_eq!(streamed, q(&format!("{op} {grouping} (w + 0)")), "{op} {grouping}");
            let groups = match grouping {
                "by (g)" | "without (i)" => 13,
                "by (nothing)" => 1,
                _ => n,
            };
            assert_eq!(streamed.len(), groups, "{op} {grouping}");
        }
    }
    assert!(matrix(super::range(&db, "sum(nothing)", T0, T0 + 60_000, 30_000, &limits).unwrap()).is_empty());
}
