//! Functions over range vectors (`rate`, `*_over_time`, `deriv`, …): one value per step from the
//! samples in that step's window, computed as Prometheus 2 computes them.

use super::QueryError;
use super::eval::{Ev, Row, Span, check_distinct, drop_name};
use super::functions::{absent_labels, quantile};
use argus_model::Sample;
use promql_parser::parser::Call;

/// What a function over time sees at one step.
struct Window<'a> {
    s: &'a [Sample],
    /// The window's bounds in ms (`start` inclusive).
    start: i64,
    end: i64,
    /// The step's own time (predict_linear predicts from it).
    t: i64,
    range_secs: f64,
    /// The index of `s[0]` in its series, and the series' counter resets inside the window (each the
    /// index of a sample lower than the one before it), when the function needs them.
    lo: usize,
    resets: &'a [usize],
}

// === impl Ev ===

impl Ev<'_> {
    /// Evaluates a function whose argument `m` is a range vector; `None` for other functions.
    pub fn range_function(&self, c: &Call) -> Result<Option<Vec<Row>>, QueryError> {
        let name = c.func.name;
        let args = &c.args.args;
        let m = match name {
            "quantile_over_time" => 1,
            "rate"
            | "irate"
            | "increase"
            | "delta"
            | "idelta"
            | "deriv"
            | "predict_linear"
            | "resets"
            | "changes"
            | "avg_over_time"
            | "min_over_time"
            | "max_over_time"
            | "sum_over_time"
            | "count_over_time"
            | "stddev_over_time"
            | "stdvar_over_time"
            | "last_over_time"
            | "present_over_time"
            | "absent_over_time"
            | "double_exponential_smoothing"
            | "holt_winters" => 0,
            _ => return Ok(None),
        };
        // Scalar arguments, evaluated per step.
        let mut scalars: Vec<Vec<f64>> = Vec::new();
        for (i, a) in args.iter().enumerate() {
            if i != m {
                scalars.push(self.eval_scalar(a)?);
            }
        }
        if name == "absent_over_time" {
            let seen: Vec<Vec<bool>> = self.map_range(&args[m], |_, samples, span| {
                let mut any = vec![false; self.n];
                span.each_at(samples, |i, _, _| any[i] = true);
                Ok(Some(any))
            })?;
            let vals: Vec<Option<f64>> = (0..self.n).map(|i| (!seen.iter().any(|s| s[i])).then_some(1.0)).collect();
            if vals.iter().all(Option::is_none) {
                return Ok(Some(Vec::new()));
            }
            return Ok(Some(vec![Row { labels: std::sync::Arc::new(absent_labels(&args[m])), vals }]));
        }
        if matches!(name, "double_exponential_smoothing" | "holt_winters") {
            for (what, v) in [("smoothing", &scalars[0]), ("trend", &scalars[1])] {
                if let Some(x) = v.iter().find(|&&x| x <= 0.0 || x >= 1.0) {
                    return Err(QueryError::Execution(format!(
                        "invalid {what} factor. Expected: 0 < {} < 1, got: {x:.6}",
                        if what == "smoothing" { "sf" } else { "tf" }
                    )));
                }
            }
        }
        let counter = matches!(name, "rate" | "increase" | "resets");
        let rows = self.map_range(&args[m], |labels, samples, span| {
            let range_secs = span.range as f64 / 1000.0;
            let mut vals = vec![None; self.n];
            let mut timed_out = false;
            // Counter resets are found once per series; each window then visits only its own resets
            // instead of rescanning every sample (a 1 h window at a 5 m step holds 360 samples).
            let resets: Vec<usize> = if counter && has_reset(samples) {
                (1..samples.len()).filter(|&k| samples[k].v < samples[k - 1].v).collect()
            } else {
                Vec::new()
            };
            if name == "avg_over_time" {
                avg_over_time_windows(samples, span, &mut vals, || self.check_time().is_err());
                self.check_time()?;
                return Ok(vals.iter().any(Option::is_some).then(|| Row { labels: drop_name(labels), vals }));
            }
            span.each_at(samples, |i, lo, s| {
                // A subquery at a tiny step gives one series millions of long windows: check the deadline
                // as the steps go, not only between series, so a timeout stops the work promptly.
                if timed_out || (i % 64 == 0 && self.check_time().is_err()) {
                    timed_out = true;
                    return;
                }
                let (a, b) = (resets.partition_point(|&k| k <= lo), resets.partition_point(|&k| k < lo + s.len()));
                let win = Window {
                    s,
                    start: span.ends[i] - span.range,
                    end: span.ends[i],
                    t: self.t(i),
                    range_secs,
                    lo,
                    resets: &resets[a..b],
                };
                let arg = |k: usize| scalars.get(k).map_or(f64::NAN, |v| v[i]);
                vals[i] = apply(name, &win, arg);
            });
            if timed_out {
                self.check_time()?;
            }
            if !vals.iter().any(Option::is_some) {
                return Ok(None);
            }
            let labels = if name == "last_over_time" { labels.clone() } else { drop_name(labels) };
            Ok(Some(Row { labels, vals }))
        })?;
        check_distinct(&rows)?;
        Ok(Some(rows))
    }
}

