//! Profiles the raw read of a range: `selectbench DIR QUERY START END N` runs `Db::select` N times.
use argus_store::{Db, Options};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let db = Db::open(Options::new(&a[1])).expect("open");
    let ms = argus_store::http::parse_selector_matchers(&a[2]).expect("selector");
    let (start, end, n) = (a[3].parse::<i64>().unwrap(), a[4].parse::<i64>().unwrap(), a[5].parse::<usize>().unwrap());
    let t = std::time::Instant::now();
    for _ in 0..n {
        std::hint::black_box(db.select(&ms, start, end).unwrap());
    }
    println!("{:?} per select", t.elapsed() / n as u32);
}
