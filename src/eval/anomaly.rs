//! `argus eval anomaly --train CSV --test CSV [--json FILE]`: the multivariate detector trained on one
//! file and streamed over the other (`argus_analyzer::eval::anomaly`).

use std::path::PathBuf;

use anyhow::{Context, Result};
use argus_analyzer::detect::iforest::IForestParams;
use argus_analyzer::detect::multivariate::MultivariateParams;
use argus_analyzer::eval::anomaly::{self, Detector};

#[derive(clap::Args)]
pub struct Args {
    /// Training CSV: `timestamp,<metric>,…` (unlabelled; a `label` column is ignored).
    #[arg(long)]
    train: PathBuf,
    /// Test CSV: the same columns plus a final `label` column (0/1).
    #[arg(long)]
    test: PathBuf,
    /// Write the figures to this file as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Evaluate a bare isolation forest on the raw metrics instead (100 trees, 256 samples; threshold 0.5).
    #[arg(long)]
    plain_iforest: bool,
    /// Seed of the isolation forest.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn run(args: Args) -> Result<()> {
    let detector = if args.plain_iforest {
        Detector::PlainForest(IForestParams { seed: args.seed, ..IForestParams::default() })
    } else {
        let mut params = MultivariateParams::default();
        params.iforest.seed = args.seed;
        Detector::Multivariate(params)
    };
    let report = anomaly::run(&detector, &args.train, &args.test)?;
    println!("AUC-PR (average precision)   {:.4}", report.auc_pr);
    println!("AUC-ROC                      {:.4}", report.auc_roc);
    println!("best F1 (no point adjust)    {:.4}", report.best_f1);
    println!("F1 at own threshold          {:.4}", report.f1_at_threshold);
    println!("point-adjusted F1            {:.4}", report.pa_f1);
    println!("fit                          {:.3} s", report.fit_seconds);
    println!("score                        {:.3} s", report.score_seconds);
    if let Some(path) = &args.json {
        std::fs::write(path, report.to_json() + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
