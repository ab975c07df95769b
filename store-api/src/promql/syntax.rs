//! Where a query that does not parse goes wrong. Prometheus prefixes its parse errors with the
//! position (`1:16: parse error: unclosed left parenthesis`); `promql-parser` gives only the message
//! (its parser discards the error spans), so the position is recovered here, on the error path only:
//!
//! - a lexer error is at the first character whose reading fails: lexing is left to right, so the
//!   shortest prefix failing with the same message ends there (found by bisection); errors about the
//!   end of the input (`unclosed …`, `unexpected end of input …`) are at the end;
//! - an error naming a function is at that call (at its first argument for a wrong argument);
//! - any other parse error is at the first token that no valid query can continue from. A prefix is
//!   taken as continuable if a few generic completions (an operand, the closing brackets, a trailing
//!   expression) make it parse; when none does, the position may be a token early, never late.

use lrpar::{Lexeme, Lexer};
use promql_parser::parser::{lexer, parse};

/// Probing costs a few parses per token: past this many tokens the end of the input is reported.
const MAX_PROBED_TOKENS: usize = 2_000;

/// `msg` (the parser's message for `q`) as Prometheus words it: `line:col: parse error: msg`, with a
/// 1-based line and a 1-based byte column, as Prometheus counts them.
pub fn with_position(q: &str, msg: &str) -> String {
    if msg.starts_with(|c: char| c.is_ascii_digit()) && msg.contains(": parse error: ") {
        return msg.to_string(); // placed already (check_durations)
    }
    // The lexer shares the parser's number conversions, which can panic on out-of-range input.
    let at = std::panic::catch_unwind(|| offset(q, msg)).unwrap_or(0).min(q.len());
    format!("{}: {msg}", with_position_at(q, at))
}

/// The byte offset of the error.
fn offset(q: &str, msg: &str) -> usize {
    let lexed = match lexer(q) {
        Ok(l) => l,
        Err(e) => return lex_error_offset(q, &e),
    };
    // Lexemes hold byte spans into `q`; lexing succeeded, so all are valid.
    let tokens: Vec<(usize, usize)> =
        lexed.iter().filter_map(Result::ok).map(|t| (t.span().start(), t.span().end())).collect();
    let text = |i: usize| tokens.get(i).map_or("", |&(a, b)| &q[a..b]);
    if let Some(name) = quoted_after(msg, "unknown function with name '") {
        if let Some(i) = (0..tokens.len()).find(|&i| text(i) == name && text(i + 1) == "(") {
            return tokens[i].0;
        }
    } else if let Some(name) = quoted_after(msg, "function '") {
        // A wrong argument: point at the call's first argument, as Prometheus does.
        if let Some(i) = (0..tokens.len()).find(|&i| text(i) == name && text(i + 1) == "(") {
            return tokens.get(i + 2).map_or(tokens[i].0, |t| t.0);
        }
    }
    if tokens.len() > MAX_PROBED_TOKENS {
        return q.len();
    }
    let mut open = Vec::new();
    for (i, &(start, end)) in tokens.iter().enumerate() {
        match text(i) {
            "(" => open.push(')'),
            "{" => open.push('}'),
            "[" => open.push(']'),
            ")" | "}" | "]" => {
                open.pop();
            }
            _ => {}
        }
        if !continuable(&q[..end], &open) {
            return start;
        }
    }
    q.len()
}

fn lex_error_offset(q: &str, msg: &str) -> usize {
    if msg.starts_with("unclosed") || msg.contains("end of input") || msg.starts_with("no expression") {
        return q.len();
    }
    let bounds: Vec<usize> = q.char_indices().map(|(i, _)| i).chain([q.len()]).collect();
    let fails = |n: usize| matches!(lexer(&q[..bounds[n]]), Err(e) if e == msg);
    // The shortest prefix (in characters) that fails with `msg`; every longer one fails the same way.
    let (mut lo, mut hi) = (0, bounds.len() - 1);
    if !fails(hi) {
        return q.len();
    }
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fails(mid) { hi = mid } else { lo = mid + 1 }
    }
    // The prefix ends with the character that failed.
    bounds[hi.saturating_sub(1)]
}

/// Whether some query starts with `prefix`, judged by generic completions.
fn continuable(prefix: &str, open: &[char]) -> bool {
    let closers: String = open.iter().rev().collect();
    ["", " x", " 1", " 1m", " (x)", " \"\"", "=\"\"", " x=\"\""].iter().any(|operand| {
        ["", " (x)", " x"].iter().any(|tail| parse(&format!("{prefix}{operand}{closers}{tail}")).is_ok())
    })
}

fn quoted_after<'a>(msg: &'a str, lead: &str) -> Option<&'a str> {
    let rest = &msg[msg.find(lead)? + lead.len()..];
    Some(&rest[..rest.find('\'')?])
}

/// The most seconds a duration may hold: Prometheus keeps durations as int64 milliseconds.
const MAX_DURATION_SECS: f64 = 9.2e12;

