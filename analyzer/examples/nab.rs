//! Iterating on the NAB figures without building the whole binary:
//! `cargo run --release -p argus-analyzer --example nab -- DIR`.

use std::path::PathBuf;

use argus_analyzer::eval::nab::{corpus::Corpus, reference};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(std::env::args().nth(1).ok_or("usage: nab DIR")?);
    let corpus = Corpus::load(&root)?;
    for c in reference::check(&root, &corpus, "windowedGaussian")? {
        println!("{c:?}");
    }
    Ok(())
}
