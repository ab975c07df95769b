use std::fmt::Write as _;

use argus_model::{Labels, Sample};
use expect_test::{Expect, expect};
use proptest::prelude::*;
use prost::Message;

use super::{Decoded, RemoteWriteError, WriteSeries, decode, decode_with_limit, encode, proto};

/// Prometheus' stale marker: a NaN whose payload must survive storage.
const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;

/// A request written byte by byte from prompb's remote.proto and types.proto, one field a line, so the
/// tags of every message we declare are checked against the spec rather than against prost.
const GOLDEN: &str = "
    0a 40                         # WriteRequest.timeseries (1), 64 bytes
      0a 0e                       #   TimeSeries.labels (1), 14 bytes
        0a 08 5f5f6e616d655f5f    #     Label.name (1) = __name__
        12 02 7570                #     Label.value (2) = up
      0a 08 0a 03 6a6f62 12 01 61 #   TimeSeries.labels (1): job = a
      12 0c                       #   TimeSeries.samples (2), 12 bytes
        09 000000000000f03f       #     Sample.value (1), double = 1.0
        10 e807                   #     Sample.timestamp (2), int64 = 1000
      1a 14                       #   TimeSeries.exemplars (3), 20 bytes
        0a 06 0a 01 74 12 01 78   #     Exemplar.labels (1): t = x
        11 0000000000000040       #     Exemplar.value (2), double = 2.0
        18 e807                   #     Exemplar.timestamp (3), int64 = 1000
      22 00                       #   TimeSeries.histograms (4), empty
    1a 0c                         # WriteRequest.metadata (3), 12 bytes
      08 02                       #   MetricMetadata.type (1) = GAUGE
      12 02 7570                  #   MetricMetadata.metric_family_name (2) = up
      22 01 68                    #   MetricMetadata.help (4) = h
      2a 01 73                    #   MetricMetadata.unit (5) = s
";

