//! InfluxDB's annotated CSV, the answer of `/api/v2/query`, read back into series.
//!
//! Format: <https://docs.influxdata.com/influxdb/v2/reference/syntax/annotated-csv/>. Each table starts
//! with annotation rows (`#datatype`, `#group`, `#default`) and a header row; every row has a leading
//! annotation column, empty outside annotations. A table with columns `error,reference` is an error
//! the server hit after it had started answering 200.
//!
//! A row becomes a sample of the series `{_measurement}_{_field}` labelled by the table's string
//! columns (its tags), except Flux's own (`result`, `table`, `_start`, `_stop`). Numeric values become
//! floats, booleans 1 and 0; rows with string values (events) or no value are skipped. Timestamps are
//! cut to milliseconds; where two rows of a series then share one, the later row wins.

use crate::Series;
use argus_model::lineprotocol::series_name;
use argus_model::{Labels, METRIC_NAME, Sample};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

/// Columns that are Flux's bookkeeping, not labels.
const NOT_LABELS: [&str; 8] = ["result", "table", "_start", "_stop", "_time", "_value", "_measurement", "_field"];

/// The annotations and header of the table being read.
#[derive(Default)]
struct Table {
    datatypes: Vec<String>,
    defaults: Vec<String>,
    header: Option<Header>,
}

struct Header {
    time: usize,
    value: usize,
    measurement: Option<usize>,
    field: Option<usize>,
    /// (column, label name)
    labels: Vec<(usize, String)>,
    /// An error table: the server's message and reference columns.
    error: Option<(usize, Option<usize>)>,
}

/// The series of an annotated CSV answer, sorted by labels; an error table becomes the error.
pub(super) fn parse(text: &str) -> Result<Vec<Series>, String> {
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut table = Table::default();
    let mut series: BTreeMap<Labels, Vec<Sample>> = BTreeMap::new();
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(format!("annotated csv: {e}")),
        }
        let line = record.position().map_or(0, |p| p.line());
        let first = record.get(0).unwrap_or("");
        if record.len() == 1 && first.is_empty() {
            // An empty row ends a table; the next brings its own annotations and header.
            table = Table::default();
            continue;
        }
        if let Some(annotation) = first.strip_prefix('#') {
            if table.header.is_some() {
                table = Table::default();
            }
            let values = record.iter().skip(1).map(str::to_string).collect();
            match annotation {
                "datatype" => table.datatypes = values,
                "default" => table.defaults = values,
                _ => {}
            }
            continue;
        }
        let cells: Vec<&str> = record.iter().skip(1).collect();
        match &table.header {
            None => table.header = Some(header(&cells, &table.datatypes).map_err(|e| format!("line {line}: {e}"))?),
            Some(h) => {
                if let Some((message, reference)) = h.error {
                    let cell = |i: usize| cells.get(i).copied().unwrap_or("");
                    return Err(match reference.map(cell).filter(|r| !r.is_empty()) {
                        Some(r) => format!("influxdb: {} (reference {r})", cell(message)),
                        None => format!("influxdb: {}", cell(message)),
                    });
                }
                if let Some((labels, sample)) = row(h, &table, &cells).map_err(|e| format!("line {line}: {e}"))? {
                    series.entry(labels).or_default().push(sample);
                }
            }
        }
    }
    Ok(series
        .into_iter()
        .map(|(labels, mut samples)| {
            // Stable: among equal times the later row stays last, and dedup keeps it.
            samples.sort_by_key(|s| s.t);
            samples.dedup_by(|later, earlier| {
                let same = later.t == earlier.t;
                if same {
                    *earlier = *later;
                }
                same
            });
            Series { labels: Arc::new(labels), samples }
        })
        .collect())
}

fn header(names: &[&str], datatypes: &[String]) -> Result<Header, String> {
    let find = |name: &str| names.iter().position(|n| *n == name);
    if let Some(message) = find("error") {
        return Ok(Header {
            time: 0,
            value: 0,
            measurement: None,
            field: None,
            labels: Vec::new(),
            error: Some((message, find("reference"))),
        });
    }
    let (Some(time), Some(value)) = (find("_time"), find("_value")) else {
        return Err(format!("a table without _time and _value columns: {}", names.join(",")));
    };
    let labels = names
        .iter()
        .enumerate()
        .filter(|&(i, &n)| {
            !NOT_LABELS.contains(&n) && n != METRIC_NAME && datatypes.get(i).is_none_or(|t| t == "string")
        })
        .map(|(i, n)| (i, n.to_string()))
        .collect();
    Ok(Header { time, value, measurement: find("_measurement"), field: find("_field"), labels, error: None })
}

/// One record row as a sample, or `None` for rows that hold no number.
fn row(h: &Header, t: &Table, cells: &[&str]) -> Result<Option<(Labels, Sample)>, String> {
    // An empty cell takes the column's `#default`.
    let cell = |i: usize| match cells.get(i).copied().unwrap_or("") {
        "" => t.defaults.get(i).map_or("", String::as_str),
        v => v,
    };
    let kind = |i: usize| t.datatypes.get(i).map_or("", String::as_str);
    let raw = cell(h.value);
    if raw.is_empty() {
        return Ok(None);
    }
    let bad = |what: &str| format!("{what} {raw:?} is not a {}", kind(h.value));
    let v = match kind(h.value) {
        // Rust reads Flux's spellings of the specials: "NaN", "+Inf", "-Inf".
        "double" => raw.parse::<f64>().map_err(|_| bad("_value"))?,
        "long" => raw.parse::<i64>().map_err(|_| bad("_value"))? as f64,
        "unsignedLong" => raw.parse::<u64>().map_err(|_| bad("_value"))? as f64,
        "boolean" => match raw {
            "true" => 1.0,
            "false" => 0.0,
            _ => return Err(bad("_value")),
        },
        // No type given: a number if it reads as one.
        "" => match raw.parse::<f64>() {
            Ok(v) => v,
            Err(_) => return Ok(None),
        },
        // Strings are events; durations and bytes are not samples.
        _ => return Ok(None),
    };
    let time = cell(h.time);
    let ms = match kind(h.time) {
        "dateTime:number" | "long" => {
            time.parse::<i64>().map_err(|_| format!("_time {time:?} is not a number"))?.div_euclid(1_000_000)
        }
        _ => rfc3339_ms(time).ok_or_else(|| format!("_time {time:?} is not an RFC 3339 time"))?,
    };
    let mut name = String::new();
    series_name(h.measurement.map_or("", cell), h.field.map_or("", cell), &mut name);
    let pairs = h.labels.iter().map(|(i, n)| (n.as_str(), cell(*i))).chain([(METRIC_NAME, name.as_str())]);
    Ok(Some((Labels::from_pairs(pairs), Sample::new(ms, v))))
}

/// `2023-01-01T00:52:00.123456789Z` as milliseconds (the sub-millisecond part cut off).
fn rfc3339_ms(s: &str) -> Option<i64> {
    let t = humantime::parse_rfc3339(s).ok()?;
    i64::try_from(t.duration_since(UNIX_EPOCH).ok()?.as_millis()).ok()
}

#[cfg(test)]
mod tests;