fn apply(name: &str, w: &Window, arg: impl Fn(usize) -> f64) -> Option<f64> {
    let s = w.s;
    let last = s[s.len() - 1];
    Some(match name {
        "rate" => extrapolated(w, true, true)?,
        "increase" => extrapolated(w, true, false)?,
        "delta" => extrapolated(w, false, false)?,
        "irate" => instant_value(s, true)?,
        "idelta" => instant_value(s, false)?,
        "deriv" => {
            if s.len() < 2 {
                return None;
            }
            linear_regression(s, s[0].t).0
        }
        "predict_linear" => {
            if s.len() < 2 {
                return None;
            }
            let (slope, intercept) = linear_regression(s, w.t);
            slope * arg(0) + intercept
        }
        "resets" => w.resets.len() as f64,
        "changes" => s.windows(2).filter(|p| p[1].v != p[0].v && !(p[1].v.is_nan() && p[0].v.is_nan())).count() as f64,
        "avg_over_time" => avg_over_time(s),
        "min_over_time" => s.iter().fold(s[0].v, |m, x| if x.v < m || m.is_nan() { x.v } else { m }),
        "max_over_time" => s.iter().fold(s[0].v, |m, x| if x.v > m || m.is_nan() { x.v } else { m }),
        "sum_over_time" => {
            let (sum, c) = s.iter().fold((0.0, 0.0), |(sum, c), x| kahan_inc(x.v, sum, c));
            if sum.is_infinite() { sum } else { sum + c }
        }
        "count_over_time" => s.len() as f64,
        "stddev_over_time" => variance(s).sqrt(),
        "stdvar_over_time" => variance(s),
        "last_over_time" => last.v,
        "present_over_time" => 1.0,
        "quantile_over_time" => {
            let mut v: Vec<f64> = s.iter().map(|x| x.v).collect();
            quantile(arg(0), &mut v)
        }
        "double_exponential_smoothing" | "holt_winters" => holt_winters(s, arg(0), arg(1))?,
        _ => return None,
    })
}