#[test]
fn golden_request_pins_every_tag() {
    let bytes = hex(GOLDEN);
    let request = proto::WriteRequest::decode(bytes.as_slice()).unwrap();
    expect![[r#"
        WriteRequest {
            timeseries: [
                TimeSeries {
                    labels: [
                        Label {
                            name: "__name__",
                            value: "up",
                        },
                        Label {
                            name: "job",
                            value: "a",
                        },
                    ],
                    samples: [
                        Sample {
                            value: 1.0,
                            timestamp: 1000,
                        },
                    ],
                    exemplars: [
                        Exemplar {
                            labels: [
                                Label {
                                    name: "t",
                                    value: "x",
                                },
                            ],
                            value: 2.0,
                            timestamp: 1000,
                        },
                    ],
                    histograms: [
                        Histogram,
                    ],
                },
            ],
            metadata: [
                MetricMetadata {
                    r#type: Gauge,
                    metric_family_name: "up",
                    help: "h",
                    unit: "s",
                },
            ],
        }
    "#]]
    .assert_debug_eq(&request);
    assert_eq!(request.encode_to_vec(), bytes, "encoding must give back the golden bytes");
    check(
        GOLDEN,
        expect![[r#"
        up{job="a"} 1.0@1000
        skipped: 1 histograms, 1 exemplars
    "#]],
    );
}

#[test]
fn decode_protobuf() {
    check(
        "",
        expect![[r#"
        skipped: 0 histograms, 0 exemplars
    "#]],
    );
    // Unknown top-level fields of every wire type: varint, fixed64, length-delimited, fixed32.
    check(
        "10 05  21 0000000000000000  2a 00  7d 00000000",
        expect![[r#"
        skipped: 0 histograms, 0 exemplars
    "#]],
    );
    // A series with a histogram and no float sample is left out, but its histogram is counted.
    check(
        "0a 0a  0a 06 0a 01 61 12 01 62  22 00",
        expect![[r#"
        skipped: 1 histograms, 0 exemplars
    "#]],
    );
    check("0a 00", expect!["400 invalid series 0: empty label set"]);
    check("0a", expect!["400 invalid protobuf: write request: truncated varint"]);
    check("0a 05 0a", expect!["400 invalid protobuf: write request: field of 5 bytes with 1 left"]);
    check("0a ffffffffffffffffff7f", expect!["400 invalid protobuf: write request: varint overflows 64 bits"]);
    check("00", expect!["400 invalid protobuf: write request: field number 0"]);
    check("0b", expect!["400 invalid protobuf: write request: unsupported wire type 3 for field 1"]);
    check("08 01", expect!["400 invalid protobuf: write request: timeseries field has wire type 0, want 2"]);
    check(
        "0a 02 0a 05",
        expect![
            "400 invalid protobuf: series 0: failed to decode Protobuf message: TimeSeries.labels: buffer underflow"
        ],
    );
    check(
        "0a 07 0a 05 0a 03 0a 01 ff",
        expect![[
            r#"400 invalid protobuf: series 0: failed to decode Protobuf message: Label.name: TimeSeries.labels: invalid string value: data is not UTF-8 encoded"#
        ]],
    );
}

#[test]
fn validate_series() {
    check_series(&[(&[], &[(1, 1.0)])], expect!["400 invalid series 0: empty label set"]);
    check_series(&[(&[("job", "")], &[(1, 1.0)])], expect!["400 invalid series 0: empty label set"]);
    check_series(
        &[(&[("__name__", "up"), ("", "x")], &[(1, 1.0)])],
        expect![[r#"400 invalid series 0: empty label name in up{="x"}"#]],
    );
    check_series(
        &[(&[("__name__", "up"), ("job", "a"), ("job", "b")], &[(1, 1.0)])],
        expect![[r#"400 invalid series 0: duplicate label name "job" in up{job="b"}"#]],
    );
    check_series(
        &[(&[("__name__", "up")], &[(1, 1.0)]), (&[("__name__", "up"), ("__name__", "down")], &[])],
        expect![[r#"400 invalid series 1: duplicate label name "__name__" in down{}"#]],
    );
    // Lenient: names outside the Prometheus charset, no metric name, unsorted labels, empty values.
    check_series(
        &[
            (&[("__name__", "up"), ("http.method", "GET"), ("0day", "x")], &[(1, 1.0)]),
            (&[("job", "a")], &[(2, 2.0)]),
            (&[("job", "a"), ("__name__", "up"), ("instance", "")], &[(3, 3.0), (3, 4.0), (2, 5.0)]),
        ],
        expect![[r#"
            up{0day="x", http.method="GET"} 1.0@1
            {job="a"} 2.0@2
            up{job="a"} 3.0@3 4.0@3 5.0@2
            skipped: 0 histograms, 0 exemplars
        "#]],
    );
}

#[test]
fn decode_body() {
    check_body(b"", expect!["400 invalid snappy block: snappy: corrupt input (empty)"]);
    check_body(
        b"not snappy at all",
        expect![
            "400 invalid snappy block: snappy: corrupt input (expected valid offset but got offset 1853038708; dst position: 0)"
        ],
    );
    let whole = encode(&[series(&[("__name__", "up")], &[(1, 1.0), (2, 2.0)])]).unwrap();
    check_body(
        &whole[..whole.len() / 2],
        expect![
            "400 invalid snappy block: snappy: corrupt input (expected literal read of length 22; remaining src: 20; remaining dst: 44)"
        ],
    );
    // Remote write uses the snappy block format; a framed stream must not be mistaken for one.
    let mut framed = snap::write::FrameEncoder::new(Vec::new());
    std::io::Write::write_all(&mut framed, &hex("0a 00")).unwrap();
    check_body(
        &framed.into_inner().unwrap(),
        expect![
            "400 invalid snappy block: snappy: corrupt input (expected valid offset but got offset 1884315982; dst position: 1)"
        ],
    );
    // A snappy bomb: six bytes whose header claims 4 GiB.
    check_body(
        &hex("ffffffff0f 00"),
        expect!["413 decompressed body of 4294967295 bytes exceeds the limit of 33554432 bytes"],
    );
}

#[test]
fn limit_is_inclusive() {
    let body = encode(&[series(&[("__name__", "up")], &[(1, 1.0)])]).unwrap();
    let size = snap::raw::decompress_len(&body).unwrap();
    assert!(decode_with_limit(&body, size).is_ok());
    assert_eq!(decode_with_limit(&body, size - 1), Err(RemoteWriteError::TooLarge { limit: size - 1, size }));
}

#[test]
fn round_trip() {
    let sent = [
        series(
            &[("__name__", "gpu_util"), ("gpu", "0"), ("host", "a")],
            &[(i64::MIN, 0.0), (-1, f64::NEG_INFINITY), (0, f64::INFINITY), (i64::MAX, f64::MIN_POSITIVE)],
        ),
        series(&[("__name__", "up")], &[(1_700_000_000_000, f64::from_bits(STALE_NAN)), (1_700_000_015_000, 1.0)]),
    ];
    let got = decode(&encode(&sent).unwrap()).unwrap();
    expect![[r#"
        gpu_util{gpu="0", host="a"} 0.0@-9223372036854775808 -inf@-1 inf@0 2.2250738585072014e-308@9223372036854775807
        up{} NaN(0x7ff0000000000002)@1700000000000 1.0@1700000015000
        skipped: 0 histograms, 0 exemplars
    "#]]
    .assert_eq(&render(Ok(got.clone())));
    assert_same(&sent, &got.series);
}

/// Proto3 leaves out a field equal to its default and prost compares floats by value, so -0.0 is sent as
/// 0.0 (Prometheus' gogo encoder does the same). Decoding keeps it when a sender writes it out.
#[test]
fn negative_zero_is_sent_as_zero() {
    let sent = [series(&[("__name__", "up")], &[(1, -0.0)])];
    let got = decode(&encode(&sent).unwrap()).unwrap();
    assert_eq!(got.series[0].samples[0].v.to_bits(), 0);
    check(
        "0a 13  0a 06 0a 01 61 12 01 62  12 09 09 0000000000000080",
        expect![[r#"
        {a="b"} -0.0@0
        skipped: 0 histograms, 0 exemplars
    "#]],
    );
}

#[test]
fn stale_marker_keeps_its_bits() {
    let sent = [series(&[("__name__", "up")], &[(1, f64::from_bits(STALE_NAN))])];
    let got = decode(&encode(&sent).unwrap()).unwrap();
    assert_eq!(got.series[0].samples[0].v.to_bits(), STALE_NAN);
}

#[test]
fn encode_sorts_labels_as_senders_must() {
    let body = encode(&[series(&[("job", "a"), ("__name__", "up")], &[(1, 1.0)])]).unwrap();
    let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
    let request = proto::WriteRequest::decode(raw.as_slice()).unwrap();
    let names: Vec<&str> = request.timeseries[0].labels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["__name__", "job"]);
}

proptest! {
    #[test]
    fn round_trip_any(sent in prop::collection::vec(any_series(), 0..4)) {
        let got = decode(&encode(&sent).unwrap()).unwrap();
        assert_same(&sent, &got.series);
    }

    #[test]
    fn garbage_never_panics(body in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = decode(&body);
        let _ = decode(&snap::raw::Encoder::new().compress_vec(&body).unwrap());
    }
}

// === helpers ===

/// Decodes a request given as hex (`#` starts a comment), wrapped in snappy as a sender would.
fn check(protobuf_hex: &str, expect: Expect) {
    let body = snap::raw::Encoder::new().compress_vec(&hex(protobuf_hex)).unwrap();
    check_body(&body, expect);
}

type SeriesSpec<'a> = (&'a [(&'a str, &'a str)], &'a [(i64, f64)]);

/// Decodes a request built from raw protobuf series, which may break rules `WriteSeries` cannot.
fn check_series(specs: &[SeriesSpec<'_>], expect: Expect) {
    let request = proto::WriteRequest {
        timeseries: specs
            .iter()
            .map(|(labels, samples)| proto::TimeSeries {
                labels: labels
                    .iter()
                    .map(|(n, v)| proto::Label { name: n.to_string(), value: v.to_string() })
                    .collect(),
                samples: samples.iter().map(|&(timestamp, value)| proto::Sample { value, timestamp }).collect(),
                ..Default::default()
            })
            .collect(),
        metadata: Vec::new(),
    };
    check_body(&snap::raw::Encoder::new().compress_vec(&request.encode_to_vec()).unwrap(), expect);
}

fn check_body(body: &[u8], expect: Expect) {
    expect.assert_eq(&render(decode(body)));
}

/// One series a line, NaNs with their bits so payloads show; or the status and error.
fn render(result: Result<Decoded, RemoteWriteError>) -> String {
    let decoded = match result {
        Ok(decoded) => decoded,
        Err(e) => return format!("{} {e}", e.http_status()),
    };
    let mut out = String::new();
    for s in &decoded.series {
        write!(out, "{}", s.labels).unwrap();
        for sample in &s.samples {
            if sample.v.is_nan() {
                write!(out, " NaN({:#018x})@{}", sample.v.to_bits(), sample.t).unwrap();
            } else {
                write!(out, " {:?}@{}", sample.v, sample.t).unwrap();
            }
        }
        out.push('\n');
    }
    writeln!(out, "skipped: {} histograms, {} exemplars", decoded.skipped_histograms, decoded.skipped_exemplars)
        .unwrap();
    out
}

fn assert_same(sent: &[WriteSeries], got: &[WriteSeries]) {
    assert_eq!(sent.len(), got.len());
    for (s, g) in sent.iter().zip(got) {
        assert_eq!(s.labels, g.labels);
        assert_eq!(s.samples.len(), g.samples.len());
        for (a, b) in s.samples.iter().zip(&g.samples) {
            assert!(a.same_as(b), "{a:?} != {b:?} in {}", s.labels);
        }
    }
}

fn series(labels: &[(&str, &str)], samples: &[(i64, f64)]) -> WriteSeries {
    WriteSeries {
        labels: Labels::from_pairs(labels.iter().copied()),
        samples: samples.iter().map(|&(t, v)| Sample::new(t, v)).collect(),
    }
}

fn any_series() -> impl Strategy<Value = WriteSeries> {
    (
        "[a-z]{1,4}",
        prop::collection::vec(("[a-zA-Z_.]{1,6}", ".{0,6}"), 0..4),
        prop::collection::vec((any::<i64>(), any::<u64>()), 1..4),
    )
        .prop_map(|(name, labels, samples)| {
            let mut labels = Labels::from_pairs(labels);
            labels.set("__name__", &name);
            WriteSeries {
                labels,
                samples: samples
                    .into_iter()
                    // -0.0 cannot be sent: see `negative_zero_is_sent_as_zero`.
                    .map(|(t, bits)| Sample::new(t, f64::from_bits(if bits == 1 << 63 { 0 } else { bits })))
                    .collect(),
            }
        })
}

/// Bytes from hex pairs; whitespace is ignored and `#` comments run to the end of the line.
fn hex(text: &str) -> Vec<u8> {
    let digits: String = text
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(|line| line.chars().filter(|c| !c.is_whitespace()))
        .collect();
    assert_eq!(digits.len() % 2, 0, "odd number of hex digits");
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap()).collect()
}
