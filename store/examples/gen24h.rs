//! Writes one series, 24 h at 10 s (8,640 samples in 12 flushed blocks), for the read benchmarks:
//! `gen24h DIR [SERIES]` (default 1 series, on hosts node-00, node-01, …) prints the first and last timestamps to pass to readbench and selectbench.
use argus_model::{Labels, Sample};
use argus_store::{Db, Options};
fn main() {
    let dir = std::env::args().nth(1).unwrap();
    let db = Db::open(Options::new(&dir)).unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let start = (now - 86_400_000) / 10_000 * 10_000;
    let n: usize = std::env::args().nth(2).map_or(1, |s| s.parse().expect("series count"));
    let labels: Vec<Labels> = (0..n)
        .map(|h| {
            Labels::from_pairs([
                ("__name__", "gpu_util".to_string()),
                ("host", format!("node-{h:02}")),
                ("gpu", "0".into()),
            ])
        })
        .collect();
    let mut x = 50.0f64;
    let mut seed = 1u64;
    let mut batch: Vec<Sample> = Vec::new();
    for i in 0..8640 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        x = (x + ((seed >> 33) % 7) as f64 - 3.0).clamp(0.0, 100.0);
        batch.push(Sample::new(start + i * 10_000, x));
        if batch.len() == 720 {
            let b = std::mem::take(&mut batch);
            let series: Vec<(Labels, Vec<Sample>)> = labels.iter().map(|l| (l.clone(), b.clone())).collect();
            db.write_series(&series).unwrap();
            db.flush().unwrap();
        }
    }
    db.flush().unwrap();
    println!("{start} {}", start + 8639 * 10_000);
    db.close();
}
