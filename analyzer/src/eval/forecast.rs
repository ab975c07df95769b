//! `argus eval forecast`: every registered forecaster on one `timestamp,value` series, fitted on the first
//! 80 % and scored on the last 20 % with a rolling origin at every step, at one horizon or several (each
//! horizon its own models, fits and per-series choice, as if run alone).
//!
//! Bookkeeping: models are built and fitted on `values[..split]` only (anything they hold out for bands,
//! selection or ensemble weights comes out of that slice); from then on they only `observe` each point as
//! it arrives, and are never refitted, so nothing the score is computed on reaches a parameter.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::forecast::select::{EVAL_MODELS, MODELS, ModelConfig, Selected, Selection};
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
    models: &mut [&mut dyn Forecaster],
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

/// What `argus eval forecast` was asked for, at one horizon.
#[derive(Debug, Clone)]
pub struct Options {
    pub input: PathBuf,
    pub horizon_ms: i64,
    pub json: Option<PathBuf>,
    pub plot: Option<PathBuf>,
}

/// One horizon asked for: as the user wrote it (`1h`, the key of its figures in the JSON), and in ms.
#[derive(Debug, Clone, PartialEq)]
pub struct Horizon {
    pub label: String,
    pub ms: i64,
}

/// What `argus eval forecast` was asked for, at one horizon or several.
#[derive(Debug, Clone)]
pub struct HorizonsOptions {
    pub input: PathBuf,
    pub horizons: Vec<Horizon>,
    pub json: Option<PathBuf>,
    /// With several horizons, one PNG each, the horizon's label added to the file name (`plot-1h.png`).
    pub plot: Option<PathBuf>,
}

/// One horizon's figures and choice.
#[derive(Debug, Clone)]
pub struct HorizonReport {
    pub label: String,
    pub steps: usize,
    pub report: Report,
    pub selection: Selection,
}

/// Runs every model in [`MODELS`] and [`EVAL_MODELS`] and `selected` on `options.input` at one horizon;
/// returns the printed report.
pub fn run(options: &Options) -> Result<String, String> {
    let label = humantime::format_duration(std::time::Duration::from_millis(options.horizon_ms.max(0) as u64));
    run_horizons(&HorizonsOptions {
        input: options.input.clone(),
        horizons: vec![Horizon { label: label.to_string(), ms: options.horizon_ms }],
        json: options.json.clone(),
        plot: options.plot.clone(),
    })
}

