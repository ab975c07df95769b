//! `argus collect`: the node agent. Reads the `[collector]` section of the config file, then either
//! prints one collection (`--once --format lp`) or runs until SIGTERM or Ctrl-C, shipping to the sinks.

use anyhow::{Context, Result, bail};
use argus_collector::{Agent, Config};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Configuration file (argus.toml); only its [collector] section is read. Without it the defaults apply.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Collect once, print the result on stdout and exit.
    #[arg(long)]
    once: bool,
    /// Output format of --once: lp (InfluxDB line protocol).
    #[arg(long, default_value = "lp", requires = "once")]
    format: String,
}

pub fn run(args: Args) -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let (cfg, file) = match &args.config {
        Some(p) => (Config::load(p)?, p.display().to_string()),
        None => (Config::default(), "(defaults)".to_string()),
    };
    let valid = cfg.validate(&file)?;
    if args.once {
        if args.format != "lp" {
            bail!("--format {:?}: only lp is supported", args.format);
        }
        let (batch, errors) = Agent::build(valid).collect_once();
        for (source, error) in errors {
            tracing::warn!(source, %error, "Source failed");
        }
        print!("{}", batch.to_line_protocol());
        return Ok(());
    }
    crate::malloc::tune_for_agent();
    // One worker: the agent's async work (timers, sinks, the push endpoints) is small, and a second
    // worker only adds wake-ups to steal it; collections run on blocking threads either way. Still
    // multi-threaded, so a blocking collection can wait on the runtime (dcgm-exporter's page).
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
    rt.block_on(async move {
        let agent = Agent::build(valid);
        agent.run(shutdown()).await.context("collector")
    })
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => {
                let _ = ctrl_c.await;
                return;
            }
        };
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
    tracing::info!("Stopping: flushing sinks");
}