/// `rate`, `increase` and `delta`: the change over the window, corrected for counter resets and
/// extrapolated towards the window's edges (no further than half a sample interval beyond the data,
/// and never below zero for counters).
fn extrapolated(w: &Window, counter: bool, rate: bool) -> Option<f64> {
    let s = w.s;
    if s.len() < 2 {
        return None;
    }
    let (first, last) = (s[0], s[s.len() - 1]);
    let mut result = last.v - first.v;
    if counter {
        // In sample order, as Prometheus adds them, so the sum rounds the same.
        for &k in w.resets {
            result += s[k - w.lo - 1].v;
        }
    }
    let mut to_start = seconds(first.t - w.start);
    let to_end = seconds(w.end - last.t);
    let sampled = seconds(last.t - first.t);
    let avg_step = sampled / (s.len() - 1) as f64;
    if counter && result > 0.0 && first.v >= 0.0 {
        let to_zero = sampled * (first.v / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    let threshold = avg_step * 1.1;
    let mut interval = sampled;
    interval += if to_start < threshold { to_start } else { avg_step / 2.0 };
    interval += if to_end < threshold { to_end } else { avg_step / 2.0 };
    let mut factor = interval / sampled;
    if rate {
        factor /= w.range_secs;
    }
    Some(result * factor)
}

/// Whether any sample is lower than the one before it: a count without branches, which the
/// compiler can vectorise, before the rarer work of listing where.
fn has_reset(s: &[Sample]) -> bool {
    s.windows(2).map(|w| (w[1].v < w[0].v) as usize).sum::<usize>() > 0
}

/// Milliseconds as seconds, `ms as f64 / 1000.0` to the bit. Scrapes land on whole seconds, so the
/// quotient is usually an integer: then an integer division (a multiplication, for a constant
/// divisor) gives it exactly, sparing the floating-point divider that each rate window otherwise
/// waits on three times.
#[inline(always)]
fn seconds(ms: i64) -> f64 {
    if ms % 1000 == 0 && ms.unsigned_abs() < 1 << 53 { (ms / 1000) as f64 } else { ms as f64 / 1000.0 }
}

/// `irate` and `idelta`: from the last two samples.
fn instant_value(s: &[Sample], rate: bool) -> Option<f64> {
    if s.len() < 2 {
        return None;
    }
    let (prev, last) = (s[s.len() - 2], s[s.len() - 1]);
    let mut v = if rate && last.v < prev.v { last.v } else { last.v - prev.v };
    let dt = last.t - prev.t;
    if dt == 0 {
        return None;
    }
    if rate {
        v /= dt as f64 / 1000.0;
    }
    Some(v)
}

/// Kahan-Babuška summation step, as Prometheus' `kahanSumInc`.
pub fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    let c = if sum.abs() >= inc.abs() { c + ((sum - t) + inc) } else { c + ((inc - t) + sum) };
    (t, c)
}

/// [`kahan_inc`] as Prometheus 3 has it: an infinite sum leaves no compensation behind (which would
/// otherwise be NaN and spoil the mean's final `sum / n + c / n`).
#[inline(always)]
fn kahan_inc_to_inf(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    if t.is_infinite() { (t, 0.0) } else { kahan_inc(inc, sum, c) }
}

/// A running Kahan sum, the fast path of [`avg_over_time`].
#[derive(Clone, Copy, Default)]
struct Sum(f64, f64);

impl Sum {
    #[inline(always)]
    fn add(&mut self, v: f64) {
        (self.0, self.1) = kahan_inc_to_inf(v, self.0, self.1);
    }

    /// [`Sum::add`] without branches, for sums side by side: the same operations while the sum is
    /// finite (the only sums [`avg_over_time_windows`] keeps), picking the larger term by a select.
    #[inline(always)]
    fn add_finite(&mut self, v: f64) {
        let Sum(sum, c) = self;
        let t = *sum + v;
        let larger = sum.abs() >= v.abs();
        let (big, small) = (if larger { *sum } else { v }, if larger { v } else { *sum });
        *c += (big - t) + small;
        *sum = t;
    }
}

/// The mean as Prometheus 3 works it out: a Kahan-compensated sum divided by the count, and only
/// if that sum overflows, Prometheus 2's incremental mean from there on. The sum needs no division
/// per sample, where the incremental mean needs two in one dependent chain (a day of 10-second
/// samples at a 5-minute step spent most of its time dividing). The two agree to rounding;
/// `tests/it/promql_diff.rs` holds them to Prometheus 2.42's answers within 1e-9.
fn avg_over_time(s: &[Sample]) -> f64 {
    let mut sum = Sum::default();
    for (i, x) in s.iter().enumerate() {
        let before = sum;
        sum.add(x.v);
        if i > 0 && sum.0.is_infinite() {
            let n = i as f64;
            return incremental_mean(before.0 / n, before.1 / n, i, &s[i..]);
        }
    }
    let n = s.len() as f64;
    sum.0 / n + sum.1 / n
}

/// Prometheus' incremental mean, Kahan-compensated, continued from the mean of the first `seen`
/// samples over `rest`.
fn incremental_mean(mut mean: f64, mut c: f64, seen: usize, rest: &[Sample]) -> f64 {
    for (k, x) in rest.iter().enumerate() {
        let count = (seen + k + 1) as f64;
        if mean.is_infinite() && ((x.v.is_infinite() && (mean > 0.0) == (x.v > 0.0)) || x.v.is_finite()) {
            // An infinite mean stays as it is, unless NaN or the opposite infinity comes along.
            continue;
        }
        let corrected = mean + c;
        (mean, c) = kahan_inc_to_inf(x.v / count - corrected / count, mean, c);
    }
    mean + c
}

/// Windows whose sums are worked out side by side.
const MEAN_LANES: usize = 4;

/// `avg_over_time` at every step of one series. Each window's sum is one dependent chain of
/// additions, so one window at a time waits on each addition's latency; four windows advanced in
/// lockstep keep the adder busy instead. Each window still sees exactly its own operations in its own
/// order, so the answers are those of [`avg_over_time`] to the bit; a window whose sum is not finite
/// is worked out again by it, overflow and all.
fn avg_over_time_windows(samples: &[Sample], span: &Span, vals: &mut [Option<f64>], timed_out: impl Fn() -> bool) {
    // At most one window a step: sized once, not grown by doubling for every series.
    let mut wins: Vec<(usize, usize, usize)> = Vec::with_capacity(span.ends.len());
    span.each_at(samples, |i, lo, s| wins.push((i, lo, lo + s.len())));
    let mut groups = wins.chunks_exact(MEAN_LANES);
    for (n, group) in groups.by_ref().enumerate() {
        if n % 64 == 0 && timed_out() {
            return;
        }
        let lanes: [&[Sample]; MEAN_LANES] = std::array::from_fn(|k| &samples[group[k].1..group[k].2]);
        let common = lanes.iter().map(|l| l.len()).min().unwrap_or(0);
        let mut sums = [Sum::default(); MEAN_LANES];
        for j in 0..common {
            for (sum, lane) in sums.iter_mut().zip(&lanes) {
                sum.add_finite(lane[j].v);
            }
        }
        for (k, sum) in sums.iter_mut().enumerate() {
            for x in &lanes[k][common..] {
                sum.add_finite(x.v);
            }
            let n = lanes[k].len() as f64;
            vals[group[k].0] = Some(if sum.0.is_finite() { sum.0 / n + sum.1 / n } else { avg_over_time(lanes[k]) });
        }
    }
    for &(i, lo, hi) in groups.remainder() {
        vals[i] = Some(avg_over_time(&samples[lo..hi]));
    }
}

fn variance(s: &[Sample]) -> f64 {
    let (mut count, mut mean, mut c_mean, mut aux, mut c_aux) = (0.0f64, 0.0, 0.0, 0.0, 0.0);
    for x in s {
        count += 1.0;
        let delta = x.v - (mean + c_mean);
        (mean, c_mean) = kahan_inc(delta / count, mean, c_mean);
        (aux, c_aux) = kahan_inc(delta * (x.v - (mean + c_mean)), aux, c_aux);
    }
    (aux + c_aux) / count
}

/// Least-squares slope and intercept, with x in seconds from `intercept_t`.
fn linear_regression(s: &[Sample], intercept_t: i64) -> (f64, f64) {
    let (mut n, mut sx, mut cx, mut sy, mut cy, mut sxy, mut cxy, mut sx2, mut cx2) =
        (0.0f64, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let init_y = s[0].v;
    let mut const_y = true;
    for (i, x) in s.iter().enumerate() {
        if const_y && i > 0 && x.v != init_y {
            const_y = false;
        }
        n += 1.0;
        let t = (x.t - intercept_t) as f64 / 1e3;
        (sx, cx) = kahan_inc(t, sx, cx);
        (sy, cy) = kahan_inc(x.v, sy, cy);
        (sxy, cxy) = kahan_inc(t * x.v, sxy, cxy);
        (sx2, cx2) = kahan_inc(t * t, sx2, cx2);
    }
    if const_y {
        if init_y.is_infinite() {
            return (f64::NAN, f64::NAN);
        }
        return (0.0, init_y);
    }
    let (sx, sy, sxy, sx2) = (sx + cx, sy + cy, sxy + cxy, sx2 + cx2);
    let cov = sxy - sx * sy / n;
    let var = sx2 - sx * sx / n;
    let slope = cov / var;
    (slope, sy / n - slope * sx / n)
}

fn holt_winters(s: &[Sample], sf: f64, tf: f64) -> Option<f64> {
    if s.len() < 2 {
        return None;
    }
    let (mut s0, mut s1, mut b) = (0.0, s[0].v, s[1].v - s[0].v);
    for (i, x) in s.iter().enumerate().skip(1) {
        let xv = sf * x.v;
        b = if i == 1 { b } else { tf * (s1 - s0) + (1.0 - tf) * b };
        let y = (1.0 - sf) * (s1 + b);
        s0 = s1;
        s1 = xv + y;
    }
    Some(s1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_side_by_side_equal_one_window_at_a_time_to_the_bit() {
        // Overlapping and gapped windows of uneven lengths, with infinities and NaN among the values.
        let mut samples: Vec<Sample> = (0..2000)
            .filter(|i| i % 37 != 0)
            .map(|i| Sample::new(i * 10_000, ((i as f64) * 0.731).sin() * 1e3 + (i % 7) as f64 / 3.0))
            .collect();
        for (k, v) in [(100, f64::INFINITY), (101, f64::INFINITY), (400, f64::NEG_INFINITY), (900, f64::NAN)] {
            samples[k].v = v;
        }
        for (range, step) in [(300_000, 300_000), (300_000, 60_000), (95_000, 15_000), (3_000_000, 250_000)] {
            let span = Span { range, ends: (0..).map(|i| i * step).take_while(|&t| t < 21_000_000).collect() };
            let mut side_by_side = vec![None; span.ends.len()];
            avg_over_time_windows(&samples, &span, &mut side_by_side, || false);
            let mut one_by_one = vec![None; span.ends.len()];
            span.each_at(&samples, |i, _, s| one_by_one[i] = Some(avg_over_time(s)));
            assert!(one_by_one.iter().filter(|v| v.is_some()).count() > 20, "range {range}: too few windows");
            let bits = |v: &[Option<f64>]| v.iter().map(|x| x.map(f64::to_bits)).collect::<Vec<_>>();
            assert_eq!(bits(&side_by_side), bits(&one_by_one), "range {range}, step {step}");
        }
    }

    #[test]
    fn seconds_are_the_division_to_the_bit() {
        for ms in
            (-3_000_000..3_000_000i64).step_by(997).chain([0, 1000, -1000, (1 << 53) - 1, 1 << 53, i64::MAX, i64::MIN])
        {
            assert_eq!(seconds(ms).to_bits(), (ms as f64 / 1000.0).to_bits(), "{ms}");
            let whole = ms / 1000 * 1000;
            assert_eq!(seconds(whole).to_bits(), (whole as f64 / 1000.0).to_bits(), "{whole}");
        }
    }

    #[test]
    fn resets_are_found_when_there_are_any() {
        let s = |v: &[f64]| v.iter().enumerate().map(|(i, &v)| Sample::new(i as i64, v)).collect::<Vec<_>>();
        assert!(!has_reset(&s(&[])) && !has_reset(&s(&[1.0])) && !has_reset(&s(&[1.0, 1.0, 2.0, f64::NAN, 3.0])));
        assert!(has_reset(&s(&[1.0, 2.0, 0.5, 3.0])) && has_reset(&s(&[2.0, 1.0])));
    }

    /// Prometheus 2.42's `avg_over_time`, which the differential corpus compares against.
    fn incremental_2_42(s: &[f64]) -> f64 {
        let (mut mean, mut c) = (0.0f64, 0.0f64);
        for (i, &v) in s.iter().enumerate() {
            let count = (i + 1) as f64;
            if mean.is_infinite() && ((v.is_infinite() && (mean > 0.0) == (v > 0.0)) || v.is_finite()) {
                continue;
            }
            (mean, c) = kahan_inc(v / count - mean / count, mean, c);
        }
        if mean.is_infinite() { mean } else { mean + c }
    }

    fn mean_of(values: &[f64]) -> f64 {
        let s: Vec<Sample> = values.iter().enumerate().map(|(i, &v)| Sample::new(i as i64, v)).collect();
        avg_over_time(&s)
    }

    #[test]
    fn the_summed_mean_agrees_with_prometheus_2_incremental_one() {
        // A fixed pseudo-random walk (xorshift), so the test needs no generator crate.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rng = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        for n in [1, 2, 3, 10, 30, 360, 5000] {
            for scale in [1e-3, 1.0, 1e6, 1e15] {
                let v: Vec<f64> = (0..n).map(|_| (rng() - 0.3) * scale).collect();
                let (a, b) = (mean_of(&v), incremental_2_42(&v));
                assert!((a - b).abs() <= 1e-12 * b.abs().max(1e-300), "n {n}, scale {scale}: {a} against {b}");
            }
        }
        let inf = f64::INFINITY;
        for v in [
            vec![inf],
            vec![inf, 1.0],
            vec![1.0, inf, 2.0],
            vec![1.0, inf, -inf],
            vec![-inf, -inf],
            vec![f64::NAN, 1.0],
            vec![1.0, f64::NAN],
            vec![f64::MAX, f64::MAX, f64::MAX],
            vec![f64::MAX, f64::MAX, -f64::MAX],
        ] {
            let (a, b) = (mean_of(&v), incremental_2_42(&v));
            assert!(a == b || (a.is_nan() && b.is_nan()), "{v:?}: {a} against {b}");
        }
    }
}
