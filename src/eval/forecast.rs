//! `argus eval forecast`: forecast accuracy of every model on one `timestamp,value` CSV.

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use clap::Args;

#[derive(Args)]
pub struct ForecastArgs {
    /// `timestamp,value` CSV (one header line; `YYYY-MM-DD HH:MM:SS` UTC or Unix seconds)
    #[arg(long)]
    input: PathBuf,
    /// How far ahead to forecast, a whole number of the series' steps
    #[arg(long, default_value = "15m", value_parser = humantime::parse_duration)]
    horizon: std::time::Duration,
    /// Write the per-model figures as JSON to FILE
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw actual values against the selected model's band at the full horizon to a PNG
    #[arg(long, value_name = "PNG")]
    plot: Option<PathBuf>,
}

pub fn run(args: ForecastArgs) -> Result<()> {
    let options = argus_analyzer::eval::forecast::Options {
        input: args.input,
        horizon_ms: args.horizon.as_millis() as i64,
        json: args.json,
        plot: args.plot,
    };
    // The LSTM's training progress as a bar, when someone is watching.
    argus_analyzer::forecast::lstm::show_progress_bar(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let report = argus_analyzer::eval::forecast::run(&options).map_err(|e| anyhow!(e))?;
    print!("{report}");
    Ok(())
}
