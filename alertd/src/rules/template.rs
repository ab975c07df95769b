//! Rule templates, expanded as Prometheus expands alerting rules' labels and annotations: Go's
//! text/template language (pipelines, variables, `if`/`else if`/`else`, `range`, `with`,
//! comparisons, `and`/`or`/`not`, `printf`, `index`, `len`, …) with Prometheus' functions
//! (`humanize*`, `query`, `first`, `label`, `value`, `reReplaceAll`, `title`, `graphLink`, …) over
//! the data `$labels`/`.Labels`, `$value`/`.Value`, `$externalLabels`/`.ExternalLabels` and
//! `$externalURL`/`.ExternalURL`. Numbers print as Go prints them.
//!
//! Templates are parsed when the rule file loads ([`check`]), so an undefined function or
//! variable, or bad syntax, refuses the file; what can only fail while running (a wrong type, a
//! `query` error) expands, as in Prometheus, to `<error expanding template: …>`.
//!
//! The language is implemented here rather than with the `gtmpl` crate: gtmpl's functions are
//! plain `fn` pointers, so `query` could not reach the rule's store and evaluation time, its
//! numbers do not print as Go's, and it has had no release since 2021.
//!
//! The same engine runs Alertmanager's notification templates ([`notify`]): `define`, `template`
//! and `block`, Alertmanager's data (`.Alerts.Firing`, `.CommonLabels.SortedPairs`, …) and its
//! functions instead of Prometheus'.
//!
//! For callers outside rule evaluation (rule unit tests): [`Template::parse`] once, then
//! [`Template::expand`] with a [`Data`] and a [`QueryFn`] (a closure works; [`NoQuery`] when no
//! store is at hand), or [`expand_for_alert`] for Prometheus' output, errors included.

mod exec;
mod fmt;
mod funcs;
mod gotime;
mod lex;
pub mod notify;
mod parse;
mod value;

pub use fmt::{format_value, go_quote};

use argus_model::Labels;
use parse::{Arg, Node, Pipe};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use value::{Root, Value};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    /// Bad syntax, or an undefined function or variable: `line:column` in the template (1-based).
    #[error("template: {line}:{col}: {reason}")]
    Parse { line: usize, col: usize, reason: String },
    /// A failure while running, worded as Prometheus words it (`name` is the template's name,
    /// `__alert_<rule>` for a rule; the column counts the variable definitions Prometheus puts
    /// before the text).
    #[error(
        "error executing template {name}: template: {name}:{line}:{col}: executing \"{name}\" at <{context}>: {reason}"
    )]
    Exec { name: String, line: usize, col: usize, context: String, reason: String },
    /// Bad syntax in a notification template file or text (`file` empty for a receiver's field),
    /// or a `{{template}}` of a name nothing defines.
    #[error("template: {file}:{line}:{col}: {reason}")]
    ParseIn { file: String, line: usize, col: usize, reason: String },
    /// A notification template that failed while running, worded as Go's text/template words it
    /// (`name` the template it failed in, "" for the field's own text).
    #[error("template: {file}:{line}:{col}: executing {name:?} at <{context}>: {reason}")]
    Render { file: String, name: String, line: usize, col: usize, context: String, reason: String },
}

/// What `query` runs on: an instant PromQL query at the rule's evaluation time, answering the
/// samples with all their labels (`__name__` included); a scalar is one sample without labels.
pub trait QueryFn {
    fn query(&mut self, expr: &str) -> Result<Vec<(Labels, f64)>, String>;
}

impl<F: FnMut(&str) -> Result<Vec<(Labels, f64)>, String>> QueryFn for F {
    fn query(&mut self, expr: &str) -> Result<Vec<(Labels, f64)>, String> {
        self(expr)
    }
}

/// A [`QueryFn`] for where there is no store: `query` fails.
pub struct NoQuery;

impl QueryFn for NoQuery {
    fn query(&mut self, _: &str) -> Result<Vec<(Labels, f64)>, String> {
        Err("query is not available here".into())
    }
}

/// Answers `query` from answers fetched beforehand, and notes the queries it had no answer for,
/// so that an async caller can fetch those and expand again ([`Prefetched::missing`]).
#[derive(Debug, Default)]
pub struct Prefetched {
    answers: HashMap<String, Result<Vec<(Labels, f64)>, String>>,
    missing: Vec<String>,
}

impl Prefetched {
    /// The queries asked for since the last call that had no answer, each once.
    pub fn missing(&mut self) -> Vec<String> {
        let mut m = std::mem::take(&mut self.missing);
        m.sort();
        m.dedup();
        m
    }

    pub fn insert(&mut self, expr: String, answer: Result<Vec<(Labels, f64)>, String>) {
        self.answers.insert(expr, answer);
    }
}

impl QueryFn for Prefetched {
    fn query(&mut self, expr: &str) -> Result<Vec<(Labels, f64)>, String> {
        match self.answers.get(expr) {
            Some(a) => a.clone(),
            None => {
                self.missing.push(expr.to_string());
                Err("query not run yet".into())
            }
        }
    }
}

