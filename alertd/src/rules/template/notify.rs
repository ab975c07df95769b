//! Notification templates, as Alertmanager runs them: template files (`templates:` in its
//! configuration) parsed into one [`Library`] of named templates after Alertmanager's own
//! `default.tmpl`, and each receiver field's text parsed against it ([`Library::parse_text`]) and
//! run over the notification's data ([`NotifyData`]). Alertmanager 0.25's functions only
//! (`toUpper`, `toLower`, `title`, `join`, `match`, `safeHtml`, `reReplaceAll`, `stringSlice`, and
//! text/template's built-ins); `missingkey=zero`, so a missing label is the empty string.

pub use super::value::{AlertData, NotifyData};

use super::TemplateError;
use super::exec::{self, Def, Defs};
use super::funcs::Dialect;
use super::line_col;
use super::parse::{self, Node};
use super::value::Value;
use std::collections::BTreeSet;
use std::rc::Rc;
use std::sync::Arc;

/// Named templates: the files' `define`s and `block`s, by name; a later definition replaces an
/// earlier one unless it is empty (Go's rule, so that `{{ define "x" }}{{ end }}` in a default
/// never hides a user's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Library {
    defs: Defs,
}

/// A receiver field's text, parsed: it runs with the library it was parsed against.
#[derive(Debug, Clone, PartialEq)]
pub struct NotifyTemplate {
    text: Arc<str>,
    nodes: Vec<Node>,
    defs: Arc<Defs>,
}

impl Library {
    /// Parses the template file `file` (its name in errors and, by base name, a template itself,
    /// as Go's `ParseGlob` names it) and adds what it defines.
    pub fn add_file(&mut self, file: &str, text: &str) -> Result<(), TemplateError> {
        let parsed = parse_at(file, text)?;
        let text: Arc<str> = Arc::from(text);
        let base = std::path::Path::new(file).file_name().map_or(file.to_string(), |b| b.to_string_lossy().into());
        for (name, nodes) in parsed.defines.into_iter().chain([(base, parsed.nodes)]) {
            self.define(name, Def { nodes, file: file.to_string(), text: text.clone() });
        }
        Ok(())
    }

    fn define(&mut self, name: String, def: Def) {
        if empty(&def.nodes) && self.defs.contains_key(&name) {
            return;
        }
        self.defs.insert(name, Arc::new(def));
    }

    /// Whether a template of this name is defined.
    pub fn contains(&self, name: &str) -> bool {
        self.defs.contains_key(name)
    }

    /// Checks that every `{{template}}` in the library names a defined template.
    pub fn check(&self) -> Result<(), TemplateError> {
        for def in self.defs.values() {
            undefined(&def.nodes, &self.defs, &def.file, &def.text)?;
        }
        Ok(())
    }

    /// Parses a receiver field's text against the library: bad syntax, or a `{{template}}` of a
    /// name neither the library nor the text defines, is an error at its line and column.
    pub fn parse_text(&self, text: &str) -> Result<NotifyTemplate, TemplateError> {
        let parsed = parse_at("", text)?;
        let shared: Arc<str> = Arc::from(text);
        let mut defs = self.clone();
        for (name, nodes) in parsed.defines {
            defs.define(name, Def { nodes, file: String::new(), text: shared.clone() });
        }
        undefined(&parsed.nodes, &defs.defs, "", text)?;
        for def in defs.defs.values().filter(|d| d.file.is_empty()) {
            undefined(&def.nodes, &defs.defs, "", text)?;
        }
        Ok(NotifyTemplate { text: shared, nodes: parsed.nodes, defs: Arc::new(defs.defs) })
    }
}

impl NotifyTemplate {
    /// A text without actions: it renders as written.
    pub fn literal(text: &str) -> NotifyTemplate {
        let nodes = if text.is_empty() { Vec::new() } else { vec![Node::Text(text.to_string())] };
        NotifyTemplate { text: Arc::from(text), nodes, defs: Arc::default() }
    }

    /// The text as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The text run over `data`. An empty text gives the empty string, as Alertmanager's.
    pub fn execute(&self, data: &Rc<NotifyData>) -> Result<String, TemplateError> {
        self.run(data, false)
    }

    /// The text run over `data` as HTML: what actions print is escaped as html/template escapes
    /// text (`safeHtml` marks what is HTML already). Alertmanager's email `html` runs so.
    pub fn execute_html(&self, data: &Rc<NotifyData>) -> Result<String, TemplateError> {
        self.run(data, true)
    }

    fn run(&self, data: &Rc<NotifyData>, html: bool) -> Result<String, TemplateError> {
        exec::run_notify(&self.nodes, &Value::Data(data.clone()), &self.defs, html).map_err(|e| {
            let (name, file, text) = match &e.inside {
                Some((name, def)) => (name.clone(), def.file.clone(), def.text.clone()),
                None => (String::new(), String::new(), self.text.clone()),
            };
            let (line, col) = line_col(&text, e.pos);
            TemplateError::Render { file, name, line, col, context: e.context, reason: e.msg }
        })
    }
}

fn parse_at(file: &str, text: &str) -> Result<parse::Parsed, TemplateError> {
    parse::parse(text, &["$"], Dialect::Notify).map_err(|(pos, reason)| {
        let (line, col) = line_col(text, pos);
        TemplateError::ParseIn { file: file.to_string(), line, col: col + 1, reason }
    })
}

/// Go's `IsEmptyTree`: nothing but white space.
fn empty(nodes: &[Node]) -> bool {
    nodes.iter().all(|n| matches!(n, Node::Text(t) if t.trim().is_empty()))
}

/// The first `{{template}}` in `nodes` that names nothing in `defs`, as an error in `file`.
fn undefined(nodes: &[Node], defs: &Defs, file: &str, text: &str) -> Result<(), TemplateError> {
    let mut names = BTreeSet::new();
    let mut refs = Vec::new();
    collect(nodes, &mut refs);
    for (name, pos) in refs {
        if !defs.contains_key(&name) && names.insert(name.clone()) {
            let (line, col) = line_col(text, pos);
            let reason = format!("no such template {name:?}");
            return Err(TemplateError::ParseIn { file: file.to_string(), line, col: col + 1, reason });
        }
    }
    Ok(())
}

fn collect(nodes: &[Node], out: &mut Vec<(String, usize)>) {
    for n in nodes {
        match n {
            Node::Template { name, pos, .. } => out.push((name.clone(), *pos)),
            Node::If { then: a, els: b, .. }
            | Node::Range { body: a, els: b, .. }
            | Node::With { body: a, els: b, .. } => {
                collect(a, out);
                collect(b, out);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
