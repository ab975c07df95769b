//! How many series the analyzer's loop keeps up with: `SERIES` GPU-utilisation series (8 GPUs per
//! host) in the embedded store, one rule with the default detector set (`threshold` and `peer` by
//! host), warmed on 2 h of history, then timed over steady 10 s steps (new data written, one tick).
//! Run on one core: `taskset -c 0 target/release/examples/runtime_throughput [SERIES] [TICKS]`.

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

const STEP: i64 = 10_000;

fn batch(series: usize, from: i64, to: i64) -> Vec<WriteSeries> {
    (0..series)
        .map(|i| {
            let labels = Labels::from_pairs([
                ("__name__", "gpu_utilization_ratio".to_string()),
                ("host", format!("node-{}", i / 8)),
                ("gpu", (i % 8).to_string()),
            ]);
            let samples = (from / STEP..=to / STEP)
                .map(|k| {
                    let t = k * STEP;
                    let day = (t as f64 / 86_400_000.0 * std::f64::consts::TAU).sin();
                    let noise = ((k as usize * 7919 + i * 104_729) % 23) as f64 / 23.0;
                    Sample { t, v: 0.6 + 0.2 * day + 0.05 * noise }
                })
                .collect();
            WriteSeries { labels, samples }
        })
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let series: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let ticks: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let t = Instant::now();
        let history = support::history(STEP, ticks as i64 + 2, 2 * 3600 * 1000, 600_000, |from, to| {
            batch(series, from, to)
        })
        .await;
        let (backend, now) = (history.backend.clone(), history.now);
        eprintln!("history written: {series} series x 2 h in {:.1} s", t.elapsed().as_secs_f64());
        let cfg: Config = toml::from_str(
            "[[rule]]\nname = \"gpu_utilization\"\nquery = \"gpu_utilization_ratio\"\n\
             detectors = [\"threshold\", \"peer\"]\npeer_by = [\"host\"]\ndirection = \"below\"\n",
        )
        .unwrap();
        let mut a = Analyzer::new(cfg.validate().unwrap(), backend.clone(), Arc::new(Discard), None, Metrics::default());
        let t = Instant::now();
        a.tick(now).await;
        eprintln!("warm-up (2 h of history per series): {:.1} s", t.elapsed().as_secs_f64());
        let mut times = Vec::new();
        for k in 1..=ticks as i64 {
            let step = now + k * STEP;
            backend.write(batch(series, step, step)).await.unwrap();
            let t = Instant::now();
            a.tick(step).await;
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        println!(
            "series={series} ticks={ticks} median_tick_seconds={median:.3} max_tick_seconds={:.3} budget_seconds=10 share_of_budget={:.1}%",
            times[times.len() - 1],
            median / 10.0 * 100.0
        );
    });
}
