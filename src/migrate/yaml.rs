//! A YAML file read as its own program reads it (any key accepted), with the position of every key:
//! what the checks walk and where their findings point.

use super::{Finding, Kind};
use argus_alertd::config::{ConfigError, Positions};
use serde_norway::Value;

pub struct Doc<'a> {
    pub file: &'a str,
    pub src: &'a str,
    pub root: Value,
    positions: Positions,
}

impl<'a> Doc<'a> {
    /// `Err` when `src` is not YAML at all: `file:line:column: reason`.
    pub fn parse(src: &'a str, file: &'a str) -> Result<Doc<'a>, String> {
        let root = serde_norway::from_str::<Value>(src).map_err(|e| match e.location() {
            Some(l) => format!("{file}:{}:{}: not YAML: {e}", l.line(), l.column()),
            None => format!("{file}: not YAML: {e}"),
        })?;
        Ok(Doc { file, src, root, positions: Positions::of(src) })
    }

    /// Where the key `path` is written, else its nearest written parent, else the file's start.
    pub fn at(&self, path: &str) -> (usize, usize) {
        self.positions.nearest(path).unwrap_or((1, 1))
    }

    /// Where the text `needle` is first written as a word within the node at `path`; else the key.
    pub fn text_at(&self, path: &str, needle: &str) -> (usize, usize) {
        let Some((first, last)) = self.positions.lines(path) else { return self.at(path) };
        for (n, line) in self.src.lines().enumerate().skip(first - 1).take(last + 1 - first) {
            if let Some(i) = find_word(line, needle) {
                return (n + 1, line[..i].chars().count() + 1);
            }
        }
        self.at(path)
    }

    pub fn finding(&self, kind: Kind, key: &str, what: impl Into<String>, todo: impl Into<String>) -> Finding {
        let (line, column) = self.at(key);
        self.finding_at((line, column), kind, key, what, todo)
    }

    pub fn finding_at(
        &self,
        (line, column): (usize, usize),
        kind: Kind,
        key: &str,
        what: impl Into<String>,
        todo: impl Into<String>,
    ) -> Finding {
        Finding {
            file: self.file.to_string(),
            line,
            column,
            kind,
            key: key.to_string(),
            what: what.into(),
            todo: todo.into(),
        }
    }

    /// `src` with the lines of each refused key blanked (line numbers kept), where the key starts its
    /// own line and `blank` allows: alertd's loaders stop at the first unknown key of a section (and
    /// its validation at the first refusal of a receiver), so they are run on this text to find
    /// everything else they refuse.
    pub fn without_refused(&self, found: &[Finding], blank: impl Fn(&str) -> bool) -> String {
        let mut lines: Vec<&str> = self.src.lines().collect();
        for f in found.iter().filter(|f| f.kind == Kind::Refused && blank(&f.key)) {
            let (Some((line, col)), Some((first, last))) = (self.positions.key(&f.key), self.positions.lines(&f.key))
            else {
                continue;
            };
            let own_line = lines.get(line - 1).is_some_and(|l| indent(l) + 1 == col);
            if own_line && last <= lines.len() {
                lines[first - 1..last].iter_mut().for_each(|l| *l = "");
            }
        }
        lines.join("\n")
    }

    /// Each error of alertd's own loader that no finding already names, as refused: one at the same
    /// key, or on the same line at a key within the error's (`groups[0]: unknown field `limit``).
    pub fn loader_errors(&self, result: Result<(), ConfigError>, todo: &str, out: &mut Vec<Finding>) {
        let Err(e) = result else { return };
        for e in e.all() {
            let known = out.iter().any(|f| {
                f.kind == Kind::Refused
                    && (f.key == e.field
                        || (e.line == Some(f.line) && !e.field.is_empty() && f.key.starts_with(&e.field)))
            });
            if known {
                continue;
            }
            // The field where written; else the line the loader names, at its text.
            let at = match (self.positions.nearest(&e.field), e.line) {
                (Some(p), Some(l)) if p.0 == l => p,
                (_, Some(l)) => (l, self.src.lines().nth(l - 1).map_or(0, indent) + 1),
                (p, None) => p.unwrap_or((1, 1)),
            };
            let key = if e.field.is_empty() { "(file)" } else { &e.field };
            // One line per finding: a regex error's caret diagram is folded into it.
            let reason: Vec<&str> = e.reason.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            out.push(self.finding_at(at, Kind::Refused, key, reason.join(" "), todo));
        }
    }
}

/// The items of the list at `key` of `v` (none when absent or not a list).
pub fn items<'v>(v: &'v Value, key: &str) -> &'v [Value] {
    v.get(key).and_then(Value::as_sequence).map_or(&[], Vec::as_slice)
}

/// The string at `key` of `v`; numbers and booleans as written.
pub fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The keys of the mapping at `key` of `v`, in file order, with their values.
pub fn entries<'v>(v: &'v Value, key: &str) -> Vec<(String, &'v Value)> {
    let Some(m) = v.get(key).and_then(Value::as_mapping) else { return Vec::new() };
    m.iter().filter_map(|(k, v)| Some((k.as_str()?.to_string(), v))).collect()
}

/// The byte offset of `word` in `line` where it is not part of a longer name.
pub fn find_word(line: &str, word: &str) -> Option<usize> {
    let part = |c: char| c.is_alphanumeric() || c == '_' || c == ':';
    let mut from = 0;
    while let Some(i) = line[from..].find(word).map(|i| i + from) {
        let before = line[..i].chars().next_back();
        let after = line[i + word.len()..].chars().next();
        let word_starts = word.chars().next().is_some_and(|c| !part(c));
        if (word_starts || !before.is_some_and(part)) && !after.is_some_and(part) {
            return Some(i);
        }
        from = i + word.len().max(1);
    }
    None
}

fn indent(line: &str) -> usize {
    line.chars().take_while(|c| c.is_whitespace()).count()
}
