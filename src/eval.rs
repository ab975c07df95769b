//! `argus eval …` and `argus simulate`: the evaluation commands. Each parses its arguments here and runs
//! the analyzer's own code (the same detectors and forecasters as `argus serve`), printing a report and,
//! with `--json FILE`, writing the figures.

use anyhow::Result;
use clap::Subcommand;

mod forecast;

#[derive(Subcommand)]
pub enum Cmd {
    /// Forecast accuracy of every model (and the per-series choice) on a `timestamp,value` CSV
    Forecast(forecast::ForecastArgs),
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Forecast(args) => forecast::run(args),
    }
}
