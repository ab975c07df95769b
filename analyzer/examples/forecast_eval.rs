//! `argus eval forecast` without building the whole binary, for working on the forecasters:
//! `cargo run --release -p argus-analyzer --example forecast_eval -- CSV [PNG]` (15-minute horizon).

use argus_analyzer::eval::forecast::{Options, run};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(input) = args.next() else {
        eprintln!("usage: forecast_eval CSV [PNG]");
        std::process::exit(2);
    };
    let options =
        Options { input: input.into(), horizon_ms: 15 * 60_000, json: None, plot: args.next().map(Into::into) };
    let started = std::time::Instant::now();
    match run(&options) {
        Ok(report) => println!("{report}in {:.1} s", started.elapsed().as_secs_f64()),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
