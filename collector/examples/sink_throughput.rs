//! Sink throughput on one core (bench/collector_sink.sh): samples per CPU-second of the one thread that
//! runs the sink (batching, encoding, compression, HTTP), against a receiver on another thread that
//! answers 204 and discards. The batches are built before the clock starts; they look like an 8-GPU
//! node's `gpu` collections (40 fields per GPU, the usual tags).
//!
//! cargo run --release -p argus-collector --example sink_throughput -- [remote_write|line_protocol] [SAMPLES]

use argus_collector::config::Config;
use argus_collector::sink::Sink;
use argus_collector::{Batch, Point, SelfMetrics};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let format = args.next().unwrap_or_else(|| "remote_write".into());
    let samples: usize = args.next().map_or(Ok(2_000_000), |s| s.parse())?;

    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("receiver runtime");
        rt.block_on(async move {
            let app = axum::Router::new()
                .fallback(axum::routing::post(|_: axum::body::Bytes| async { axum::http::StatusCode::NO_CONTENT }));
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
            addr_tx.send(l.local_addr().expect("addr")).expect("send addr");
            axum::serve(l, app).await.expect("receiver");
        });
    });
    let addr = addr_rx.recv()?;
    let path = if format == "line_protocol" { "api/v2/write" } else { "api/v1/write" };
    let toml = format!(
        "[[collector.sink]]\nurl = \"http://{addr}/{path}\"\nformat = \"{format}\"\nevents_url = \"http://{addr}/api/v2/write\"\n"
    );
    let valid = Config::parse(&toml, "-")?.validate("-")?;
    let dir = tempfile::tempdir()?;
    let metrics = SelfMetrics::default();
    let sink = Sink::build(valid.sinks[0].clone(), dir.path(), metrics.clone())?;

    let mut batches = Vec::new();
    let mut made = 0;
    let mut t = 1_764_460_800_000i64;
    while made < samples {
        let mut b = Batch::new();
        for g in 0..8 {
            let mut p = Point::new("gpu", t)
                .tag("cluster", "train-a")
                .tag("gpu", g.to_string())
                .tag("host", "node-0007")
                .tag("model", "NVIDIA H100 80GB HBM3")
                .tag("uuid", format!("GPU-6f1c3a52-8d2e-4b1f-9c3a-00000000000{g}"));
            for f in 0..40 {
                p = p.field(format!("metric_{f}_ratio"), (t % 1000) as f64 / 1000.0 + f as f64);
            }
            b.push(p);
        }
        made += b.samples();
        batches.push(b);
        t += 10_000;
    }

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let cpu0 = thread_cpu_seconds();
    let wall = Instant::now();
    rt.block_on(async move {
        let (tx, rx) = tokio::sync::mpsc::channel(64);
        let run = tokio::spawn(sink.run(rx));
        for b in batches {
            tx.send(b).await.expect("sink alive");
        }
        drop(tx);
        run.await.expect("sink task");
    });
    let cpu = thread_cpu_seconds() - cpu0;
    let wall = wall.elapsed().as_secs_f64();
    let text = metrics.encode();
    let sent = text
        .lines()
        .find(|l| l.starts_with("argus_collector_points_sent_total"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    println!(
        "format={format} samples={made} sent={sent} sink_thread_cpu_s={cpu:.3} wall_s={wall:.3} samples_per_cpu_s={:.0}",
        made as f64 / cpu
    );
    Ok(())
}

/// utime + stime of the calling thread.
fn thread_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    // Fields after the command name (which may hold spaces) start at state; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 =
        f.get(11).and_then(|s| s.parse().ok()).unwrap_or(0.0) + f.get(12).and_then(|s| s.parse().ok()).unwrap_or(0.0);
    ticks / rustix::param::clock_ticks_per_second() as f64
}
