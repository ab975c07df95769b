//! Series as InfluxDB line protocol, for the backends that write it (VictoriaMetrics by line protocol,
//! InfluxDB 2). The name mapping is chosen so that VictoriaMetrics' and our own ingest, which name a
//! field's series `{measurement}_{field}`, give back the name that was written.

use super::BackendError;
use crate::remote_write::WriteSeries;
use argus_model::METRIC_NAME;
use argus_model::lineprotocol::{FieldValue, Line, encode as encode_line};
use std::borrow::Cow;

/// The measurement and field a metric name is written as: split at the last `_` that has a character
/// on both sides, so `gpu_power_watts` is measurement `gpu_power`, field `watts`, and reads back as
/// `gpu_power_watts`. A name without such an `_` (`up`) becomes measurement `up`, field `value`, and
/// reads back as `up_value`: line protocol has no spelling for a field without a measurement.
pub fn split_name(name: &str) -> (&str, &str) {
    let b = name.as_bytes();
    match (1..b.len().saturating_sub(1)).rev().find(|&i| b[i] == b'_') {
        // `_` is ASCII, so `i` and `i + 1` are char boundaries.
        Some(i) => (&name[..i], &name[i + 1..]),
        None => (name, "value"),
    }
}

/// One line per sample, timestamps in milliseconds (send with `precision=ms`). Refuses series without
/// a metric name and non-finite values, which line protocol cannot carry.
pub(crate) fn encode(series: &[WriteSeries]) -> Result<String, BackendError> {
    let mut out = String::with_capacity(series.iter().map(|s| s.samples.len() * 64).sum());
    for s in series {
        let Some(name) = s.labels.metric_name() else {
            return Err(BackendError::InvalidWrite(format!("series {} has no metric name", s.labels)));
        };
        let (measurement, field) = split_name(name);
        let mut line = Line {
            measurement: Cow::Borrowed(measurement),
            tags: s
                .labels
                .iter()
                .filter(|l| l.name != METRIC_NAME)
                .map(|l| (Cow::Borrowed(l.name.as_str()), Cow::Borrowed(l.value.as_str())))
                .collect(),
            fields: vec![(Cow::Borrowed(field), FieldValue::Float(0.0))],
            timestamp: None,
        };
        for sample in &s.samples {
            if !sample.v.is_finite() {
                return Err(BackendError::InvalidWrite(format!(
                    "series {} at {}: line protocol cannot carry the value {}; use remote_write",
                    s.labels, sample.t, sample.v
                )));
            }
            line.fields[0].1 = FieldValue::Float(sample.v);
            line.timestamp = Some(sample.t);
            encode_line(&line, &mut out);
            out.push('\n');
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use argus_model::{Labels, Sample};
    use expect_test::{Expect, expect};

    fn check_split(name: &str, want: Expect) {
        let (m, f) = split_name(name);
        want.assert_eq(&format!("{m} | {f}"));
    }

    #[test]
    fn names_split_at_the_last_inner_underscore() {
        check_split("gpu_util", expect!["gpu | util"]);
        check_split("gpu_power_watts", expect!["gpu_power | watts"]);
        check_split("up", expect!["up | value"]);
        check_split("_up", expect!["_up | value"]);
        check_split("up_", expect!["up_ | value"]);
        check_split("a__b", expect!["a_ | b"]);
        check_split("a_", expect!["a_ | value"]);
        check_split("é_ü", expect!["é | ü"]);
    }

    #[test]
    fn every_split_name_maps_back_through_series_name() {
        for name in ["gpu_util", "gpu_power_watts", "a__b", "x_y_z_", "é_ü"] {
            let (m, f) = split_name(name);
            let mut back = String::new();
            argus_model::lineprotocol::series_name(m, f, &mut back);
            assert_eq!(back, name);
        }
    }

    #[test]
    fn lines_carry_tags_and_millisecond_stamps() {
        let s = WriteSeries {
            labels: Labels::from_pairs([("__name__", "gpu_util"), ("host", "a b"), ("gpu", "0")]),
            samples: vec![Sample::new(1_700_000_000_000, 0.5), Sample::new(1_700_000_010_000, 100.0)],
        };
        expect![[r#"
            gpu,gpu=0,host=a\ b util=0.5 1700000000000
            gpu,gpu=0,host=a\ b util=100 1700000010000
        "#]]
        .assert_eq(&encode(&[s]).unwrap());
        let nan =
            WriteSeries { labels: Labels::from_pairs([("__name__", "x_y")]), samples: vec![Sample::new(1, f64::NAN)] };
        assert!(matches!(encode(&[nan]), Err(BackendError::InvalidWrite(_))));
        let nameless = WriteSeries { labels: Labels::from_pairs([("a", "b")]), samples: vec![Sample::new(1, 1.0)] };
        assert!(matches!(encode(&[nameless]), Err(BackendError::InvalidWrite(_))));
    }
}
