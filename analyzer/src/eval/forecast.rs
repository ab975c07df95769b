//! `argus eval forecast`: every registered forecaster on one `timestamp,value` series, fitted on the first
//! 80 % and scored on the last 20 % with a rolling origin at every step.
//!
//! Bookkeeping: models are built and fitted on `values[..split]` only (anything they hold out for bands,
//! selection or ensemble weights comes out of that slice); from then on they only `observe` each point as
//! it arrives, and are never refitted, so nothing the score is computed on reaches a parameter.

use std::path::Path;

use serde::Serialize;

use crate::forecast::{Forecaster, Regular};

/// Share of the series that is fitted on; the rest is scored.
pub const FIT_SHARE: f64 = 0.8;

/// A series read from a `timestamp,value` CSV.
#[derive(Debug, Clone)]
pub struct Series {
    pub start_ms: i64,
    pub step_ms: i64,
    pub values: Vec<f64>,
}

impl Series {
    pub fn regular(&self) -> Regular<'_> {
        Regular { start_ms: self.start_ms, step_ms: self.step_ms, values: &self.values }
    }
}

/// Reads `timestamp,value` (a header line, then `YYYY-MM-DD HH:MM:SS` or Unix seconds, and a number). The
/// step is the first interval; a missing point (a gap of whole steps) repeats the previous value, anything
/// else irregular is an error naming the line.
pub fn read_csv(path: &Path) -> Result<Series, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut start_ms = None;
    let mut step_ms = 0i64;
    let mut last_ms = 0i64;
    let mut values: Vec<f64> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let line = line.trim();
        if line.is_empty() || (i == 0 && line.starts_with(|c: char| c.is_alphabetic())) {
            continue;
        }
        let at = |what: &str| format!("{}:{lineno}: {what}", path.display());
        let (ts, value) = line.split_once(',').ok_or_else(|| at("expected `timestamp,value`"))?;
        let ms = parse_timestamp(ts.trim()).ok_or_else(|| at(&format!("bad timestamp {ts:?}")))?;
        let value: f64 = value.trim().parse().map_err(|_| at(&format!("bad value {:?}", value.trim())))?;
        match start_ms {
            None => start_ms = Some(ms),
            Some(_) if values.len() == 1 => {
                step_ms = ms - last_ms;
                if step_ms <= 0 {
                    return Err(at("timestamps must increase"));
                }
            }
            Some(_) => {
                let gap = ms - last_ms;
                if gap <= 0 || gap % step_ms != 0 {
                    return Err(at(&format!("timestamp off the {step_ms} ms grid")));
                }
                let prev = values[values.len() - 1];
                values.extend(std::iter::repeat_n(prev, (gap / step_ms - 1) as usize));
            }
        }
        last_ms = ms;
        values.push(value);
    }
    let start_ms = start_ms.ok_or_else(|| format!("{}: no data", path.display()))?;
    if values.len() < 2 {
        return Err(format!("{}: needs at least two points", path.display()));
    }
    Ok(Series { start_ms, step_ms, values })
}

/// `YYYY-MM-DD HH:MM:SS` (UTC, `T` also accepted) or Unix seconds, to Unix milliseconds.
fn parse_timestamp(s: &str) -> Option<i64> {
    if let Ok(secs) = s.parse::<f64>() {
        return Some((secs * 1000.0) as i64);
    }
    let (date, time) = s.split_once([' ', 'T'])?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.trim_end_matches('Z').split(':').map(|p| p.parse::<f64>());
    let (hh, mm, ss) = (t.next()?.ok()?, t.next()?.ok()?, t.next().unwrap_or(Ok(0.0)).ok()?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400_000 + ((hh * 3600.0 + mm * 60.0 + ss) * 1000.0) as i64)
}

/// Accuracy of one model over the scored part.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Scores {
    pub mape: f64,
    pub smape: f64,
    pub mase: f64,
    pub rel_mae: f64,
    pub within_8pct: f64,
    pub coverage_80: f64,
    pub pinball: f64,
    #[serde(skip)]
    pub mae: f64,
}

/// Running sums for [`Scores`]; every (origin, step) pair is one point.
#[derive(Debug, Clone, Default)]
pub struct Accumulator {
    points: usize,
    abs: f64,
    ape: f64,
    nonzero: usize,
    smape: f64,
    covered: usize,
    pinball: f64,
    full_horizon: usize,
    full_horizon_within: usize,
    /// Points whose actual is 0, left out of MAPE and the ±8 % share.
    pub zero_actuals: usize,
}

