//! The names a PromQL expression uses: the functions and aggregations it calls and the metric names
//! it selects. Run only on expressions Argus' parser has accepted; strings, label matchers (`{…}`),
//! ranges (`[…]`), grouping label lists (`by (…)`) and comments are skipped.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Name {
    /// A function or aggregation call: `rate`, `topk`.
    Call(String),
    /// A metric name in a selector: `up`.
    Metric(String),
}

const AGGREGATIONS: [&str; 14] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// Keywords followed by a parenthesised list of label names.
const LABEL_LISTS: [&str; 6] = ["by", "without", "on", "ignoring", "group_left", "group_right"];

/// Operators and literals spelt as words.
const WORDS: [&str; 8] = ["and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"];

/// The names `expr` uses, in order.
pub fn names(expr: &str) -> Vec<Name> {
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' | b'`' => i = skip_string(b, i),
            b'{' => i = skip_to(b, i, b'}'),
            b'[' => i = skip_to(b, i, b']'),
            b'#' => i = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |n| i + n),
            _ if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) => {
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
                    let exp = matches!(b[i], b'e' | b'E') && matches!(b.get(i + 1), Some(b'+' | b'-'));
                    i += if exp { 2 } else { 1 };
                }
            }
            _ if c.is_ascii_alphabetic() || c == b'_' || c == b':' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b':') {
                    i += 1;
                }
                let word = &expr[start..i];
                let next = skip_space(b, i);
                let lower = word.to_ascii_lowercase();
                if LABEL_LISTS.contains(&lower.as_str()) {
                    if b.get(next) == Some(&b'(') {
                        i = skip_to(b, next, b')');
                    }
                } else if WORDS.contains(&lower.as_str()) {
                } else if b.get(next) == Some(&b'(')
                    || (AGGREGATIONS.contains(&word) && next_word_is_label_list(expr, next))
                {
                    out.push(Name::Call(word.to_string()));
                } else {
                    out.push(Name::Metric(word.to_string()));
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn next_word_is_label_list(expr: &str, at: usize) -> bool {
    let rest = &expr[at..];
    let word: String = rest.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    matches!(word.to_ascii_lowercase().as_str(), "by" | "without")
}

fn skip_space(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Past the `close` that ends the bracket at `start`, strings inside skipped.
fn skip_to(b: &[u8], start: usize, close: u8) -> usize {
    let mut i = start + 1;
    while i < b.len() && b[i] != close {
        i = if matches!(b[i], b'"' | b'\'' | b'`') { skip_string(b, i) } else { i + 1 };
    }
    i + 1
}

fn skip_string(b: &[u8], start: usize) -> usize {
    let quote = b[start];
    let mut i = start + 1;
    while i < b.len() && b[i] != quote {
        i += if b[i] == b'\\' && quote != b'`' { 2 } else { 1 };
    }
    i + 1
}
