//! `argus eval …` and `argus simulate`: the evaluation commands. Each parses its arguments here and runs
//! the analyzer's own code (the same detectors and forecasters as `argus serve`), printing a report and,
//! with `--json FILE`, writing the figures.

mod anomaly;
mod forecast;
mod nab;
mod pages;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum Cmd {
    /// The Numenta Anomaly Benchmark, scored with NAB's own method.
    Nab(nab::Args),
    /// Multivariate anomaly detection on a labelled train/test pair of CSVs (e.g. SMD).
    Anomaly(anomaly::Args),
    /// Forecast accuracy of every model (and the per-series choice) on a `timestamp,value` CSV
    Forecast(forecast::ForecastArgs),
    /// False pages and caught faults: long normal telemetry with injected faults through the default
    /// analyzer and alertd, in virtual time.
    Pages(pages::Args),
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Nab(args) => nab::run(args),
        Cmd::Anomaly(args) => anomaly::run(args),
        Cmd::Forecast(args) => forecast::run(args),
        Cmd::Pages(args) => pages::run(args),
    }
}
