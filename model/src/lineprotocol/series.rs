//! Points to series, as VictoriaMetrics maps them with its default flags: `-influxMeasurementFieldSeparator=_`,
//! `-influxSkipSingleField=false` (a single field is still suffixed) and `-influxSkipMeasurement=false`.
//! Its `app/vminsert/influx` builds the metric name as `{measurement}_{field}`, or just `{field}` when
//! the measurement is empty, and keeps the tags as labels.

use crate::{Event, Labels, METRIC_NAME, Sample};

use super::{FieldValue, Line, Precision};

/// Numeric fields as samples and string fields as events, each labelled `__name__` plus the point's tags
/// plus the extra labels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Converted {
    pub samples: Vec<(Labels, Sample)>,
    pub events: Vec<Event>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    /// `index` is the point's 0-based position in the slice given to `to_series`.
    #[error("point {index}: timestamp {timestamp} in {precision:?} does not fit in milliseconds")]
    TimestampOutOfRange { index: usize, timestamp: i64, precision: Precision },
}

/// Appends the series name of one field: `{measurement}_{field}`, or `{field}` for an empty measurement.
pub fn series_name(measurement: &str, field: &str, out: &mut String) {
    if !measurement.is_empty() {
        out.push_str(measurement);
        out.push('_');
    }
    out.push_str(field);
}

/// A field's sample value: numbers as f64 (integers beyond 2^53 round), booleans as 1 and 0, strings
/// none (they become events).
pub fn field_as_f64(v: &FieldValue<'_>) -> Option<f64> {
    match v {
        FieldValue::Float(f) => Some(*f),
        FieldValue::Int(i) => Some(*i as f64),
        FieldValue::UInt(u) => Some(*u as f64),
        FieldValue::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        FieldValue::Str(_) => None,
    }
}

/// Converts parsed points: one sample per numeric field and one event per string field. Timestamps are
/// converted from `precision`; points without one get `default_ts_ms`.
///
/// Extra labels override tags of the same name (as VictoriaMetrics' `extra_label` query argument does;
/// note that its v1 `db` argument does the opposite and yields to a `db` tag, which a caller wanting that
/// must do itself). `__name__` always comes from the measurement and field, even if a tag is so named.
pub fn to_series(
    lines: &[Line<'_>],
    precision: Precision,
    default_ts_ms: i64,
    extra_labels: &[(&str, &str)],
) -> Result<Converted, ConvertError> {
    let mut out = Converted::default();
    let mut name = String::new();
    for (index, line) in lines.iter().enumerate() {
        let t = match line.timestamp {
            None => default_ts_ms,
            Some(timestamp) => precision.to_millis(timestamp).ok_or(ConvertError::TimestampOutOfRange {
                index,
                timestamp,
                precision,
            })?,
        };
        let tags = line.tags.iter().map(|(k, v)| (k.as_ref(), v.as_ref()));
        let base = Labels::from_pairs(tags.chain(extra_labels.iter().copied()));
        for (field, value) in &line.fields {
            name.clear();
            series_name(&line.measurement, field, &mut name);
            let mut labels = base.clone();
            labels.set(METRIC_NAME, &name);
            match value {
                FieldValue::Str(text) => out.events.push(Event { labels, t, text: text.to_string() }),
                v => {
                    if let Some(x) = field_as_f64(v) {
                        out.samples.push((labels, Sample::new(t, x)));
                    }
                }
            }
        }
    }
    Ok(out)
}
