//! Times the phases of a range read on an existing data directory (stop the server first):
//! `cargo run --release -p argus-store --example readbench -- DIR QUERY START END STEP_MS`.

use argus_store::{Db, Options, query};
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let db = Db::open(Options::new(&a[1])).expect("open");
    let (q, start, end, step) =
        (&a[2], a[3].parse::<i64>().unwrap(), a[4].parse::<i64>().unwrap(), a[5].parse::<i64>().unwrap());
    let ms = argus_store::http::parse_selector_matchers(q).expect("selector");
    for _ in 0..5 {
        let t = Instant::now();
        let s = db.select(&ms, start - query::LOOKBACK_MS, end).unwrap();
        let t1 = t.elapsed();
        let v = query::range(&db, q, start, end, step, &query::QueryLimits::default()).unwrap();
        let t2 = t.elapsed();
        let mut body = String::new();
        let mut best = std::time::Duration::MAX;
        for _ in 0..20 {
            let tj = Instant::now();
            body = argus_store::http::query_result_json(&v);
            best = best.min(tj.elapsed());
        }
        let t3 = t2 + best;
        println!(
            "select {:?} ({} samples), select+eval {:?}, json (best of 20) {:?} ({} bytes)",
            t1,
            s.iter().map(|s| s.samples.len()).sum::<usize>(),
            t2 - t1,
            t3 - t2,
            body.len()
        );
    }
}
