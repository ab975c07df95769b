//! `argus eval …` and `argus simulate`: the evaluation commands. Each parses its arguments here and runs
//! the analyzer's own code (the same detectors and forecasters as `argus serve`), printing a report and,
//! with `--json FILE`, writing the figures.

use anyhow::Result;
use clap::Subcommand;

mod anomaly;

#[derive(Subcommand)]
pub enum Cmd {
    /// Multivariate anomaly detection on a labelled train/test pair of CSVs (e.g. SMD).
    Anomaly(anomaly::Args),
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Anomaly(args) => anomaly::run(args),
    }
}