/// Runs every model and `selected` on `options.input` at each horizon; returns the printed report.
pub fn run_horizons(options: &HorizonsOptions) -> Result<String, String> {
    let series = read_csv(&options.input)?;
    let mut horizons = Vec::with_capacity(options.horizons.len());
    for h in &options.horizons {
        if h.ms <= 0 || h.ms % series.step_ms != 0 {
            return Err(format!(
                "horizon {}: {} ms is not a whole number of the series' {} ms steps",
                h.label, h.ms, series.step_ms
            ));
        }
        if options.horizons.iter().filter(|o| o.label == h.label).count() > 1 {
            return Err(format!("horizon {} is asked for twice", h.label));
        }
        horizons.push((h.label.clone(), (h.ms / series.step_ms) as usize));
    }
    if horizons.is_empty() {
        return Err("no horizon to score".into());
    }
    let reports = evaluate_horizons(&series, &horizons, None)?;
    if let Some(path) = &options.json {
        std::fs::write(path, to_json(&reports) + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if let Some(path) = &options.plot {
        for r in &reports {
            let path = if reports.len() == 1 { path.clone() } else { labelled(path, &r.label) };
            super::forecast_plot::draw(&path, &r.report.trajectory)?;
        }
    }
    let blocks: Vec<String> = reports
        .iter()
        .map(|r| {
            let block = render(&options.input, r.steps, &r.report, &r.selection);
            if reports.len() == 1 { block } else { format!("## horizon {}\n{block}", r.label) }
        })
        .collect();
    Ok(blocks.join("\n"))
}

/// Scores every model (the named ones only, with `only`) and the per-series choice at each
/// `(label, steps)` horizon. Each horizon builds, fits and chooses afresh on the first 80 % only.
pub fn evaluate_horizons(
    series: &Series,
    horizons: &[(String, usize)],
    only: Option<&[String]>,
) -> Result<Vec<HorizonReport>, String> {
    let mut out = Vec::with_capacity(horizons.len());
    for (label, steps) in horizons {
        let config = ModelConfig { horizon: *steps, step_ms: series.step_ms };
        let keep = |name: &str| only.is_none_or(|names| names.iter().any(|n| n == name));
        let mut models: Vec<Box<dyn Forecaster>> =
            MODELS.iter().chain(EVAL_MODELS).filter(|(n, _)| keep(n)).map(|(_, build)| build(&config)).collect();
        let mut selected = match only {
            Some(names) => Selected::with_models(config, names.to_vec()),
            None => Selected::new(config),
        }
        .with_eval_models();
        let mut all: Vec<&mut dyn Forecaster> = models.iter_mut().map(|m| m.as_mut() as &mut dyn Forecaster).collect();
        all.push(&mut selected);
        let report = evaluate(series, *steps, &mut all, "selected").map_err(|e| format!("horizon {label}: {e}"))?;
        drop(all);
        out.push(HorizonReport {
            label: label.clone(),
            steps: *steps,
            report,
            selection: selected.selection().clone(),
        });
    }
    Ok(out)
}

/// `path` with `-label` before its extension.
fn labelled(path: &Path, label: &str) -> PathBuf {
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{label}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{label}"),
    };
    path.with_file_name(name)
}

fn json_value(report: &Report, selection: &Selection) -> serde_json::Value {
    let models: serde_json::Map<String, serde_json::Value> =
        report.models.iter().map(|(name, s)| (name.clone(), serde_json::to_value(s).unwrap_or_default())).collect();
    serde_json::json!({ "selected_model": selection.model, "models": models })
}

/// One horizon: `{selected_model, models: {NAME: scores}}`; several: that object per horizon under
/// `horizons.LABEL`.
fn to_json(reports: &[HorizonReport]) -> String {
    let doc = if let [one] = reports {
        json_value(&one.report, &one.selection)
    } else {
        let per: serde_json::Map<String, serde_json::Value> =
            reports.iter().map(|r| (r.label.clone(), json_value(&r.report, &r.selection))).collect();
        serde_json::json!({ "horizons": per })
    };
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

fn render(input: &Path, horizon: usize, report: &Report, selection: &Selection) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: fitted on {} points, scored {} origins x {horizon} steps; {} zero actuals left out of MAPE and the \
         +-8 % share; MASE scale (one-step naive MAE on the fitted part) {:.3}",
        input.display(),
        report.split,
        report.origins,
        report.zero_actuals,
        report.naive_scale
    );
    let _ = writeln!(
        out,
        "selected: {} (backtest MAE {:.3}; weights {})",
        selection.model,
        selection.backtest_mae,
        selection
            .weights
            .iter()
            .filter(|(_, w)| *w > 0.0)
            .map(|(n, w)| format!("{n} {w:.2}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        out,
        "{:16} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "model", "MAE", "rel_MAE", "MAPE", "sMAPE", "MASE", "±8%@H", "cov80", "pinball"
    );
    for (name, s) in &report.models {
        let _ = writeln!(
            out,
            "{name:16} {:8.3} {:8.3} {:7.2}% {:7.2}% {:8.3} {:7.1}% {:7.1}% {:8.3}",
            s.mae,
            s.rel_mae,
            100.0 * s.mape,
            100.0 * s.smape,
            s.mase,
            100.0 * s.within_8pct,
            100.0 * s.coverage_80,
            s.pinball
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forecast::Forecast;
    use crate::forecast::ForecastError;

    #[test]
    fn scores_match_hand_computed_values() {
        let mut acc = Accumulator::default();
        // actual, mean, lower, upper, last step of the horizon
        acc.add(100.0, 90.0, 85.0, 95.0, false); // err 10, ape 0.1, smape 20/190, not covered
        acc.add(50.0, 54.0, 40.0, 60.0, true); // err −4, ape 0.08 (within), smape 8/104, covered
        acc.add(0.0, 2.0, -1.0, 3.0, true); // zero actual: out of MAPE and ±8 %; smape 2, covered
        let s = acc.scores(2.0, 4.0);
        let mae = (10.0 + 4.0 + 2.0) / 3.0;
        assert!((s.mae - mae).abs() < 1e-12);
        assert!((s.mape - (0.1 + 0.08) / 2.0).abs() < 1e-12);
        assert!((s.smape - (20.0 / 190.0 + 8.0 / 104.0 + 2.0) / 3.0).abs() < 1e-12);
        assert!((s.mase - mae / 2.0).abs() < 1e-12);
        assert!((s.rel_mae - mae / 4.0).abs() < 1e-12);
        assert_eq!(s.within_8pct, 1.0);
        assert!((s.coverage_80 - 2.0 / 3.0).abs() < 1e-12);
        // pinball: (0.1·15 + 0.9·5)/2 (above both), (0.1·10 + 0.1·10)/2, (0.1·1 + 0.1·3)/2 (inside the band)
        let pin = ((1.5 + 4.5) / 2.0 + (1.0 + 1.0) / 2.0 + (0.1 + 0.3) / 2.0) / 3.0;
        assert!((s.pinball - pin).abs() < 1e-12);
        assert_eq!(acc.zero_actuals, 1);
        assert_eq!(pinball(10.0, 4.0, 0.9), 0.9 * 6.0);
        assert!((pinball(4.0, 10.0, 0.9) - 0.6).abs() < 1e-12);
        assert_eq!(naive_scale(&[1.0, 3.0, 2.0]), 1.5);
    }

    #[test]
    fn reads_timestamps_and_fills_gaps() {
        let dir = std::env::temp_dir().join(format!("argus-forecast-csv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.csv");
        std::fs::write(&path, "timestamp,value\n2020-05-01 00:00:00,1\n2020-05-01 00:01:00,2\n2020-05-01 00:03:00,4\n")
            .unwrap();
        let s = read_csv(&path).unwrap();
        assert_eq!((s.start_ms, s.step_ms), (1_588_291_200_000, 60_000));
        assert_eq!(s.values, vec![1.0, 2.0, 2.0, 4.0]);
        std::fs::write(&path, "timestamp,value\n2020-05-01 00:00:00,1\n2020-05-01 00:01:00,x\n").unwrap();
        let err = read_csv(&path).unwrap_err();
        assert!(err.ends_with(":3: bad value \"x\""), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Records what it is shown and checks, at every forecast, that it has seen exactly the points up to
    /// the origin.
    struct Spy {
        seen: Vec<f64>,
        fitted: usize,
        series: Vec<f64>,
    }

    impl Forecaster for Spy {
        fn name(&self) -> &str {
            "naive"
        }
        fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
            self.seen = history.values.to_vec();
            self.fitted = history.values.len();
            Ok(())
        }
        fn observe(&mut self, value: f64) {
            self.seen.push(value);
        }
        fn forecast(&self, horizon: usize) -> Result<Forecast, ForecastError> {
            assert_eq!(self.seen[..], self.series[..self.seen.len()], "saw points out of order");
            let last = *self.seen.last().unwrap();
            Ok(Forecast { mean: vec![last; horizon], lower: vec![last; horizon], upper: vec![last; horizon] })
        }
    }

    fn marked_series() -> (Series, Series) {
        let values: Vec<f64> = (0..24 * 40).map(|i| 100.0 + 10.0 * ((i % 24) as f64 / 4.0).sin()).collect();
        let clean = Series { start_ms: 0, step_ms: 3_600_000, values };
        let mut marked = clean.clone();
        let split = (marked.values.len() as f64 * FIT_SHARE) as usize;
        for v in &mut marked.values[split..] {
            *v = 1e9;
        }
        (clean, marked)
    }

    #[test]
    fn the_scored_part_never_reaches_a_fit() {
        let (clean, marked) = marked_series();
        let split = (marked.values.len() as f64 * FIT_SHARE) as usize;
        let mut spy = Spy { seen: Vec::new(), fitted: 0, series: marked.values.clone() };
        evaluate(&marked, 6, &mut [&mut spy], "naive").unwrap();
        assert_eq!(spy.fitted, split);
        // The last origin forecasts the last `horizon` points, which it has not seen.
        assert_eq!(spy.seen.len(), marked.values.len() - 6);

        // Every real model, fitted as `evaluate` fits it, forecasts the same from the marked series as from
        // the clean one: no state it learnt came from the scored part.
        let config = ModelConfig { horizon: 6, step_ms: clean.step_ms };
        let fit = |s: &Series, build: &dyn Fn() -> Box<dyn Forecaster>| {
            let mut m = build();
            m.fit(Regular { values: &s.values[..split], ..s.regular() }).unwrap();
            m.forecast(6).unwrap()
        };
        for (name, build) in MODELS.iter().chain(EVAL_MODELS) {
            let a = fit(&clean, &|| build(&config));
            let b = fit(&marked, &|| build(&config));
            assert_eq!(a, b, "{name}");
            assert!(b.upper.iter().all(|v| *v < 1e6), "{name} saw the marker");
        }
        let a = fit(&clean, &|| Box::new(Selected::new(config).with_eval_models()));
        let b = fit(&marked, &|| Box::new(Selected::new(config).with_eval_models()));
        assert_eq!(a, b);
        assert!(b.upper.iter().all(|v| *v < 1e6));
    }

    fn report_of(names: &[&str]) -> Report {
        let models = names.iter().map(|n| (n.to_string(), Scores { mape: 0.5, ..Scores::default() })).collect();
        Report { split: 0, origins: 0, zero_actuals: 0, naive_scale: 1.0, models, trajectory: Vec::new() }
    }

    fn horizon_report(label: &str, selected: &str) -> HorizonReport {
        HorizonReport {
            label: label.into(),
            steps: 1,
            report: report_of(&["naive", "gbdt", "selected"]),
            selection: Selection { model: selected.into(), ..Selection::default() },
        }
    }

    /// The object's keys, and those of every object in it, as `path: keys` lines.
    fn shape(value: &serde_json::Value, path: &str, out: &mut Vec<String>) {
        if let serde_json::Value::Object(map) = value {
            out.push(format!("{path}: {}", map.keys().cloned().collect::<Vec<_>>().join(" ")));
            for (k, v) in map {
                shape(v, &format!("{path}.{k}"), out);
            }
        }
    }

    fn json_shape(reports: &[HorizonReport]) -> String {
        let value: serde_json::Value = serde_json::from_str(&to_json(reports)).unwrap();
        let mut lines = Vec::new();
        shape(&value, "", &mut lines);
        lines.join("\n")
    }

    #[test]
    fn one_horizon_keeps_the_single_horizon_json() {
        expect_test::expect![[r#"
            : models selected_model
            .models: gbdt naive selected
            .models.gbdt: coverage_80 mape mase pinball rel_mae smape within_8pct
            .models.naive: coverage_80 mape mase pinball rel_mae smape within_8pct
            .models.selected: coverage_80 mape mase pinball rel_mae smape within_8pct"#]]
        .assert_eq(&json_shape(&[horizon_report("15m", "naive")]));
        let value: serde_json::Value = serde_json::from_str(&to_json(&[horizon_report("15m", "naive")])).unwrap();
        assert_eq!(value["selected_model"], "naive");
        assert_eq!(value["models"]["gbdt"]["mape"], 0.5);
    }

    #[test]
    fn several_horizons_nest_one_object_each_under_their_labels() {
        let reports = [horizon_report("15m", "naive"), horizon_report("1h", "gbdt"), horizon_report("6h", "ensemble")];
        expect_test::expect![[r#"
            : horizons
            .horizons: 15m 1h 6h
            .horizons.15m: models selected_model
            .horizons.15m.models: gbdt naive selected
            .horizons.15m.models.gbdt: coverage_80 mape mase pinball rel_mae smape within_8pct
            .horizons.15m.models.naive: coverage_80 mape mase pinball rel_mae smape within_8pct
            .horizons.15m.models.selected: coverage_80 mape mase pinball rel_mae smape within_8pct
            .horizons.1h: models selected_model
            .horizons.1h.models: gbdt naive selected
            .horizons.1h.models.gbdt: coverage_80 mape mase pinball rel_mae smape within_8pct
            .horizons.1h.models.naive: coverage_80 mape mase pinball rel_mae smape within_8pct
            .horizons.1h.models.selected: coverage_80 mape mase pinball rel_mae smape within_8pct
            .horizons.6h: models selected_model
            .horizons.6h.models: gbdt naive selected
            .horizons.6h.models.gbdt: coverage_80 mape mase pinball rel_mae smape within_8pct
            .horizons.6h.models.naive: coverage_80 mape mase pinball rel_mae smape within_8pct
            .horizons.6h.models.selected: coverage_80 mape mase pinball rel_mae smape within_8pct"#]]
        .assert_eq(&json_shape(&reports));
        let value: serde_json::Value = serde_json::from_str(&to_json(&reports)).unwrap();
        assert_eq!(value["horizons"]["1h"]["selected_model"], "gbdt");
        assert_eq!(value["horizons"]["6h"]["selected_model"], "ensemble");
        assert_eq!(labelled(Path::new("out/plot.png"), "1h"), Path::new("out/plot-1h.png"));
    }

    /// Ten-minute steps, 40 days: a daily swing with weekly weight and noise from a fixed generator.
    fn seasonal_series() -> Series {
        let day = 144;
        let mut state = 7u64;
        let values = (0..40 * day)
            .map(|i| {
                state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let noise = ((state >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 8.0;
                let phase = 2.0 * std::f64::consts::PI * (i % day) as f64 / day as f64;
                let weekday = if (i / day) % 7 < 5 { 1.0 } else { 0.5 };
                200.0 + 60.0 * weekday * phase.sin() + noise
            })
            .collect();
        Series { start_ms: 1_588_550_400_000, step_ms: 600_000, values }
    }

    #[test]
    fn each_horizon_chooses_on_the_fitted_part_only() {
        let clean = seasonal_series();
        let split = (clean.values.len() as f64 * FIT_SHARE) as usize;
        let mut changed = clean.clone();
        for (i, v) in changed.values[split..].iter_mut().enumerate() {
            *v = 3.0 * *v + (i % 17) as f64 * 25.0;
        }
        let horizons = [("1h".to_string(), 6), ("6h".to_string(), 36)];
        let only: Vec<String> = ["naive", "seasonal_naive", "linear", "gbdt"].map(String::from).to_vec();
        let a = evaluate_horizons(&clean, &horizons, Some(&only)).unwrap();
        let b = evaluate_horizons(&changed, &horizons, Some(&only)).unwrap();
        for (a, b) in a.iter().zip(&b) {
            assert_eq!(a.selection, b.selection, "horizon {}", a.label);
            assert_eq!(a.selection.candidates.len(), 4, "horizon {}: every candidate fitted", a.label);
            // The scored part did change what the models were scored on.
            assert_ne!(a.report.models[0].1.mape, b.report.models[0].1.mape);
        }
        assert_eq!((a[0].steps, a[1].steps), (6, 36));
        // Each horizon chose for its own steps: the backtests differ.
        assert_ne!(a[0].selection.backtest_mae, a[1].selection.backtest_mae);
    }
}
