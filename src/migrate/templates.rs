//! The names a Go template's actions use, for the checks of template text: functions (`date`),
//! fields and methods (`.Local`) and variables (`$externalURL`). Strings and comments are skipped.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    /// A bare identifier: a function or keyword (`toUpper`, `if`, `template`).
    Func(String),
    /// `.Name`, a field or method, one part of a chain each.
    Field(String),
    /// `$name`.
    Var(String),
}

/// The names used in `text`'s actions, in order.
pub fn names(text: &str) -> Vec<Name> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let action = &rest[open + 2..];
        let end = action_end(action);
        scan(&action[..end], &mut out);
        rest = &action[(end + 2).min(action.len())..];
    }
    out
}

/// Whether `text` prints a query result whole: an action that is only `query "…"`.
pub fn prints_query_whole(text: &str) -> bool {
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let action = &rest[open + 2..];
        let end = action_end(action);
        let inner = action[..end].trim_start_matches('-').trim_end_matches('-').trim();
        if let Some(arg) = inner.strip_prefix("query") {
            let arg = arg.trim();
            let quoted = arg.len() >= 2 && (arg.starts_with('"') || arg.starts_with('`'));
            if quoted && arg[1..].find(&arg[..1]) == Some(arg.len() - 2) {
                return true;
            }
        }
        rest = &action[(end + 2).min(action.len())..];
    }
    false
}

/// The offset of the `}}` that closes an action starting at `action`'s start (strings skipped).
fn action_end(action: &str) -> usize {
    let b = action.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'"' | b'`' | b'\'') => i = skip_string(b, i, q),
            b'}' if b.get(i + 1) == Some(&b'}') => return i,
            _ => i += 1,
        }
    }
    b.len()
}

fn skip_string(b: &[u8], start: usize, quote: u8) -> usize {
    let mut i = start + 1;
    while i < b.len() && b[i] != quote {
        i += if b[i] == b'\\' && quote != b'`' { 2 } else { 1 };
    }
    i + 1
}

fn scan(action: &str, out: &mut Vec<Name>) {
    let a = action.trim_start_matches('-').trim_start();
    if a.starts_with("/*") {
        return;
    }
    let b = action.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b'"' | b'`' | b'\'') {
            i = skip_string(b, i, c);
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            let word = action[start..i].to_string();
            out.push(match start.checked_sub(1).map(|p| b[p]) {
                Some(b'.') => Name::Field(word),
                Some(b'$') => Name::Var(word),
                _ => Name::Func(word),
            });
        } else if c.is_ascii_digit() {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
}
