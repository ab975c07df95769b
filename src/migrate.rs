//! `argus check-config --from-alertmanager alertmanager.yml [rules.yml …]`: reads an Alertmanager
//! configuration as Alertmanager 0.25 reads it, and Prometheus 2.42 rule files, and lists every place
//! where alertd refuses them (`refused`) or loads them but behaves differently (`differs`), each at its
//! `file:line:column`, with the key, what differs and what to do. The checks implement the differences
//! docs/alertd.md, docs/alerting.md, docs/promql.md and docs/store.md document (each cites its
//! sentence); after them alertd's own loaders run on each file, so that anything else they refuse is
//! reported too and a file that passes here loads in alertd.

mod alertmanager;
mod promql;
mod rules;
mod templates;
mod yaml;

#[cfg(test)]
mod tests;

use serde::Serialize;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Exit status: nothing refused (differences are warnings).
pub const OK: i32 = 0;
/// Exit status: alertd would refuse something.
pub const REFUSED: i32 = 1;
/// Exit status: a file cannot be read, or is not YAML.
pub const UNREADABLE: i32 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// alertd (or Argus' rule loader or query engine) will not load or run it.
    Refused,
    /// Loads, but behaves differently from Alertmanager 0.25 / Prometheus 2.42.
    Differs,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Refused => "refused",
            Kind::Differs => "differs",
        })
    }
}

/// One place in one file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub file: String,
    pub line: usize,
    pub column: usize,
    pub kind: Kind,
    /// The field, as validation spells it: `receivers[1].slack_configs[0].fields`.
    pub key: String,
    pub what: String,
    pub todo: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}: {}: {}: {}", self.file, self.line, self.column, self.kind, self.key, self.what)?;
        if !self.todo.is_empty() {
            write!(f, " — {}", self.todo)?;
        }
        Ok(())
    }
}

/// The whole report: the findings in file order, then by position.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub files: usize,
    pub refused: usize,
    pub differs: usize,
    pub findings: Vec<Finding>,
}

impl Report {
    fn add(&mut self, mut found: Vec<Finding>) {
        sort(&mut found);
        self.files += 1;
        self.refused += found.iter().filter(|f| f.kind == Kind::Refused).count();
        self.differs += found.iter().filter(|f| f.kind == Kind::Differs).count();
        self.findings.extend(found);
    }

    /// The exit status the report stands for.
    pub fn status(&self) -> i32 {
        if self.refused > 0 { REFUSED } else { OK }
    }

    /// The report as text, one finding a line, then the summary.
    pub fn text(&self) -> String {
        let mut out: String = self.findings.iter().map(|f| format!("{f}\n")).collect();
        let verdict = if self.refused > 0 {
            "alertd would refuse these files as they are"
        } else {
            "alertd loads these files; the differences above are warnings"
        };
        out.push_str(&format!(
            "ok: {} files checked, {} refused, {} differ: {verdict}\n",
            self.files, self.refused, self.differs
        ));
        out
    }
}

/// Checks the Alertmanager file and the rule files; `Err` names a file that cannot be read or
/// parsed as YAML.
pub fn check(alertmanager: &Path, rule_files: &[PathBuf]) -> Result<Report, String> {
    let mut report = Report::default();
    let (src, name) = read(alertmanager)?;
    report.add(alertmanager::check(&src, &name)?);
    for path in rule_files {
        let (src, name) = read(path)?;
        report.add(rules::check(&src, &name)?);
    }
    Ok(report)
}

/// `argus check-config --from-alertmanager`: prints the report (JSON with `json`) and returns the
/// exit status.
pub fn run(alertmanager: &Path, rule_files: &[PathBuf], json: bool) -> i32 {
    match check(alertmanager, rule_files) {
        Err(e) => {
            eprintln!("{e}");
            UNREADABLE
        }
        Ok(report) => {
            let text = if json {
                match serde_json::to_string_pretty(&report) {
                    Ok(s) => s + "\n",
                    Err(e) => {
                        eprintln!("cannot encode the report as JSON: {e}");
                        return UNREADABLE;
                    }
                }
            } else {
                report.text()
            };
            // A reader that stops early (`| head`) is no failure of the check.
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            report.status()
        }
    }
}

/// One file's findings by position.
fn sort(found: &mut Vec<Finding>) {
    found.sort_by(|a, b| (a.line, a.column, &a.key).cmp(&(b.line, b.column, &b.key)));
    found.dedup();
}

fn read(path: &Path) -> Result<(String, String), String> {
    let name = path.display().to_string();
    std::fs::read_to_string(path).map(|s| (s, name.clone())).map_err(|e| format!("{name}: cannot read: {e}"))
}
