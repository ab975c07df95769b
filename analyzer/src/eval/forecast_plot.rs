//! The `--plot` PNG of `argus eval forecast`: actual values (black) against the forecast at the full
//! horizon (blue) and its 80 % band (light blue), over the scored part. Drawn without text, so it needs no
//! fonts on the machine.

use std::path::Path;

use plotters::prelude::*;

/// Draws `trajectory` rows of (time ms, actual, mean, lower, upper) to a PNG at `path`.
pub fn draw(path: &Path, trajectory: &[[f64; 5]]) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if trajectory.is_empty() {
        return Err(err(&"nothing to plot"));
    }
    let (t0, t1) = (trajectory[0][0], trajectory[trajectory.len() - 1][0].max(trajectory[0][0] + 1.0));
    let finite = trajectory.iter().flat_map(|r| r[1..].iter().copied()).filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let pad = ((hi - lo) * 0.05).max(1e-9);
    let root = BitMapBackend::new(path, (1600, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart =
        ChartBuilder::on(&root).margin(10).build_cartesian_2d(t0..t1, (lo - pad)..(hi + pad)).map_err(|e| err(&e))?;
    let band: Vec<(f64, f64)> =
        trajectory.iter().map(|r| (r[0], r[4])).chain(trajectory.iter().rev().map(|r| (r[0], r[3]))).collect();
    chart.draw_series(std::iter::once(Polygon::new(band, RGBColor(170, 200, 240).filled()))).map_err(|e| err(&e))?;
    chart.draw_series(LineSeries::new(trajectory.iter().map(|r| (r[0], r[2])), &BLUE)).map_err(|e| err(&e))?;
    chart.draw_series(LineSeries::new(trajectory.iter().map(|r| (r[0], r[1])), &BLACK)).map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
