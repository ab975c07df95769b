//! `cargo run -p argus-alertd --example replay -- CONFIG INPUT OUTPUT`: the replay without the rest
//! of the binary, for quick experiments.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [config, input, output] = args.as_slice() else {
        return Err("usage: replay CONFIG INPUT OUTPUT".into());
    };
    let cfg = argus_alertd::config::load(std::path::Path::new(config))?;
    let inp = std::io::BufReader::new(std::fs::File::open(input)?);
    let out = std::io::BufWriter::new(std::fs::File::create(output)?);
    let s = argus_alertd::replay::replay(cfg, inp, out)?;
    eprintln!("replayed {} lines, {} alerts: {} notifications", s.lines, s.alerts, s.notifications);
    Ok(())
}
