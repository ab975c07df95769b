//! Counters of the demo: the integral of a per-minute trace rate, as [`super::at`] interpolates it.

/// A per-minute rate (per second) and its running integral over one trace period, so that a counter's
/// value at any time is exact, the same in the backfill and live, and never decreases.
pub struct Counter {
    rate: Vec<f64>,
    /// `prefix[i]`: the integral, in rate × minutes, from the period's start to minute `i`.
    prefix: Vec<f64>,
}

impl Counter {
    pub fn new(rate: Vec<f64>) -> Counter {
        let n = rate.len();
        let mut prefix = Vec::with_capacity(n + 1);
        prefix.push(0.0);
        for i in 0..n {
            let area = (rate[i] + rate[(i + 1) % n]) / 2.0;
            prefix.push(prefix[i] + area);
        }
        Counter { rate, prefix }
    }

    /// The rate at `t` (ms), per second.
    pub fn rate(&self, t: i64) -> f64 {
        super::at(&self.rate, t)
    }

    /// The integral of the rate from the Unix epoch to `t` (ms): rate × seconds.
    fn upto(&self, t: i64) -> f64 {
        let n = self.rate.len();
        if n == 0 {
            return 0.0;
        }
        let minutes = t as f64 / 60_000.0;
        let whole = minutes.floor();
        let frac = minutes - whole;
        let cycles = (whole / n as f64).floor();
        let i = (whole - cycles * n as f64) as usize;
        let (a, b) = (self.rate[i], self.rate[(i + 1) % n]);
        let partial = a * frac + (b - a) * frac * frac / 2.0;
        (cycles * self.prefix[n] + self.prefix[i] + partial) * 60.0
    }

    /// What a counter started at `origin` (ms) counts by `t`.
    pub fn since(&self, origin: i64, t: i64) -> f64 {
        (self.upto(t) - self.upto(origin)).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrates_the_interpolated_rate_across_wraps() {
        // 1/s for a minute, then 3/s: the first minute ramps from 1 to 3 (120 counted), the second from
        // 3 back to 1 (120), so a period counts 240 and any whole number of periods a multiple of it.
        let c = Counter::new(vec![1.0, 3.0]);
        assert!((c.since(0, 60_000) - 120.0).abs() < 1e-9);
        assert!((c.since(0, 120_000) - 240.0).abs() < 1e-9);
        assert!((c.since(60_000, 60_000 + 5 * 120_000) - 1200.0).abs() < 1e-6);
        // Half a minute into the ramp from 1 to 3: 30 s at a mean of 1.5.
        assert!((c.since(0, 30_000) - 45.0).abs() < 1e-9);
        // Far from the epoch the value stays exact enough and never goes back.
        let t = 1_764_000_000_000;
        assert!(c.since(t, t + 10_000) > 0.0 && c.since(t, t + 20_000) > c.since(t, t + 10_000));
    }
}