impl Accumulator {
    /// Adds the forecast for one step; `full` marks the last step of the horizon.
    pub fn add(&mut self, actual: f64, mean: f64, lower: f64, upper: f64, full: bool) {
        let err = actual - mean;
        self.points += 1;
        self.abs += err.abs();
        let denom = actual.abs() + mean.abs();
        if denom > 0.0 {
            self.smape += 2.0 * err.abs() / denom;
        }
        if actual != 0.0 {
            self.ape += (err / actual).abs();
            self.nonzero += 1;
            if full {
                self.full_horizon += 1;
                if (err / actual).abs() <= 0.08 {
                    self.full_horizon_within += 1;
                }
            }
        } else {
            self.zero_actuals += 1;
        }
        if lower <= actual && actual <= upper {
            self.covered += 1;
        }
        self.pinball += (pinball(actual, lower, 0.1) + pinball(actual, upper, 0.9)) / 2.0;
    }

    /// The scores, with MASE scaled by `naive_scale` (the one-step naive MAE on the fitted part) and the
    /// relative MAE by `naive_mae`.
    pub fn scores(&self, naive_scale: f64, naive_mae: f64) -> Scores {
        let n = self.points.max(1) as f64;
        let mae = self.abs / n;
        Scores {
            mape: self.ape / self.nonzero.max(1) as f64,
            smape: self.smape / n,
            mase: mae / naive_scale,
            rel_mae: mae / naive_mae,
            within_8pct: self.full_horizon_within as f64 / self.full_horizon.max(1) as f64,
            coverage_80: self.covered as f64 / n,
            pinball: self.pinball / n,
            mae,
        }
    }

    pub fn mae(&self) -> f64 {
        self.abs / self.points.max(1) as f64
    }
}

/// Quantile (pinball) loss of `forecast` at quantile `q`.
pub fn pinball(actual: f64, forecast: f64, q: f64) -> f64 {
    let d = actual - forecast;
    if d >= 0.0 { q * d } else { (q - 1.0) * d }
}

/// One-step naive MAE: the mean absolute change between neighbours.
pub fn naive_scale(values: &[f64]) -> f64 {
    let n = values.len().saturating_sub(1).max(1) as f64;
    values.windows(2).map(|w| (w[1] - w[0]).abs()).sum::<f64>() / n
}

/// What [`evaluate`] returns: per model, in registry order.
#[derive(Debug, Clone)]
pub struct Report {
    pub split: usize,
    pub origins: usize,
    pub zero_actuals: usize,
    pub naive_scale: f64,
    pub models: Vec<(String, Scores)>,
    /// Actual and forecast band at the full horizon for each origin of the model named `plot_model`
    /// (timestamp ms of the target, actual, mean, lower, upper).
    pub trajectory: Vec<[f64; 5]>,
}

/// Fits each model on the first 80 % of `series` and scores it on the rest with a rolling origin at every
/// step over `horizon` steps. `plot_model` names the model whose full-horizon forecasts are kept.
pub fn evaluate(
    series: &Series,
    horizon: usize,
    models: &mut [Box<dyn Forecaster>],
    plot_model: &str,
) -> Result<Report, String> {
    let n = series.values.len();
    let split = (n as f64 * FIT_SHARE) as usize;
    if split + horizon >= n {
        return Err(format!("series of {n} points too short to score a {horizon}-step horizon"));
    }
    let fitted = Regular { values: &series.values[..split], ..series.regular() };
    let mut acc = vec![Accumulator::default(); models.len()];
    let mut trajectory = Vec::new();
    for model in models.iter_mut() {
        model.fit(fitted).map_err(|e| format!("{}: fit: {e}", model.name()))?;
    }
    // Origin `o`: the models have seen values[..=o] and forecast values[o + 1..=o + horizon].
    let last_origin = n - 1 - horizon;
    for o in split - 1..=last_origin {
        for (model, acc) in models.iter_mut().zip(&mut acc) {
            let f = model.forecast(horizon).map_err(|e| format!("{}: forecast: {e}", model.name()))?;
            for step in 0..horizon {
                let actual = series.values[o + 1 + step];
                acc.add(actual, f.mean[step], f.lower[step], f.upper[step], step + 1 == horizon);
            }
            if model.name() == plot_model {
                let t = series.start_ms + (o + horizon) as i64 * series.step_ms;
                let s = horizon - 1;
                trajectory.push([t as f64, series.values[o + horizon], f.mean[s], f.lower[s], f.upper[s]]);
            }
            if o < last_origin {
                model.observe(series.values[o + 1]);
            }
        }
    }
    let scale = naive_scale(&series.values[..split]);
    let naive_mae = models.iter().zip(&acc).find(|(m, _)| m.name() == "naive").map(|(_, a)| a.mae());
    let naive_mae = naive_mae.ok_or("the model registry has no `naive` model to compare with")?;
    Ok(Report {
        split,
        origins: last_origin + 2 - split,
        zero_actuals: acc.first().map_or(0, |a| a.zero_actuals),
        naive_scale: scale,
        models: models.iter().zip(&acc).map(|(m, a)| (m.name().to_string(), a.scores(scale, naive_mae))).collect(),
        trajectory,
    })
}
