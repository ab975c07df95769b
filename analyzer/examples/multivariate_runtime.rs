//! What the runtime's multivariate detector costs, with the runtime's default parameters:
//!
//! 1. Models: `ENTITIES` entities × 8 metrics, each trained on 6 h at 10 s (2,160 rows) on one thread
//!    (as the runtime's background training does), then 360 rows each scored point by point, with and
//!    without the top-feature attribution an alert adds; the saved model's size.
//! 2. The loop: the same entities' metrics in the embedded store (1 h), one `[[analyzer.multivariate]]`
//!    rule trained on them, then timed over steady 10 s steps (new data written, one tick: 8 range
//!    queries, a row per entity scored, the scores written back).
//!
//! Run on one core: `taskset -c 0 target/release/examples/multivariate_runtime [ENTITIES] [TICKS]`.

use argus_analyzer::detect::multivariate::{MultivariateModel, ScoreState};
use argus_analyzer::runtime::multivariate::config::runtime_params;
use argus_analyzer::runtime::{Config, Metrics, Multivariate};
use argus_model::{Labels, Sample};
use argus_store_api::remote_write::WriteSeries;
mod support;

use std::time::Instant;

const STEP: i64 = 10_000;
const METRICS: usize = 8;

fn noise(seed: u64, i: i64) -> f64 {
    let mut z = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ seed.wrapping_mul(0xD1B5_4A32_D192_ED03);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64 - 0.5
}

/// Entity `e`'s metric `m` at step `i`: a shared load, each metric a different function of it, plus noise.
fn value(e: usize, m: usize, i: i64) -> f64 {
    let load = 0.5 + 0.3 * ((i as f64) / 60.0 + e as f64).sin() + 0.05 * noise(e as u64 * 64, i);
    (m as f64 + 1.0) * 10.0 * load + noise(e as u64 * 64 + m as u64 + 1, i)
}

fn rows(e: usize, from: i64, n: usize) -> Vec<f64> {
    (0..n as i64).flat_map(|i| (0..METRICS).map(move |m| value(e, m, from + i))).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn models(entities: usize) {
    let params = runtime_params();
    let inputs: Vec<String> = (0..METRICS).map(|m| format!("m{m}")).collect();
    let train_rows = 2160;
    let score_rows = 360;
    let started = Instant::now();
    let mut per_entity = Vec::with_capacity(entities);
    let mut trained = Vec::with_capacity(entities);
    for e in 0..entities {
        let t = Instant::now();
        let model = MultivariateModel::train(&params, inputs.clone(), &rows(e, 0, train_rows)).unwrap();
        per_entity.push(t.elapsed().as_secs_f64());
        trained.push(model);
    }
    let train_total = started.elapsed().as_secs_f64();
    let live: Vec<Vec<f64>> = (0..entities).map(|e| rows(e, train_rows as i64, score_rows)).collect();
    let mut score_ns = Vec::new();
    let mut attrib_ns = Vec::new();
    for round in 0..3 {
        let mut states: Vec<ScoreState> = trained.iter().map(ScoreState::new).collect();
        let t = Instant::now();
        let mut sink = 0.0;
        for (e, (m, s)) in trained.iter().zip(&mut states).enumerate() {
            for row in live[e].chunks_exact(METRICS) {
                sink += s.score(m, row).score;
            }
        }
        score_ns.push(t.elapsed().as_nanos() as f64 / (entities * score_rows) as f64);
        let t = Instant::now();
        for (m, s) in trained.iter().zip(&states) {
            for _ in 0..score_rows {
                sink += s.top_feature_indices(m, 3)[0].1;
            }
        }
        attrib_ns.push(t.elapsed().as_nanos() as f64 / (entities * score_rows) as f64);
        if round == 0 {
            eprintln!("(checksum {sink:.3})");
        }
    }
    let json: Vec<usize> = trained.iter().take(20).map(|m| serde_json::to_vec(m).unwrap().len()).collect();
    let json_mean = json.iter().sum::<usize>() as f64 / json.len() as f64;
    println!("models: {entities} entities x {METRICS} metrics, {train_rows} training rows each, one thread");
    println!("  training: {train_total:.1} s in all, median {:.1} ms per entity", median(per_entity.clone()) * 1000.0);
    println!(
        "  scoring: median of 3 rounds {:.1} µs per entity-row; attribution (top 3) {:.1} µs per row",
        median(score_ns) / 1000.0,
        median(attrib_ns) / 1000.0
    );
    println!("  saved model: {:.0} KiB of JSON per entity (mean of 20)", json_mean / 1024.0);
}

fn batch(entities: usize, from: i64, to: i64) -> Vec<WriteSeries> {
    let mut out = Vec::with_capacity(entities * METRICS);
    for e in 0..entities {
        for m in 0..METRICS {
            let labels = Labels::from_pairs([("__name__", format!("metric_{m}")), ("host", format!("node-{e}"))]);
            let samples = (from / STEP..=to / STEP).map(|i| Sample { t: i * STEP, v: value(e, m, i) }).collect();
            out.push(WriteSeries { labels, samples });
        }
    }
    out
}

fn runtime(entities: usize, ticks: usize) {
    let text = format!(
        "[[multivariate]]\nname = \"bench\"\nmetrics = [{}]\nentity = [\"host\"]\ntrain_window = \"1h\"\n",
        (0..METRICS).map(|m| format!("\"metric_{m}\"")).collect::<Vec<_>>().join(", ")
    );
    let cfg: Config = toml::from_str(&text).unwrap();
    let valid = cfg.validate().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async move {
        let history =
            support::history(STEP, ticks as i64 + 2, 3600 * 1000, 600_000, |from, to| batch(entities, from, to)).await;
        let (backend, now) = (history.backend.clone(), history.now);
        let mut mv = Multivariate::new(&valid, backend.clone(), None, Metrics::default());
        let (mut writes, mut alerts) = (Vec::new(), Vec::new());
        let t = Instant::now();
        mv.tick(now, &mut writes, &mut alerts).await;
        mv.settle().await;
        let train = t.elapsed().as_secs_f64();
        let t = Instant::now();
        mv.tick(now + STEP, &mut writes, &mut alerts).await;
        let warm = t.elapsed().as_secs_f64();
        let mut times = Vec::new();
        for k in 2..ticks as i64 + 2 {
            let at = now + k * STEP;
            backend.write(batch(entities, at, at)).await.unwrap();
            writes.clear();
            let t = Instant::now();
            mv.tick(at, &mut writes, &mut alerts).await;
            backend.write(std::mem::take(&mut writes)).await.unwrap();
            times.push(t.elapsed().as_secs_f64());
        }
        println!("loop: {entities} entities x {METRICS} metrics = {} series, embedded store", entities * METRICS);
        println!(
            "  training round (read 1 h + fit every entity): {train:.1} s; first tick (warm-up replay): {warm:.2} s"
        );
        println!(
            "  steady tick (query, score, write back): median {:.3} s, max {:.3} s over {ticks} ticks",
            median(times.clone()),
            times.iter().copied().fold(0.0, f64::max)
        );
    });
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let entities: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let ticks: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    models(entities);
    runtime(entities, ticks);
}
