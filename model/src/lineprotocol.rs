//! InfluxDB line protocol: parsing, encoding, and the mapping of points to series that VictoriaMetrics
//! uses by default (`{measurement}_{field}` for every field, tags as labels, booleans as 0/1, string
//! fields as events).
//!
//! The grammar is InfluxDB v2's (docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/, and
//! the EBNF in github.com/influxdata/line-protocol). Where the prose reference is loose, the formal
//! grammar decides: in names and tag values a backslash escapes only the characters listed for that
//! element and is literal before anything else, so `\\` there is two backslashes, while in string field
//! values `\\` is one.
//!
//! Ingest should use `parse_each` (one reused `Line`, no allocation per point) with `series_name` and
//! `field_as_f64`; `parse` collects owned points and `to_series` builds label sets, for tests and
//! simple callers.

use std::borrow::Cow;

mod encode;
mod parse;
mod precision;
mod series;

pub use encode::encode;
pub use parse::{parse, parse_each, parse_numbered};
pub use series::{ConvertError, Converted, field_as_f64, series_name, to_series};

/// Timestamp precision of a write. v2 spells them ns/us/ms/s; v1 spells n/u/ms/s/m/h.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
}

/// A field value as written.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue<'a> {
    Float(f64),
    Int(i64),
    UInt(u64),
    Bool(bool),
    Str(Cow<'a, str>),
}

/// One parsed line. Strings borrow from the input unless unescaping had to copy.
#[derive(Debug, Clone, PartialEq)]
pub struct Line<'a> {
    pub measurement: Cow<'a, str>,
    /// In the order written.
    pub tags: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// In the order written; never empty.
    pub fields: Vec<(Cow<'a, str>, FieldValue<'a>)>,
    /// In the write's precision, as written.
    pub timestamp: Option<i64>,
}

/// Why one line was rejected. `line` and `column` are 1-based; `column` counts characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {reason}")]
pub struct LineError {
    pub line: usize,
    pub column: usize,
    pub reason: String,
}

#[cfg(test)]
mod tests;
