//! `argus alertd …`: alertd's subcommands.

use anyhow::{Context, Result};
use clap::Subcommand;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum Cmd {
    /// Replays an alert stream through the notification pipeline in virtual time (no sleeping).
    /// Input lines: {"at": RFC3339, "alerts": [Alertmanager v2 alerts]}; output lines:
    /// {"at", "receiver", "payload"} with the webhook v4 body.
    Replay {
        /// alertd configuration (Alertmanager YAML with `argus:` extensions)
        #[arg(long)]
        config: PathBuf,
        #[arg(long)]
        input: PathBuf,
        #[arg(long)]
        output: PathBuf,
    },
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Replay { config, input, output } => {
            let cfg = argus_alertd::config::load(&config)?;
            let inp = File::open(&input).with_context(|| format!("open {}", input.display()))?;
            let out = File::create(&output).with_context(|| format!("create {}", output.display()))?;
            let s = argus_alertd::replay::replay(cfg, BufReader::new(inp), BufWriter::new(out))
                .with_context(|| format!("replay {}", input.display()))?;
            eprintln!("replayed {} lines, {} alerts: {} notifications", s.lines, s.alerts, s.notifications);
            Ok(())
        }
    }
}
