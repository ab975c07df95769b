//! The parser: one pass over the body's bytes, borrowing every name and value that needs no unescaping.
//!
//! **Invariant:** every index this module slices `src` at is either an end of the body or the position
//! of an ASCII byte (separators, quotes, backslashes), so it is always a char boundary.

use std::borrow::Cow;

use super::{FieldValue, Line, LineError};

mod scan;
mod value;

use scan::{KEY, MEASUREMENT};

/// Parses a whole request body. Points are separated by `\n` (a `\r` before it is dropped); blank lines
/// and lines whose first non-blank character is `#` are skipped. A string field value may span several
/// physical lines; a point is reported by the line it starts on.
///
/// On failure returns an error for every bad point, in order, and no points: a write is all or nothing.
pub fn parse(body: &str) -> Result<Vec<Line<'_>>, Vec<LineError>> {
    parse_numbered(body).map(|v| v.into_iter().map(|(_, l)| l).collect())
}

/// As `parse`, with the 1-based line each point starts on, so later checks (a timestamp too far in
/// the future, too many labels) can name it.
pub fn parse_numbered(body: &str) -> Result<Vec<(usize, Line<'_>)>, Vec<LineError>> {
    let mut lines = Vec::with_capacity(count_newlines(body.as_bytes()) + 1);
    let errors = drive(body, |line, clean, lineno| {
        if clean {
            // Most points in a batch look alike, so the last one sizes the next one's vectors.
            let next = Line {
                measurement: Cow::Borrowed(""),
                tags: Vec::with_capacity(line.tags.len()),
                fields: Vec::with_capacity(line.fields.len()),
                timestamp: None,
            };
            lines.push((lineno, std::mem::replace(line, next)));
        }
    });
    if errors.is_empty() { Ok(lines) } else { Err(errors) }
}

/// Parses a body as `parse` does, but lends each good point to `f` instead of collecting them, reusing
/// one `Line` (and its vectors) throughout: no allocation per point unless a name needs unescaping.
/// `f` sees every good point even when others are bad; returns how many it saw, or every error.
pub fn parse_each<'a>(body: &'a str, mut f: impl FnMut(&Line<'a>)) -> Result<usize, Vec<LineError>> {
    let mut n = 0;
    let errors = drive(body, |line, _, _| {
        n += 1;
        f(line);
    });
    if errors.is_empty() { Ok(n) } else { Err(errors) }
}

/// Runs the parser over `body`, handing each good point to `emit` with whether no error came before it;
/// `emit` may take the line or leave it to be overwritten by the next point.
fn drive<'a>(body: &'a str, mut emit: impl FnMut(&mut Line<'a>, bool, usize)) -> Vec<LineError> {
    let b = body.as_bytes();
    let mut p = Parser { src: body, b, line: 1 };
    let mut scratch = Line { measurement: Cow::Borrowed(""), tags: Vec::new(), fields: Vec::new(), timestamp: None };
    let mut errors = Vec::new();
    let mut i = 0;
    let mut line_start = 0;
    while i < b.len() {
        match b[i] {
            b' ' | b'\t' => {
                i += 1;
                continue;
            }
            b'\n' => {
                i += 1;
                p.line += 1;
                line_start = i;
                continue;
            }
            b'\r' if p.at_eol(i) => {
                i += 1;
                continue;
            }
            b'#' => {
                i = p.next_newline(i);
                continue;
            }
            _ => {}
        }
        let start_line = p.line;
        match p.point(i, &mut scratch) {
            Ok(end) => {
                emit(&mut scratch, errors.is_empty(), start_line);
                i = end;
            }
            Err(fail) => {
                let column = body.get(line_start..fail.pos).map_or(0, |s| s.chars().count()) + 1;
                errors.push(LineError { line: start_line, column, reason: fail.reason });
                i = fail.resume;
                p.line = fail.resume_line;
            }
        }
    }
    errors
}

/// Counts in byte-wide lanes, 255 bytes at a time, which vectorises far better than a `usize` count.
fn count_newlines(b: &[u8]) -> usize {
    b.chunks(255).map(|c| usize::from(c.iter().fold(0u8, |n, &x| n + u8::from(x == b'\n')))).sum()
}

/// A rejected point: where and why, and where to pick up again.
struct Fail {
    pos: usize,
    reason: String,
    resume: usize,
    resume_line: usize,
}

struct Parser<'a> {
    src: &'a str,
    b: &'a [u8],
    /// The physical line at the current position; only string values move it within a point.
    line: usize,
}

