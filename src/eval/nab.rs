//! `argus eval nab --data DIR [--json FILE]`: the Numenta Anomaly Benchmark, scored with NAB's own method.

use std::path::PathBuf;

use anyhow::{Context, Result};

/// Evaluate the runtime's univariate detector on the NAB corpus: its default ensemble, and each of its two
/// families (the band and its stages, `baseline`; adaptive resonance, `art`) alone.
#[derive(clap::Args)]
pub struct Args {
    /// The NAB repository: data/, labels/combined_windows.json, config/profiles.json (and optionally
    /// results/windowedGaussian/, to check the scorer against NAB's published scores).
    #[arg(long)]
    data: PathBuf,
    /// Also write the figures as JSON (`standard`, `reward_low_FP`, `reward_low_FN`: the ensemble's half-split
    /// scores; `_whole` the whole corpus'; `detectors.baseline.*` and `detectors.art.*` each family's alone).
    #[arg(long)]
    json: Option<PathBuf>,
}

pub fn run(args: Args) -> Result<()> {
    let run =
        argus_analyzer::eval::nab::run(&args.data).with_context(|| format!("nab corpus {}", args.data.display()))?;
    print!("{}", run.text());
    if let Some(path) = &args.json {
        std::fs::write(path, run.json()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
