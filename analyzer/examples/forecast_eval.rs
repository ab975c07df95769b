//! Development loop for the forecasters: `cargo run --release -p argus-analyzer --example forecast_eval -- CSV...`
use argus_analyzer::eval::forecast::{evaluate, read_csv};
use argus_analyzer::forecast::select::{ModelConfig, Selected, build_all};

fn main() {
    let h = 15;
    for path in std::env::args().skip(1) {
        let series = read_csv(path.as_ref()).unwrap();
        let config = ModelConfig { horizon: h, step_ms: series.step_ms };
        let mut models = build_all(&config);
        models.push(Box::new(Selected::new(config)));
        let t = std::time::Instant::now();
        let r = evaluate(&series, h, &mut models, "selected").unwrap();
        println!("{path}: split {} origins {} zeros {} ({:?})", r.split, r.origins, r.zero_actuals, t.elapsed());
        for (name, s) in &r.models {
            println!(
                "  {name:16} mae {:.3} rel {:.3} mape {:.4} smape {:.4} mase {:.3} w8 {:.4} cov {:.3} pin {:.3}",
                s.mae, s.rel_mae, s.mape, s.smape, s.mase, s.within_8pct, s.coverage_80, s.pinball
            );
        }
    }
}