impl<'a> Parser<'a> {
    /// Parses one point starting at a non-blank byte into `line`, overwriting it; returns the position
    /// of its end of line.
    fn point(&mut self, start: usize, line: &mut Line<'a>) -> Result<usize, Fail> {
        let b = self.b;
        let (end, escaped) = scan::ident(b, start, MEASUREMENT);
        if end == start {
            return Err(self.fail(start, "missing measurement"));
        }
        line.measurement = self.text(start, end, escaped, MEASUREMENT);
        line.tags.clear();
        line.fields.clear();
        line.timestamp = None;

        let mut i = end;
        let tags = &mut line.tags;
        if b.get(i) == Some(&b',') {
            loop {
                let ks = i + 1;
                let (ke, kesc) = scan::ident(b, ks, KEY);
                if ke == ks {
                    return Err(self.fail(ks, "tag key is empty"));
                }
                if b.get(ke) != Some(&b'=') {
                    return Err(self.fail(ke, "expected '=' after tag key"));
                }
                let vs = ke + 1;
                let (ve, vesc) = scan::ident(b, vs, KEY);
                if ve == vs {
                    return Err(self.fail(vs, "tag value is missing"));
                }
                tags.push((self.text(ks, ke, kesc, KEY), self.text(vs, ve, vesc, KEY)));
                i = ve;
                match b.get(i) {
                    Some(b',') => {}
                    Some(b'=') => return Err(self.fail(i, "unescaped '=' in tag value")),
                    _ => break,
                }
            }
        }

        if b.get(i) != Some(&b' ') {
            return Err(self.fail(i, "missing fields"));
        }
        i = skip_spaces(b, i);
        if self.at_eol(i) {
            return Err(self.fail(i, "missing fields"));
        }
        let fields = &mut line.fields;
        let mut has_timestamp = false;
        loop {
            let ks = i;
            let (ke, kesc) = scan::ident(b, ks, KEY);
            if ke == ks {
                return Err(self.fail(ks, "field key is empty"));
            }
            if b.get(ke) != Some(&b'=') {
                return Err(self.fail(ke, "expected '=' after field key"));
            }
            let key = self.text(ks, ke, kesc, KEY);
            let (value, ve) = self.field_value(ke + 1)?;
            fields.push((key, value));
            i = ve;
            match b.get(i) {
                Some(b',') => i += 1,
                Some(b' ') => {
                    i = skip_spaces(b, i);
                    has_timestamp = !self.at_eol(i);
                    break;
                }
                _ if self.at_eol(i) => break,
                _ => {
                    let c = self.src.get(i..).and_then(|s| s.chars().next()).unwrap_or_default();
                    return Err(self.fail(i, format!("unexpected character {c:?} after field value")));
                }
            }
        }

        if has_timestamp {
            let ts = i;
            let te = value::token_end(b, ts);
            let t = value::timestamp(&self.src[ts..te]).map_err(|reason| self.fail(ts, reason))?;
            i = skip_spaces(b, te);
            if !self.at_eol(i) {
                return Err(self.fail(i, "unexpected text after timestamp"));
            }
            line.timestamp = Some(t);
        }
        Ok(i)
    }

    fn field_value(&mut self, start: usize) -> Result<(FieldValue<'a>, usize), Fail> {
        match self.b.get(start) {
            Some(b'"') => self.string(start),
            Some(b',' | b' ') => Err(self.fail(start, "missing field value")),
            _ if self.at_eol(start) => Err(self.fail(start, "missing field value")),
            _ => {
                let end = value::token_end(self.b, start);
                match value::scalar(&self.src[start..end]) {
                    Ok(v) => Ok((v, end)),
                    Err(reason) => Err(self.fail(start, reason)),
                }
            }
        }
    }

    /// A quoted string value from its opening quote; it may hold raw newlines.
    fn string(&mut self, quote: usize) -> Result<(FieldValue<'a>, usize), Fail> {
        let b = self.b;
        let line_at_quote = self.line;
        let start = quote + 1;
        let mut i = start;
        let mut escaped = false;
        loop {
            match b.get(i) {
                Some(b'"') => break,
                Some(b'\\') if matches!(b.get(i + 1), Some(b'"' | b'\\')) => {
                    escaped = true;
                    i += 2;
                }
                Some(b'\n') => {
                    self.line += 1;
                    i += 1;
                }
                Some(_) => i += 1,
                None => {
                    // Resume right after the quote's line rather than at the end of the body: a stray
                    // quote should not hide the errors of every line after it.
                    return Err(Fail {
                        pos: quote,
                        reason: "unterminated quoted string".to_string(),
                        resume: self.next_newline(quote),
                        resume_line: line_at_quote,
                    });
                }
            }
        }
        let s = &self.src[start..i];
        let s = if escaped { Cow::Owned(scan::unescape_string(s)) } else { Cow::Borrowed(s) };
        Ok((FieldValue::Str(s), i + 1))
    }

    fn text(&self, start: usize, end: usize, escaped: bool, element: u8) -> Cow<'a, str> {
        let s = &self.src[start..end];
        if escaped { Cow::Owned(scan::unescape(s, element)) } else { Cow::Borrowed(s) }
    }

    /// True at the end of the body, at `\n`, or at a `\r` that ends the line.
    fn at_eol(&self, i: usize) -> bool {
        match self.b.get(i) {
            None | Some(b'\n') => true,
            Some(b'\r') => matches!(self.b.get(i + 1), None | Some(b'\n')),
            Some(_) => false,
        }
    }

    fn next_newline(&self, from: usize) -> usize {
        self.b.get(from..).and_then(|rest| rest.iter().position(|&c| c == b'\n')).map_or(self.b.len(), |n| from + n)
    }

    fn fail(&self, pos: usize, reason: impl Into<String>) -> Fail {
        Fail { pos, reason: reason.into(), resume: self.next_newline(pos), resume_line: self.line }
    }
}

fn skip_spaces(b: &[u8], mut i: usize) -> usize {
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    i
}
