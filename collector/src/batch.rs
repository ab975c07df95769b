//! Points and batches: what sources write and sinks ship.
//!
//! A point is a line-protocol point (measurement, tags, fields, time); each numeric field becomes the
//! series `{measurement}_{field}` with the tags as labels, exactly as the store and VictoriaMetrics map
//! line protocol, and each string field becomes an event of that name.

use argus_model::lineprotocol::{self, Line};
use argus_model::{Event, Labels, METRIC_NAME, Sample};
use std::borrow::Cow;

/// One point: a measurement with tags and fields at one time (milliseconds since the Unix epoch).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub measurement: Cow<'static, str>,
    /// Sorted by name once the agent has stamped the global labels (`Batch::stamp`).
    pub tags: Vec<(String, String)>,
    pub fields: Vec<(Cow<'static, str>, FieldValue)>,
    pub t: i64,
}

/// A field value: a number (a sample) or text (an event).
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    Num(f64),
    Text(String),
}

/// The points of one collection of one source, or several merged for shipping.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub points: Vec<Point>,
}

// === impl Point ===

impl Point {
    pub fn new(measurement: impl Into<Cow<'static, str>>, t: i64) -> Point {
        Point { measurement: measurement.into(), tags: Vec::new(), fields: Vec::new(), t }
    }

    /// A sample under a name kept exactly (a scraped metric): no measurement, the name as the field, so
    /// the series is the name itself. In line protocol it is split at its first `_` into measurement and
    /// field, which the store and VictoriaMetrics join back into the same name; a name without `_` (or
    /// starting with one) becomes `{name}_value`.
    pub fn scraped(name: String, v: f64, t: i64) -> Point {
        Point {
            measurement: Cow::Borrowed(""),
            tags: Vec::new(),
            fields: vec![(Cow::Owned(name), FieldValue::Num(v))],
            t,
        }
    }

    /// Adds a tag; an empty value means "absent", as in Prometheus, and is left out.
    pub fn tag(mut self, name: &str, value: impl Into<String>) -> Point {
        let value = value.into();
        if !value.is_empty() {
            self.tags.push((name.to_string(), value));
        }
        self
    }

    pub fn field(mut self, name: impl Into<Cow<'static, str>>, v: f64) -> Point {
        self.fields.push((name.into(), FieldValue::Num(v)));
        self
    }

    /// Adds the field only when the value is known: a metric the hardware does not report is absent,
    /// never zero.
    pub fn field_opt(self, name: impl Into<Cow<'static, str>>, v: Option<f64>) -> Point {
        match v {
            Some(v) => self.field(name, v),
            None => self,
        }
    }

    pub fn text(mut self, name: impl Into<Cow<'static, str>>, text: impl Into<String>) -> Point {
        self.fields.push((name.into(), FieldValue::Text(text.into())));
        self
    }

    /// Appends the point as one line of line protocol (millisecond precision), without a newline (a
    /// scraped point, without measurement, as one line per field).
    pub fn encode_lp(&self, out: &mut String) {
        if self.measurement.is_empty() {
            for (i, (name, v)) in self.fields.iter().enumerate() {
                let (m, f) = match name.split_once('_') {
                    Some((m, f)) if !m.is_empty() && !f.is_empty() => (m, f),
                    _ => (name.as_ref(), "value"),
                };
                if i > 0 {
                    out.push('\n');
                }
                let mut p = Point::new(m.to_string(), self.t);
                p.tags = self.tags.clone();
                p.fields.push((Cow::Owned(f.to_string()), v.clone()));
                p.encode_lp(out);
            }
            return;
        }
        let line = Line {
            measurement: Cow::Borrowed(&self.measurement),
            tags: self.tags.iter().map(|(k, v)| (Cow::Borrowed(k.as_str()), Cow::Borrowed(v.as_str()))).collect(),
            fields: self
                .fields
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        FieldValue::Num(x) => lineprotocol::FieldValue::Float(*x),
                        FieldValue::Text(s) => lineprotocol::FieldValue::Str(Cow::Borrowed(s.as_str())),
                    };
                    (Cow::Borrowed(k.as_ref()), v)
                })
                .collect(),
            timestamp: Some(self.t),
        };
        lineprotocol::encode(&line, out);
    }
}

