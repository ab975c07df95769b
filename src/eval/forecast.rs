//! `argus eval forecast`: forecast accuracy of every model on one `timestamp,value` CSV, at one horizon or
//! several.

use std::path::PathBuf;

use anyhow::{Result, anyhow, bail};
use clap::Args;

use argus_analyzer::eval::forecast::{Horizon, HorizonsOptions};

#[derive(Args)]
pub struct ForecastArgs {
    /// `timestamp,value` CSV (one header line; `YYYY-MM-DD HH:MM:SS` UTC or Unix seconds)
    #[arg(long)]
    input: PathBuf,
    /// How far ahead to forecast, a whole number of the series' steps; several, comma-separated
    /// (`15m,1h,6h`), score every model and choose per horizon
    #[arg(long, default_value = "15m", value_delimiter = ',')]
    horizon: Vec<String>,
    /// Write the per-model figures as JSON to FILE (with several horizons, one object per horizon under
    /// `horizons`)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Draw actual values against the selected model's band at the full horizon to a PNG (with several
    /// horizons, one PNG each, named PNG with `-HORIZON` before the extension)
    #[arg(long, value_name = "PNG")]
    plot: Option<PathBuf>,
}

pub fn run(args: ForecastArgs) -> Result<()> {
    let options =
        HorizonsOptions { input: args.input, horizons: horizons(&args.horizon)?, json: args.json, plot: args.plot };
    // The LSTM's training progress as a bar, when someone is watching.
    argus_analyzer::forecast::lstm::show_progress_bar(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let report = argus_analyzer::eval::forecast::run_horizons(&options).map_err(|e| anyhow!(e))?;
    print!("{report}");
    Ok(())
}

/// `--horizon` values as written (`15m`, `1h`), each a duration.
fn horizons(written: &[String]) -> Result<Vec<Horizon>> {
    let mut out = Vec::with_capacity(written.len());
    for w in written {
        let label = w.trim();
        let duration = humantime::parse_duration(label).map_err(|e| anyhow!("--horizon {label:?}: {e}"))?;
        if out.iter().any(|h: &Horizon| h.label == label) {
            bail!("--horizon {label:?} is listed twice");
        }
        out.push(Horizon { label: label.to_string(), ms: duration.as_millis() as i64 });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn horizons_keep_their_labels() {
        let parsed = horizons(&["15m".into(), " 1h".into(), "6h".into()]).unwrap();
        let got: Vec<(&str, i64)> = parsed.iter().map(|h| (h.label.as_str(), h.ms)).collect();
        assert_eq!(got, [("15m", 900_000), ("1h", 3_600_000), ("6h", 21_600_000)]);
        let err = horizons(&["1h".into(), "1h".into()]).unwrap_err().to_string();
        assert_eq!(err, "--horizon \"1h\" is listed twice");
        let err = horizons(&["soon".into()]).unwrap_err().to_string();
        assert!(err.starts_with("--horizon \"soon\": "), "{err}");
    }
}