/// Refuses a number in a duration's place (after `offset`, `[` or a subquery's `:`) that is not a
/// finite count of seconds within [`MAX_DURATION_SECS`], with each part of a unit duration (`5y3d`)
/// checked after its unit. Strings and comments are skipped. The parser itself would panic on them.
pub fn check_durations(q: &str) -> Result<(), String> {
    let b = q.as_bytes();
    let mut i = 0;
    // Whether the last significant token puts a duration next.
    let mut expect = false;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' | b'`' => {
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if b[i] == b'\\' && c != b'`' { 2 } else { 1 };
                }
                i += 1;
                expect = false;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            c if c.is_ascii_whitespace() => i += 1,
            b'-' | b'+' if expect => i += 1,
            b'[' | b':' => {
                expect = true;
                i += 1;
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' => {
                let start = i;
                while i < b.len()
                    && (b[i].is_ascii_alphanumeric()
                        || b[i] == b'_'
                        || b[i] == b'.'
                        || b[i] == b':'
                        || ((b[i] == b'+' || b[i] == b'-')
                            && matches!(b[i - 1], b'e' | b'E')
                            && b[start].is_ascii_digit()))
                {
                    if b[i] == b':' && !b[start].is_ascii_alphabetic() {
                        break;
                    }
                    i += 1;
                }
                let word = &q[start..i];
                if expect && let Err(e) = duration_in_range(word) {
                    return Err(format!("{}: {e}", with_position_at(q, start)));
                }
                expect = word.eq_ignore_ascii_case("offset");
            }
            _ => {
                expect = false;
                i += 1;
            }
        }
    }
    Ok(())
}

/// Checks one duration-place word: a number of seconds (`300`, `1e3`, `0x10`, `Inf`) or unit parts
/// (`1.5h`, `5m30s`).
fn duration_in_range(word: &str) -> Result<(), String> {
    let too_big = || Err(format!("duration {word:?} is out of range"));
    let lower = word.to_ascii_lowercase();
    if matches!(lower.as_str(), "inf" | "nan" | "+inf" | "-inf") {
        return too_big();
    }
    if !lower.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return Ok(()); // not a number: the parser's own error
    }
    let plain = if let Some(hex) = lower.strip_prefix("0x") {
        u64::from_str_radix(hex, 16).ok().map(|v| v as f64)
    } else {
        lower.parse::<f64>().ok()
    };
    if let Some(secs) = plain {
        return if secs.is_finite() && secs.abs() <= MAX_DURATION_SECS { Ok(()) } else { too_big() };
    }
    // Unit parts: a number then letters, repeated.
    let mut rest = lower.as_str();
    while !rest.is_empty() {
        let n = rest.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(rest.len());
        let (num, tail) = rest.split_at(n);
        let u = tail.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(tail.len());
        let (unit, next) = tail.split_at(u);
        let scale = match unit {
            "ms" => 0.001,
            "s" | "" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            "w" => 604800.0,
            "y" => 31536000.0,
            _ => return Ok(()), // not a duration: the parser's own error
        };
        match num.parse::<f64>() {
            Ok(v) if v.is_finite() && v * scale <= MAX_DURATION_SECS => {}
            Ok(_) => return too_big(),
            Err(_) => return Ok(()),
        }
        rest = next;
    }
    Ok(())
}

/// `line:col` of byte `at` in `q`.
fn with_position_at(q: &str, at: usize) -> String {
    let line_start = q[..at].rfind('\n').map_or(0, |i| i + 1);
    format!("{}:{}: parse error", q[..at].matches('\n').count() + 1, at - line_start + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(q: &str) -> String {
        let msg = parse(q).expect_err("must not parse");
        with_position(q, &msg)
    }

    #[test]
    fn positions_where_prometheus_reports_them() {
        // Expected positions as Prometheus 2.42 reports them for the same input.
        assert_eq!(check("sum(rate(x[5m])"), "1:16: parse error: unclosed left parenthesis");
        assert!(check("1 +").starts_with("1:4: "), "{}", check("1 +"));
        assert!(check("sum by (a b) (x)").starts_with("1:11: "), "{}", check("sum by (a b) (x)"));
        assert!(check("x{a=1}").starts_with("1:5: "), "{}", check("x{a=1}"));
        assert!(check("x{a=}").starts_with("1:5: "), "{}", check("x{a=}"));
        assert!(check("up)").starts_with("1:3: "), "{}", check("up)"));
        assert!(check("x $ 1").starts_with("1:3: "), "{}", check("x $ 1"));
        assert_eq!(check("foo(x)"), "1:1: parse error: unknown function with name 'foo'");
        assert!(check("rate(x)").starts_with("1:6: "), "{}", check("rate(x)"));
        assert!(check("x +\n  on(a b) y").starts_with("2:8: "), "{}", check("x +\n  on(a b) y"));
    }
}
