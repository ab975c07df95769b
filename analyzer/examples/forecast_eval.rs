//! Development loop for the forecasters: `cargo run --release -p argus-analyzer --example forecast_eval -- CSV...`
use argus_analyzer::eval::forecast::{evaluate, read_csv};
use argus_analyzer::forecast::Forecaster;
use argus_analyzer::forecast::baseline::{Naive, SeasonalNaive};
use argus_analyzer::forecast::calibrate::Calibrated;
use argus_analyzer::forecast::linear::Linear;
use argus_analyzer::forecast::{ets::Ets, mstl::Mstl};

fn main() {
    let h = 15;
    for path in std::env::args().skip(1) {
        let series = read_csv(path.as_ref()).unwrap();
        let mut models: Vec<Box<dyn Forecaster>> = vec![
            Box::new(Calibrated::new("naive", Naive::default(), h)),
            Box::new(Calibrated::new("seasonal_naive", SeasonalNaive::new(1440), h)),
            Box::new(Calibrated::new("linear", Linear::new(h, 1440), h)),
            Box::new(Calibrated::new("ets", Ets::new(2880), h)),
            Box::new(Calibrated::new("mstl", Mstl::new(vec![1440], 10080, 2880), h)),
        ];
        let t = std::time::Instant::now();
        let r = evaluate(&series, h, &mut models, "linear").unwrap();
        println!("{path}: split {} origins {} zeros {} ({:?})", r.split, r.origins, r.zero_actuals, t.elapsed());
        for (name, s) in &r.models {
            println!(
                "  {name:16} mae {:.3} rel {:.3} mape {:.4} smape {:.4} mase {:.3} w8 {:.4} cov {:.3} pin {:.3}",
                s.mae, s.rel_mae, s.mape, s.smape, s.mase, s.within_8pct, s.coverage_80, s.pinball
            );
        }
    }
}