/// The data of one expansion: Prometheus' `AlertTemplateData`.
#[derive(Debug, Clone, Copy)]
pub struct Data<'a> {
    /// The series' labels (`$labels`), `__name__` included when the query kept it.
    pub labels: &'a Labels,
    /// The series' value (`$value`).
    pub value: f64,
    pub external_labels: &'a Labels,
    pub external_url: &'a str,
}

impl<'a> Data<'a> {
    /// Data with no external labels or URL.
    pub fn new(labels: &'a Labels, value: f64) -> Self {
        static EMPTY: std::sync::OnceLock<Labels> = std::sync::OnceLock::new();
        Data { labels, value, external_labels: EMPTY.get_or_init(Labels::default), external_url: "" }
    }
}

/// The variables Prometheus defines before every rule template.
const PREDECLARED: [&str; 5] = ["$", "$labels", "$externalLabels", "$externalURL", "$value"];
/// The length of the definitions Prometheus writes before the text (`{{$labels := .Labels}}…`),
/// which its error columns on the first line count.
const DEFS_LEN: usize =
    "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
        .len();

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    text: String,
    nodes: Vec<Node>,
}

impl Template {
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let nodes = parse::parse(text, &PREDECLARED, funcs::Dialect::Rules)
            .map_err(|(pos, reason)| {
                let (line, col) = line_col(text, pos);
                TemplateError::Parse { line, col: col + 1, reason }
            })?
            .nodes;
        Ok(Template { text: text.to_string(), nodes })
    }

    /// Whether it calls `query` (its expansion then needs a store).
    pub fn uses_query(&self) -> bool {
        self.nodes.iter().any(node_queries)
    }

    /// The template run over `data`; `name` names it in errors (Prometheus names a rule's
    /// templates `__alert_<rule name>`).
    pub fn expand(&self, name: &str, data: &Data, query: &mut dyn QueryFn) -> Result<String, TemplateError> {
        let map = |l: &Labels| Rc::new(l.iter().map(|l| (l.name.clone(), l.value.clone())).collect::<BTreeMap<_, _>>());
        let root = Rc::new(Root {
            labels: map(data.labels),
            external_labels: map(data.external_labels),
            external_url: data.external_url.to_string(),
            value: data.value,
        });
        let vars = vec![
            ("$".to_string(), Value::Root(root.clone())),
            ("$labels".to_string(), Value::Labels(root.labels.clone())),
            ("$externalLabels".to_string(), Value::Labels(root.external_labels.clone())),
            ("$externalURL".to_string(), Value::Str(root.external_url.clone())),
            ("$value".to_string(), Value::Float(root.value)),
        ];
        exec::run(&self.nodes, &Value::Root(root), vars, query, data.external_url).map_err(|e| {
            let (line, mut col) = line_col(&self.text, e.pos);
            if line == 1 {
                col += DEFS_LEN;
            }
            TemplateError::Exec { name: name.to_string(), line, col, context: e.context, reason: e.msg }
        })
    }
}

/// Checks that `text` parses as a rule template.
pub fn check(text: &str) -> Result<(), TemplateError> {
    Template::parse(text).map(|_| ())
}

/// Parses and expands `text` for the rule `rule`, as Prometheus does for an alert: a template that
/// fails yields `<error expanding template: …>` (and a warning in the log), never an error.
pub fn expand_for_alert(
    rule: &str,
    template: &Result<Template, TemplateError>,
    data: &Data,
    query: &mut dyn QueryFn,
) -> String {
    let name = format!("__alert_{rule}");
    let result = match template {
        Ok(t) => t.expand(&name, data, query),
        Err(e) => Err(e.clone()),
    };
    result.unwrap_or_else(|error| {
        tracing::warn!(rule, %error, "Expanding alert template failed");
        format!("<error expanding template: {error}>")
    })
}

/// `text` expanded over `labels` and `value`, without external labels or a store.
pub fn expand(text: &str, labels: &Labels, value: f64) -> Result<String, TemplateError> {
    Template::parse(text)?.expand("template", &Data::new(labels, value), &mut NoQuery)
}

/// 1-based line and 0-based byte column of `pos`, as Go's template errors count them.
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let before = &text[..pos.min(text.len())];
    let line = 1 + before.matches('\n').count();
    let col = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1);
    (line, col)
}

fn pipe_queries(p: &Pipe) -> bool {
    p.cmds.iter().flat_map(|c| &c.args).any(arg_queries)
}

fn node_queries(n: &Node) -> bool {
    let pipe = pipe_queries;
    match n {
        Node::Text(_) | Node::Break | Node::Continue => false,
        Node::Template { pipe, .. } => pipe.as_ref().is_some_and(pipe_queries),
        Node::Action(p) => pipe(p),
        Node::If { pipe: p, then: a, els: b }
        | Node::Range { pipe: p, body: a, els: b }
        | Node::With { pipe: p, body: a, els: b } => pipe(p) || a.iter().chain(b).any(node_queries),
    }
}

fn arg_queries(a: &Arg) -> bool {
    match a {
        Arg::Func(f) => f == "query",
        Arg::Pipe(p, _) => p.cmds.iter().flat_map(|c| &c.args).any(arg_queries),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
