//! Runs `argus eval anomaly`'s evaluation without building the whole binary, printing the report as
//! JSON on one line: `anomaly_eval [--plain] [--seed N] [--params JSON] TRAIN.csv TEST.csv`.
//! `--plain` evaluates a bare isolation forest on the raw metrics (100 trees, ψ = 256), the detector
//! `bench/iforest_vs_sklearn.py` compares with scikit-learn's; `--params` overrides the multivariate
//! detector's parameters (JSON, the fields of `MultivariateParams`).

use std::path::PathBuf;

use argus_analyzer::detect::iforest::IForestParams;
use argus_analyzer::detect::multivariate::MultivariateParams;
use argus_analyzer::eval::anomaly::{self, Detector};

fn main() {
    let mut plain = false;
    let mut seed = 0;
    let mut params = MultivariateParams::default();
    let mut paths = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--plain" => plain = true,
            "--seed" => seed = args.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "--params" => {
                let json = args.next().unwrap_or_else(|| usage());
                params = serde_json::from_str(&json).unwrap_or_else(|e| {
                    eprintln!("--params: {e}");
                    std::process::exit(2)
                });
            }
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    let [train, test] = paths.as_slice() else { usage() };
    let detector = if plain {
        Detector::PlainForest(IForestParams { seed, ..IForestParams::default() })
    } else {
        params.iforest.seed = seed;
        Detector::Multivariate(params)
    };
    match anomaly::run(&detector, train, test) {
        Ok(report) => println!("{}", serde_json::to_string(&report).unwrap_or_default()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1)
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: anomaly_eval [--plain] [--seed N] [--params JSON] TRAIN.csv TEST.csv");
    std::process::exit(2)
}
