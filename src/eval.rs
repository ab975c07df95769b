//! `argus eval …` and `argus simulate`: the evaluation commands. Each parses its arguments here and runs
//! the analyzer's own code (the same detectors and forecasters as `argus serve`), printing a report and,
//! with `--json FILE`, writing the figures.

mod nab;

use anyhow::Result;
use clap::Subcommand;

#[derive(Subcommand)]
pub enum Cmd {
    /// The Numenta Anomaly Benchmark, scored with NAB's own method.
    Nab(nab::Args),
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Nab(args) => nab::run(args),
    }
}
