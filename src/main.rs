//! The one Argus binary: wires the crates together. See ARCHITECTURE.md.

mod alertd;
mod analyze;
mod auth;
mod collect;
mod config;
mod demo;
mod eval;
mod malloc;
mod migrate;
mod openapi;
mod roles;
mod ruletest;
mod serve;
mod simulate;
mod status;
mod tls;
mod token;

use anyhow::Result;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "argus", version, about = "Monitoring and intelligent alerting for GPU clusters")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the server: the embedded store and every API on one listener.
    Serve(serve::Args),
    /// Run the node collector: GPU, host, disk and network metrics shipped to a store.
    Collect(collect::Args),
    /// Validate configuration files; exits 1 with file:line:column and the reason.
    CheckConfig {
        /// The files to validate; with --from-alertmanager, the Prometheus rule files to check with it.
        #[arg(required_unless_present = "from_alertmanager")]
        files: Vec<PathBuf>,
        /// Read this Alertmanager 0.25 file and the rule files as Alertmanager and Prometheus 2.42 do,
        /// and list where alertd refuses them or behaves differently, by file:line:column. Exits 1
        /// when something would be refused, 2 when a file cannot be read.
        #[arg(long, value_name = "ALERTMANAGER_YML")]
        from_alertmanager: Option<PathBuf>,
        /// With --from-alertmanager: the report as JSON.
        #[arg(long, requires = "from_alertmanager")]
        json: bool,
    },
    /// alertd, the notification pipeline: `replay` runs it in virtual time.
    Alertd {
        #[command(subcommand)]
        cmd: alertd::Cmd,
    },
    /// API tokens for `[auth]`: `new` prints a fresh one and its entry, `hash` the SHA-256 of one.
    Token {
        #[command(subcommand)]
        cmd: token::Cmd,
    },
    /// Evaluate the analyzer's detectors and forecasters on labelled data.
    Eval {
        #[command(subcommand)]
        cmd: eval::Cmd,
    },
    /// Replay a GPU pod trace under a node power policy (static, reactive, forecast).
    Simulate(simulate::Args),
    /// Unit tests: `rules` runs promtool-format rule tests (`promtool test rules` files, unchanged).
    Test {
        #[command(subcommand)]
        cmd: ruletest::Cmd,
    },
}

fn main() -> Result<()> {
    malloc::tune();
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Serve(args) => serve::run(args),
        Cmd::Collect(args) => collect::run(args),
        Cmd::Alertd { cmd } => alertd::run(cmd),
        Cmd::Eval { cmd } => eval::run(cmd),
        Cmd::Simulate(args) => simulate::run(args),
        Cmd::Token { cmd } => token::run(cmd),
        Cmd::Test { cmd } => ruletest::run(cmd),
        Cmd::CheckConfig { files, from_alertmanager: Some(am), json } => {
            std::process::exit(migrate::run(&am, &files, json))
        }
        Cmd::CheckConfig { files, .. } => {
            let mut bad = false;
            for f in &files {
                let alertd_yaml = f.extension().is_some_and(|e| e == "yml" || e == "yaml");
                let checked = if alertd_yaml { alertd::check_file(f) } else { config::Config::load(f).map(|_| ()) };
                match checked {
                    Ok(()) => println!("{}: ok", f.display()),
                    Err(e) => {
                        eprintln!("{e:#}");
                        bad = true;
                    }
                }
            }
            if bad {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}
