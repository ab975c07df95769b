//! `argus test rules`: runs rule unit test files written for `promtool test rules` (Prometheus'
//! "Unit Testing for Rules" format) unchanged, with promtool's output and exit status. Each test
//! group loads its input series into an embedded store of its own (a temporary directory), evaluates
//! the rule files' groups with alertd's [`Evaluator`](argus_alertd::rules::group::Evaluator) at every
//! `evaluation_interval` from 0 to the group's last `eval_time`, compares the firing alerts at each
//! `alert_rule_test`'s time, then answers each `promql_expr_test` from the store.

mod file;
mod format;
mod run;
mod series;

use anyhow::Result;
use file::TestFile;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Run promtool-format rule unit tests; exits 1 if any fails.
    Rules {
        /// Unit test files (promtool's format: rule_files, evaluation_interval, tests).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

pub fn run(cmd: Cmd) -> Result<()> {
    match cmd {
        Cmd::Rules { files } => {
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            let failed = runtime.block_on(test_files(&files));
            if failed {
                std::process::exit(1);
            }
            Ok(())
        }
    }
}

/// Tests each file, printing as promtool does; whether any failed.
async fn test_files(files: &[PathBuf]) -> bool {
    let mut failed = false;
    for f in files {
        println!("Unit Testing:  {}", f.display());
        let errors = test_file(f).await;
        if errors.is_empty() {
            println!("  SUCCESS");
        } else {
            eprintln!("  FAILED:");
            for e in &errors {
                eprintln!("{e}");
                println!();
            }
            failed = true;
        }
        println!();
    }
    failed
}

/// One test file's failures, each already worded and indented as promtool prints it.
async fn test_file(path: &Path) -> Vec<String> {
    let src = match std::fs::read_to_string(path) {
        Ok(s) => s,
        Err(e) => return vec![format!("{}: {e}", path.display())],
    };
    let unit: TestFile = match serde_norway::from_str(&src) {
        Ok(u) => u,
        Err(e) => return vec![format!("{}: {e}", path.display())],
    };
    let base = path.parent().unwrap_or(Path::new(""));
    let mut rule_files = Vec::new();
    for pattern in &unit.rule_files {
        let pattern = if pattern.is_empty() { PathBuf::new() } else { base.join(pattern) };
        let found = file::glob(&pattern);
        if found.is_empty() {
            eprintln!("  WARNING: no file match pattern {}", pattern.display());
        }
        rule_files.extend(found);
    }
    let eval_interval = unit.evaluation_interval.filter(|d| d.0 > 0).unwrap_or(file::PromDuration(60_000));
    let mut order = HashMap::new();
    for (i, name) in unit.group_eval_order.iter().enumerate() {
        if order.insert(name.clone(), i).is_some() {
            return vec![format!("group name repeated in evaluation order: {name}")];
        }
    }
    let mut errors = Vec::new();
    for group in &unit.tests {
        errors.extend(run::test_group(group, eval_interval, &order, &rule_files).await);
    }
    errors
}
