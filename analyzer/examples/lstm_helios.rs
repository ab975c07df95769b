//! Fits the LSTM forecaster on the first 80 % of a `timestamp,value` CSV of one-minute points and
//! scores it with a rolling origin over the last 20 % (one fit, the state updated point by point),
//! next to naive (last value) in the same run. Then times a refresh of 1,000 forecasts.
//!
//! ```text
//! cargo run --release -p argus-analyzer --example lstm_helios -- [CSV] [--fit-only] [--save FILE]
//! ```
//!
//! `--fit-only` stops after the fit (for timing it under `taskset -c 0`); `--fit-all` fits on every point
//! (31 days of Helios: the "30 days of one-minute data" of the training budget) and implies `--fit-only`.

use std::time::Instant;

use argus_analyzer::forecast::lstm::{LstmConfig, LstmForecaster, Progress};
use argus_analyzer::forecast::{Forecaster, Regular};

const DEFAULT_INPUT: &str = "/work/shared/data/forecast/helios_earth_8vc_gpu_demand_1m.csv";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let fit_all = args.iter().any(|a| a == "--fit-all");
    let fit_only = fit_all || args.iter().any(|a| a == "--fit-only");
    let save = args.iter().position(|a| a == "--save").and_then(|i| args.get(i + 1)).cloned();
    let input = args
        .iter()
        .enumerate()
        .find(|(i, a)| !a.starts_with("--") && (*i == 0 || args[i - 1] != "--save"))
        .map_or(DEFAULT_INPUT.to_string(), |(_, a)| a.clone());
    let (start_ms, step_ms, values) = read_csv(&input)?;
    let config = LstmConfig::default();
    let horizon = config.horizon;
    let n = values.len();
    let fit_len = if fit_all { n } else { n * 4 / 5 };
    println!("{input}: {n} points, step {} s; fitting on the first {fit_len}", step_ms / 1000);

    // A one-line progress display on stderr; the CLI draws an indicatif bar from the same callback.
    let mut model = LstmForecaster::new(config).with_progress(Box::new(move |p| match *p {
        Progress::Batch { epoch, max_epochs, batch, batches } => {
            eprint!("\repoch {epoch}/{max_epochs}: batch {batch}/{batches}   ");
        }
        Progress::Epoch { epoch, train_loss, validation_loss, best_epoch, .. } => {
            eprintln!(
                "\repoch {epoch}: train loss {train_loss:.4}, validation loss {validation_loss:.4} (best epoch {best_epoch})"
            );
        }
    }));
    let t = Instant::now();
    model.fit(Regular { start_ms, step_ms, values: &values[..fit_len] })?;
    let fit_s = t.elapsed().as_secs_f64();
    println!("fit: {fit_s:.2} s, {:?}", model.report());
    if let Some(path) = save {
        std::fs::write(&path, model.to_bytes().ok_or("model not fitted")?)?;
        println!("saved {path}");
    }
    if fit_only {
        return Ok(());
    }

    // Naive's band: the 10th and 90th percentiles of the h-step change over the fitted part.
    let naive_band: Vec<(f64, f64)> = (1..=horizon)
        .map(|h| {
            let mut d: Vec<f64> = values[..fit_len].windows(h + 1).map(|w| w[h] - w[0]).collect();
            d.sort_by(f64::total_cmp);
            (d[d.len() / 10], d[d.len() * 9 / 10])
        })
        .collect();
    let mut lstm = Score::default();
    let mut naive = Score::default();
    let t = Instant::now();
    let mut forecasts = 0;
    for origin in fit_len..n - horizon + 1 {
        let f = model.forecast(horizon)?;
        forecasts += 1;
        let last = values[origin - 1];
        for h in 0..horizon {
            let actual = values[origin + h];
            let full = h + 1 == horizon;
            lstm.add(actual, f.mean[h], f.lower[h], f.upper[h], full);
            naive.add(actual, last, last + naive_band[h].0, last + naive_band[h].1, full);
        }
        model.observe(values[origin]);
    }
    let eval_s = t.elapsed().as_secs_f64();
    println!(
        "rolling origin: {forecasts} forecasts of {horizon} steps in {eval_s:.2} s (one fit, state updated per point)"
    );
    println!("model   MAE      MAPE     within ±8 % at +{horizon}   80 % coverage");
    for (name, s) in [("lstm", &lstm), ("naive", &naive)] {
        println!(
            "{name:<7} {:<8.3} {:<8.4} {:<22.4} {:.4}",
            s.abs / s.n as f64,
            s.pct / s.pct_n as f64,
            s.within as f64 / s.full_n as f64,
            s.covered as f64 / s.n as f64
        );
    }
    println!("lstm MAE / naive MAE: {:.4}", lstm.abs / naive.abs);

    // A refresh: 1,000 forecasts from 1,000 states, as the runtime's minute tick would make them.
    let t = Instant::now();
    let mut sink = 0.0;
    for _ in 0..1000 {
        sink += model.forecast(horizon)?.mean[horizon - 1];
    }
    println!("refresh of 1000 forecasts: {:.3} s (checksum {sink:.1})", t.elapsed().as_secs_f64());
    Ok(())
}

#[derive(Default)]
struct Score {
    abs: f64,
    n: usize,
    pct: f64,
    pct_n: usize,
    within: usize,
    full_n: usize,
    covered: usize,
}

impl Score {
    fn add(&mut self, actual: f64, mean: f64, lower: f64, upper: f64, full_horizon: bool) {
        self.abs += (mean - actual).abs();
        self.n += 1;
        self.covered += usize::from(lower <= actual && actual <= upper);
        // Zero actuals have no percentage error; they are left out of MAPE and the ±8 % share.
        if actual != 0.0 {
            let pct = ((mean - actual) / actual).abs();
            self.pct += pct;
            self.pct_n += 1;
            if full_horizon {
                self.within += usize::from(pct <= 0.08);
                self.full_n += 1;
            }
        }
    }
}

/// Reads `timestamp,value` with `YYYY-MM-DD HH:MM:SS` UTC timestamps at a regular step.
fn read_csv(path: &str) -> Result<(i64, i64, Vec<f64>), Box<dyn std::error::Error>> {
    let text = std::fs::read_to_string(path)?;
    let mut times = Vec::new();
    let mut values = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let (ts, v) = line.split_once(',').ok_or_else(|| format!("{path}:{}: expected timestamp,value", i + 1))?;
        times.push(parse_time(ts).ok_or_else(|| format!("{path}:{}: bad timestamp {ts:?}", i + 1))?);
        values.push(v.trim().parse::<f64>().map_err(|e| format!("{path}:{}: bad value {v:?}: {e}", i + 1))?);
    }
    let step = times.get(1).zip(times.first()).map(|(b, a)| b - a).ok_or("fewer than two points")?;
    if let Some(i) = times.windows(2).position(|w| w[1] - w[0] != step) {
        return Err(format!("{path}:{}: step changes from {step} ms", i + 3).into());
    }
    Ok((times[0], step, values))
}

fn parse_time(ts: &str) -> Option<i64> {
    let (date, time) = ts.trim().split_once(' ')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':').map(|p| p.parse::<i64>());
    let (hh, mm, ss) = (t.next()?.ok()?, t.next()?.ok()?, t.next()?.ok()?);
    // Days from civil (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000)
}
