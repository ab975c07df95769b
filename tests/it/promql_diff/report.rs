//! The outcome of each corpus query, the report (per area, then every difference in corpus order), and
//! the corpus' own checks against Prometheus alone.

use super::answer::{Answer, compare};
use super::corpus::{Case, When};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// One query run against both servers.
pub struct Outcome {
    pub case: Case,
    /// The query as sent, placeholders resolved.
    pub sent: String,
    pub prom: Answer,
    pub argus: Answer,
    /// Empty when the answers agree.
    pub diff: Vec<String>,
}

impl Outcome {
    pub fn new(case: Case, sent: String, prom: Answer, argus: Answer, base: i64) -> Outcome {
        let diff = compare(&prom, &argus, case.flags.ordered && matches!(case.when, When::Instant { .. }), base);
        Outcome { case, sent, prom, argus, diff }
    }

    pub fn equal(&self) -> bool {
        self.diff.is_empty()
    }

    /// Differs, and is not an allow-listed deviation.
    pub fn fails(&self) -> bool {
        !self.equal() && self.case.flags.deviation.is_none()
    }
}

/// Counts for the summary line.
pub struct Totals {
    pub queries: usize,
    pub equal: usize,
    pub differ: usize,
    pub allowed: usize,
    pub empty_on_prometheus: usize,
}

pub fn totals(outcomes: &[Outcome]) -> Totals {
    Totals {
        queries: outcomes.len(),
        equal: outcomes.iter().filter(|o| o.equal()).count(),
        differ: outcomes.iter().filter(|o| o.fails()).count(),
        allowed: outcomes.iter().filter(|o| !o.equal() && !o.fails()).count(),
        empty_on_prometheus: outcomes.iter().filter(|o| o.prom.is_empty()).count(),
    }
}

/// `N queries, M equal, K differ (A allow-listed deviations)`.
pub fn summary_line(t: &Totals) -> String {
    format!(
        "promql_diff: {} queries, {} equal, {} differ ({} allow-listed deviations); {} empty on Prometheus ({:.0} %)",
        t.queries,
        t.equal,
        t.differ,
        t.allowed,
        t.empty_on_prometheus,
        100.0 * t.empty_on_prometheus as f64 / t.queries.max(1) as f64
    )
}

/// The whole report: header, per-area table, each difference, corpus problems, the summary line.
pub fn render(outcomes: &[Outcome], header: &str, corpus_problems: &[String]) -> String {
    let mut r = String::new();
    let _ = writeln!(r, "{header}\n");
    let _ = writeln!(r, "| area | queries | equal | differ | of which argus refused |\n|---|---:|---:|---:|---:|");
    let mut areas: Vec<&str> = Vec::new();
    for o in outcomes {
        if !areas.contains(&o.case.area.as_str()) {
            areas.push(&o.case.area);
        }
    }
    for area in &areas {
        let in_area: Vec<&Outcome> = outcomes.iter().filter(|o| o.case.area == *area).collect();
        let equal = in_area.iter().filter(|o| o.equal()).count();
        let refused = in_area.iter().filter(|o| !o.equal() && o.argus.is_error() && !o.prom.is_error()).count();
        let _ = writeln!(r, "| {area} | {} | {equal} | {} | {refused} |", in_area.len(), in_area.len() - equal);
    }
    r.push('\n');
    for o in outcomes.iter().filter(|o| !o.equal()) {
        let tag = match &o.case.flags.deviation {
            Some(id) => format!("DEVIATION {id}"),
            None => "DIFF".to_string(),
        };
        let _ = writeln!(r, "{tag} corpus.txt:{} [{}] {}  {}", o.case.line, o.case.area, o.case.when, o.case.query);
        if o.sent != o.case.query {
            let _ = writeln!(r, "    sent: {}", o.sent);
        }
        for line in &o.diff {
            let _ = writeln!(r, "    {line}");
        }
    }
    if !corpus_problems.is_empty() {
        let _ = writeln!(r, "\nCORPUS PROBLEMS (checked against Prometheus alone):");
        for p in corpus_problems {
            let _ = writeln!(r, "    {p}");
        }
    }
    let _ = writeln!(r, "\n{}", summary_line(&totals(outcomes)));
    r
}

/// What is wrong with the corpus itself, judged by Prometheus' answers: a valid query it refused, an
/// `error` query it accepted, an `empty` query that answered series or an ordinary one that answered
/// none, and deviations not documented in docs/promql.md (or more than three of them).
pub fn corpus_problems(outcomes: &[Outcome], documented_deviations: &[String], base: i64) -> Vec<String> {
    let mut out = Vec::new();
    for o in outcomes {
        let at = format!("corpus.txt:{} {}  {}", o.case.line, o.case.when, o.case.query);
        let f = &o.case.flags;
        if f.error {
            if !o.prom.is_error() {
                out.push(format!("{at}: marked error, but Prometheus answered {}", o.prom.summary(base)));
            }
            continue;
        }
        if o.prom.is_error() {
            out.push(format!("{at}: Prometheus refused it: {}", o.prom.summary(base)));
        } else if f.empty && !o.prom.is_empty() {
            out.push(format!("{at}: marked empty, but Prometheus answered {}", o.prom.summary(base)));
        } else if !f.empty && o.prom.is_empty() {
            out.push(format!("{at}: Prometheus answered no series; mark it `empty` if that is the point"));
        }
        if let Some(id) = &f.deviation
            && !documented_deviations.contains(id)
        {
            out.push(format!("{at}: deviation {id:?} is not a heading in docs/promql.md's deviations"));
        }
    }
    let used: BTreeSet<&String> = outcomes.iter().filter_map(|o| o.case.flags.deviation.as_ref()).collect();
    if used.len() > 3 || documented_deviations.len() > 3 {
        out.push(format!(
            "at most three deliberate deviations: corpus uses {used:?}, docs list {documented_deviations:?}"
        ));
    }
    out
}

/// The deviation ids documented in docs/promql.md: the `### id` headings of its
/// "## Deviations from Prometheus" section.
pub fn documented_deviations(doc: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in doc.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            inside = h.trim() == "Deviations from Prometheus";
        } else if inside && let Some(id) = line.strip_prefix("### ") {
            let id = id.split_whitespace().next().unwrap_or_default().trim_matches(|c| c == '`' || c == ':');
            if !id.starts_with("TODO") {
                out.push(id.to_string());
            }
        }
    }
    out
}
