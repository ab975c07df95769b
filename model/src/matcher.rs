//! Label matchers: `=`, `!=`, `=~`, `!~`, with Prometheus semantics (regexes fully anchored; a missing
//! label matches as the empty string).

use crate::memo::Memo;
use regex::Regex;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MatchOp {
    Equal,
    NotEqual,
    RegexMatch,
    RegexNoMatch,
}

#[derive(Debug, Clone)]
pub struct Matcher {
    pub name: String,
    pub op: MatchOp,
    pub value: String,
    re: Option<Regex>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MatcherError {
    #[error("invalid regex {pattern:?} for label {name}: {reason}")]
    BadRegex { name: String, pattern: String, reason: String },
}

/// Patterns kept compiled at most.
const REGEX_MEMO_MAX: usize = 4096;

/// `value` compiled as a fully anchored regex, once per process (see [`Memo`]).
fn anchored(value: &str) -> Result<Regex, regex::Error> {
    static REGEXES: Memo<Regex> = Memo::new(REGEX_MEMO_MAX, usize::MAX);
    REGEXES.get_or_try(value, || Regex::new(&format!("^(?s:{value})$")))
}

impl Matcher {
    pub fn new(name: impl Into<String>, op: MatchOp, value: impl Into<String>) -> Result<Self, MatcherError> {
        let (name, value) = (name.into(), value.into());
        let re = match op {
            MatchOp::RegexMatch | MatchOp::RegexNoMatch => Some(anchored(&value).map_err(|e| {
                MatcherError::BadRegex { name: name.clone(), pattern: value.clone(), reason: e.to_string() }
            })?),
            _ => None,
        };
        Ok(Matcher { name, op, value, re })
    }

    pub fn eq(name: impl Into<String>, value: impl Into<String>) -> Self {
        Matcher { name: name.into(), op: MatchOp::Equal, value: value.into(), re: None }
    }

    /// Whether a label value (empty when the label is absent) is selected.
    pub fn matches(&self, value: &str) -> bool {
        match (self.op, &self.re) {
            (MatchOp::Equal, _) => value == self.value,
            (MatchOp::NotEqual, _) => value != self.value,
            (MatchOp::RegexMatch, Some(re)) => re.is_match(value),
            (MatchOp::RegexNoMatch, Some(re)) => !re.is_match(value),
            // Regex ops are only built through `new`, which always compiles the regex.
            (_, None) => false,
        }
    }

    /// True when the matcher selects series that lack the label (it matches the empty string).
    pub fn matches_empty(&self) -> bool {
        self.matches("")
    }
}

impl fmt::Display for Matcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            MatchOp::Equal => "=",
            MatchOp::NotEqual => "!=",
            MatchOp::RegexMatch => "=~",
            MatchOp::RegexNoMatch => "!~",
        };
        write!(f, "{}{}{:?}", self.name, op, self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regex_is_anchored_and_empty_matches_absent() {
        let m = Matcher::new("job", MatchOp::RegexMatch, "a|b").unwrap();
        assert!(m.matches("a") && m.matches("b") && !m.matches("ab"));
        assert!(!m.matches_empty());
        let n = Matcher::new("job", MatchOp::RegexNoMatch, "a.*").unwrap();
        assert!(n.matches("") && !n.matches("abc"));
        assert!(Matcher::new("x", MatchOp::RegexMatch, "(").is_err());
    }
}