// === impl Batch ===

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    pub fn push(&mut self, p: Point) {
        // A point without fields has no line-protocol spelling; sources build them field by field, so an
        // all-absent point is simply not written.
        if !p.fields.is_empty() {
            self.points.push(p);
        }
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// Leaves out NaN and infinite values (points left without a field go too); returns how many.
    /// Line protocol cannot carry them, and a store refuses a whole body for one.
    pub fn retain_finite(&mut self) -> u64 {
        let mut gone = 0;
        for p in &mut self.points {
            let before = p.fields.len();
            p.fields.retain(|(_, v)| !matches!(v, FieldValue::Num(x) if !x.is_finite()));
            gone += (before - p.fields.len()) as u64;
        }
        self.points.retain(|p| !p.fields.is_empty());
        gone
    }

    /// Numeric fields in all points: the samples this batch carries.
    pub fn samples(&self) -> usize {
        self.points.iter().map(|p| p.fields.iter().filter(|(_, v)| matches!(v, FieldValue::Num(_))).count()).sum()
    }

    pub fn append(&mut self, other: &mut Batch) {
        self.points.append(&mut other.points);
    }

    /// Adds the global labels to every point (a tag the source set itself wins) and sorts the tags by
    /// name, as line protocol recommends and the encoders expect.
    pub fn stamp(&mut self, global: &[(String, String)]) {
        for p in &mut self.points {
            for (k, v) in global {
                if !p.tags.iter().any(|(n, _)| n == k) {
                    p.tags.push((k.clone(), v.clone()));
                }
            }
            p.tags.sort();
        }
    }

    /// The whole batch as line protocol, one point per line, each ending in a newline.
    pub fn to_line_protocol(&self) -> String {
        let mut out = String::with_capacity(self.points.len() * 96);
        for p in &self.points {
            p.encode_lp(&mut out);
            out.push('\n');
        }
        out
    }

    /// Samples (one per numeric field) and events (one per text field), named `{measurement}_{field}`.
    pub fn to_series(&self) -> (Vec<(Labels, Sample)>, Vec<Event>) {
        let mut samples = Vec::new();
        let mut events = Vec::new();
        let mut name = String::new();
        for p in &self.points {
            let base = Labels::from_pairs(p.tags.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            for (field, value) in &p.fields {
                name.clear();
                lineprotocol::series_name(&p.measurement, field, &mut name);
                let mut labels = base.clone();
                labels.set(METRIC_NAME, &name);
                match value {
                    FieldValue::Num(v) => samples.push((labels, Sample::new(p.t, *v))),
                    FieldValue::Text(text) => events.push(Event { labels, t: p.t, text: text.clone() }),
                }
            }
        }
        (samples, events)
    }

    /// The exposition-style text the golden tests compare: one `name{labels} value` line per sample and
    /// one `name{labels} "text"` line per event, sorted, without timestamps.
    pub fn to_exposition(&self) -> String {
        let (samples, events) = self.to_series();
        let mut lines: Vec<String> = samples.iter().map(|(l, s)| format!("{l} {}", s.v)).collect();
        lines.extend(events.iter().map(|e| format!("{} {:?}", e.labels, e.text)));
        lines.sort();
        let mut out = lines.join("\n");
        out.push('\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    fn sample_batch() -> Batch {
        let mut b = Batch::new();
        b.push(Point::new("gpu", 1000).tag("gpu", "0").tag("uuid", "GPU-1").field("power_watts", 312.5));
        b.push(Point::new("gpu", 1000).tag("gpu", "0").text("xid", "Xid 79: fallen off the bus"));
        b.push(Point::new("disk", 1000).tag("device", "").field_opt("x", None));
        b.stamp(&[("host".into(), "n1".into()), ("gpu".into(), "ignored".into())]);
        b
    }

    #[test]
    fn line_protocol_sorts_tags_and_skips_empty_points() {
        expect![[r#"
            gpu,gpu=0,host=n1,uuid=GPU-1 power_watts=312.5 1000
            gpu,gpu=0,host=n1 xid="Xid 79: fallen off the bus" 1000
        "#]]
        .assert_eq(&sample_batch().to_line_protocol());
    }

    #[test]
    fn scraped_names_survive_line_protocol() {
        let mut b = Batch::new();
        b.push(Point::scraped("vllm:num_requests_running".into(), 3.0, 1000).tag("job", "vllm"));
        b.push(Point::scraped("up".into(), 1.0, 1000));
        expect![[r#"
            vllm:num,job=vllm requests_running=3 1000
            up value=1 1000
        "#]]
        .assert_eq(&b.to_line_protocol());
        expect![[r#"
            up{} 1
            vllm:num_requests_running{job="vllm"} 3
        "#]]
        .assert_eq(&b.to_exposition());
    }

    #[test]
    fn series_follow_the_store_mapping() {
        expect![[r#"
            gpu_power_watts{gpu="0", host="n1", uuid="GPU-1"} 312.5
            gpu_xid{gpu="0", host="n1"} "Xid 79: fallen off the bus"
        "#]]
        .assert_eq(&sample_batch().to_exposition());
        assert_eq!(sample_batch().samples(), 1);
    }
}
