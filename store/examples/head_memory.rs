//! What the head costs in memory as samples arrive: `head_memory SERIES STEPS` writes SERIES series
//! (the collector's GPU labels) one sample every 10 s for STEPS steps, in batches of 5,000, and prints
//! the head's own accounting, the chunk file and the process' RSS every 30 steps.
use argus_model::{Labels, Sample};
use argus_store::{Db, Options};

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1));
    kib.and_then(|k| k.parse::<f64>().ok()).unwrap_or(0.0) / 1024.0
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let series: usize = a.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let steps: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(120);
    let dir = tempfile::tempdir().expect("temp dir");
    let mut opts = Options::new(dir.path());
    opts.memory_limit = 64 << 30;
    opts.wal_sync = argus_store::WalSync::Never;
    let db = Db::open(opts).expect("open");
    let labels: Vec<Labels> = (0..series)
        .map(|i| {
            let (host, gpu) = (i / 80, (i / 10) % 8);
            let host = format!("gpu-node-{host:05}");
            let gpu = gpu.to_string();
            let uuid = format!("GPU-{:08x}-{i:04x}", i / 10);
            Labels::from_pairs([
                ("__name__", ["gpu_utilization_ratio", "gpu_temperature_celsius", "gpu_power_watts"][i % 3]),
                ("cluster", "c1"),
                ("rack", &format!("r{:03}", i / 2560)),
                ("host", &host),
                ("gpu", &gpu),
                ("uuid", &uuid),
                ("model", "H200"),
                ("field", &(i % 10).to_string()),
            ])
        })
        .collect();
    // Recent enough to be inside retention, old enough that the last step is not in the future.
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis() as i64;
    let t0 = now - steps as i64 * 10_000;
    let mut x: u64 = 1;
    println!("step  samples(M)  head_bytes(MiB)  B/sample  chunk_file(MiB)  RSS(MiB)");
    for step in 0..steps {
        for part in labels.chunks(5_000) {
            let batch: Vec<(Labels, Vec<Sample>)> = part
                .iter()
                .enumerate()
                .map(|(j, l)| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    // A GPU metric: a level per series with noise in its last digits.
                    let v = (j % 97) as f64 + ((x >> 40) % 1000) as f64 / 100.0;
                    (l.clone(), vec![Sample::new(t0 + step as i64 * 10_000, v)])
                })
                .collect();
            db.write_series(&batch).expect("write");
        }
        if (step + 1) % 30 == 0 || step + 1 == steps {
            let m = db.metrics();
            let samples = (series * (step + 1)) as f64;
            let head = db.head_bytes() as f64;
            println!(
                "{:4}  {:10.1}  {:15.1}  {:8.2}  {:15.1}  {:8.0}",
                step + 1,
                samples / 1e6,
                head / 1048576.0,
                head / samples,
                m.head_chunk_file_bytes.get() as f64 / 1048576.0,
                rss_mib()
            );
        }
    }
}
