//! The time of one forecast round: `SERIES` per-GPU demand series in the embedded store at 1-minute
//! steps, one `[[analyzer.forecast]]` target over all of them (15-minute horizon), fitted on `HOURS` of
//! history in the first round (timed as the fit round), then `ROUNDS` steady rounds (one new point per
//! series written, one tick: read, update the models, forecast, write 5m/10m/15m forecasts), each timed.
//! Run on one core: `taskset -c 0 target/release/examples/forecast_round [SERIES] [HOURS] [ROUNDS] [MODELS]`,
//! MODELS a comma-separated candidate list (the target's `models`; default every registered model).

use argus_analyzer::runtime::{Alert, AlertOut, Analyzer, Config, Metrics};
use argus_model::{Labels, Sample};
use argus_store_api::backend::BoxFuture;
use argus_store_api::remote_write::WriteSeries;
mod support;

use std::sync::Arc;
use std::time::Instant;

struct Discard;

impl AlertOut for Discard {
    fn send(&self, _alerts: Vec<Alert>) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
}

const STEP: i64 = 60_000;

fn batch(series: usize, from: i64, to: i64) -> Vec<WriteSeries> {
    (0..series)
        .map(|i| {
            let labels = Labels::from_pairs([
                ("__name__", "gpu_demand".to_string()),
                ("host", format!("node-{}", i / 8)),
                ("gpu", (i % 8).to_string()),
            ]);
            let samples = (from / STEP..=to / STEP)
                .map(|k| {
                    let t = k * STEP;
                    let day = (t as f64 / 86_400_000.0 * std::f64::consts::TAU).sin();
                    let hour = (t as f64 / 3_600_000.0 * std::f64::consts::TAU + i as f64).sin();
                    let noise = ((k as usize * 7919 + i * 104_729) % 23) as f64 / 23.0;
                    Sample { t, v: 10.0 + 4.0 * day + hour + 0.5 * noise }
                })
                .collect();
            WriteSeries { labels, samples }
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let series: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let hours: i64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(24);
    let rounds: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(3);
    let models = args.get(4).map_or(String::new(), |m| {
        let names: Vec<String> = m.split(',').map(|n| format!("{n:?}")).collect();
        format!("models = [{}]\n", names.join(", "))
    });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let history = support::history(STEP, rounds as i64 + 2, hours * 3_600_000, 3_600_000, |from, to| {
            batch(series, from, to)
        })
        .await;
        let (backend, now) = (history.backend.clone(), history.now);
        let text = format!(
            "[[rule]]\nname = \"none\"\nquery = \"absent_metric\"\ndetectors = [\"ewma\"]\n\
             [[forecast]]\nname = \"demand\"\nquery = \"gpu_demand\"\nhistory = \"{hours}h\"\n{models}"
        );
        let cfg: Config = toml::from_str(&text).unwrap();
        let metrics = Metrics::default();
        let mut registry = prometheus_client::registry::Registry::default();
        metrics.register(&mut registry);
        let mut a = Analyzer::new(cfg.validate().unwrap(), backend.clone(), Arc::new(Discard), None, metrics);
        let t = Instant::now();
        a.tick(now + 1_000).await;
        let fit = t.elapsed().as_secs_f64();
        let mut times = Vec::new();
        for r in 1..=rounds as i64 {
            let at = now + r * STEP;
            backend.write(batch(series, at, at)).await.unwrap();
            let t = Instant::now();
            a.tick(at + 1_000).await;
            times.push(t.elapsed().as_secs_f64());
        }
        let board = a.forecast_board();
        let forecast = board.by_target.read().get("demand").map_or(0, Vec::len);
        let mut models = std::collections::BTreeMap::<String, usize>::new();
        for e in board.by_target.read().get("demand").into_iter().flatten() {
            *models.entry(e.model.clone()).or_default() += 1;
        }
        times.sort_by(f64::total_cmp);
        println!(
            "series {series}, history {hours} h: fit round {fit:.2} s; steady round median {:.3} s (of {rounds}: {times:.3?}); {forecast} series forecast; models {models:?}",
            times[times.len() / 2]
        );
    });
}
