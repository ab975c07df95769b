//! The corpus format (`tests/it/promql_diff/corpus.txt`), one query per line:
//!
//! ```text
//! ## area name                                    starts a group; the report counts per group
//! # comment
//! [flag …] instant <t> <query>
//! [flag …] range <start> <end> <step> <query>
//! ```
//!
//! Times are offsets from the data's base time `T`: `90m`, `-1h`, `120m15s`, `60m0s500ms`, `0`. In the
//! query, `${T+60m}` becomes the absolute Unix time `T + 60m` in seconds (for `@`). Flags:
//! - `ordered`: the answer's order is defined (`sort`, `sort_desc`, an instant `topk`/`bottomk` of one
//!   group); the values must come in the same order (series with equal values may swap);
//! - `error`: deliberately invalid; Prometheus must answer an error, and both must agree on `errorType`;
//! - `empty`: an empty answer is the point; Prometheus must answer no series (every other query must
//!   answer some, so a corpus that drifts from the data is caught);
//! - `deviation:<id>`: a deliberate deviation listed in docs/promql.md; its difference is allowed.

use std::fmt;

/// One query of the corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// 1-based line in the corpus file.
    pub line: usize,
    pub area: String,
    pub flags: Flags,
    pub when: When,
    /// The query text, `${…}` placeholders unresolved.
    pub query: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Flags {
    pub ordered: bool,
    pub error: bool,
    pub empty: bool,
    pub deviation: Option<String>,
}

/// When a case is evaluated, in milliseconds from the base time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    Instant { t: i64 },
    Range { start: i64, end: i64, step: i64 },
}

/// Parses the whole corpus; an error names the line.
pub fn parse(text: &str) -> Result<Vec<Case>, String> {
    let mut area = String::from("(none)");
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(a) = line.strip_prefix("##") {
            area = a.trim().to_string();
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let case = parse_line(line, i + 1, &area).map_err(|e| format!("corpus line {}: {e}: {line}", i + 1))?;
        out.push(case);
    }
    Ok(out)
}

fn parse_line(line: &str, number: usize, area: &str) -> Result<Case, String> {
    let mut flags = Flags::default();
    let mut rest = line;
    loop {
        let (word, tail) = split_word(rest)?;
        match word {
            "ordered" => flags.ordered = true,
            "error" => flags.error = true,
            "empty" => flags.empty = true,
            w if w.starts_with("deviation:") => {
                let id = &w["deviation:".len()..];
                if id.is_empty() {
                    return Err("deviation without an id".into());
                }
                flags.deviation = Some(id.to_string());
            }
            "instant" => {
                let (t, query) = split_word(tail)?;
                let when = When::Instant { t: parse_offset(t)? };
                return finish(number, area, flags, when, query);
            }
            "range" => {
                let (start, tail) = split_word(tail)?;
                let (end, tail) = split_word(tail)?;
                let (step, query) = split_word(tail)?;
                let when =
                    When::Range { start: parse_offset(start)?, end: parse_offset(end)?, step: parse_offset(step)? };
                return finish(number, area, flags, when, query);
            }
            other => return Err(format!("unknown flag or kind {other:?}")),
        }
        rest = tail;
    }
}

fn finish(line: usize, area: &str, flags: Flags, when: When, query: &str) -> Result<Case, String> {
    if query.trim().is_empty() {
        return Err("no query".into());
    }
    if flags.error && flags.empty {
        return Err("a query cannot be both error and empty".into());
    }
    resolve(query, 0)?;
    Ok(Case { line, area: area.to_string(), flags, when, query: query.trim().to_string() })
}

fn split_word(s: &str) -> Result<(&str, &str), String> {
    let s = s.trim_start();
    if s.is_empty() {
        return Err("line ends early".into());
    }
    Ok(s.split_once(char::is_whitespace).unwrap_or((s, "")))
}

/// An offset such as `90m`, `-1h30m`, `60m0s500ms` or `0`, in milliseconds.
pub fn parse_offset(s: &str) -> Result<i64, String> {
    let (sign, body) = match s.strip_prefix('-') {
        Some(b) => (-1, b),
        None => (1, s),
    };
    if body == "0" {
        return Ok(0);
    }
    let mut total = 0i64;
    let mut rest = body;
    if rest.is_empty() {
        return Err(format!("bad time {s:?}"));
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(|| format!("no unit in {s:?}"))?;
        let n: i64 = rest[..digits].parse().map_err(|_| format!("bad time {s:?}"))?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let ms = match &rest[..unit_len] {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            u => return Err(format!("bad unit {u:?} in {s:?}")),
        };
        total += n * ms;
        rest = &rest[unit_len..];
    }
    Ok(sign * total)
}

/// The query with each `${T+offset}` (or `${T-offset}`) replaced by the Unix time `base_ms ± offset` in
/// seconds. Other `${…}`, such as `label_replace`'s `${1}`, stay as they are.
pub fn resolve(query: &str, base_ms: i64) -> Result<String, String> {
    let mut out = String::with_capacity(query.len());
    let mut rest = query;
    while let Some(at) = rest.find("${T") {
        out.push_str(&rest[..at]);
        let end = rest[at..].find('}').ok_or_else(|| "unclosed ${T".to_string())? + at;
        let offset = &rest[at + 3..end];
        let offset = offset.strip_prefix('+').unwrap_or(offset);
        out.push_str(&secs(base_ms + parse_offset(offset)?));
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Milliseconds as Unix seconds with a fraction (`1700000000.250`).
pub fn secs(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// `90m` style (minutes, the corpus' habit), for the report.
pub fn show_offset(ms: i64) -> String {
    if ms == 0 {
        return "0".into();
    }
    let sign = if ms < 0 { "-" } else { "" };
    let mut a = ms.abs();
    let mut out = String::from(sign);
    for (unit, size) in [("m", 60_000), ("s", 1_000), ("ms", 1)] {
        if a >= size {
            out.push_str(&format!("{}{unit}", a / size));
            a %= size;
        }
    }
    out
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            When::Instant { t } => write!(f, "instant {}", show_offset(t)),
            When::Range { start, end, step } => {
                write!(f, "range {} {} {}", show_offset(start), show_offset(end), show_offset(step))
            }
        }
    }
}
