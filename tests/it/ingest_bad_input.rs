//! Bad writes against the real server: each is answered with the right 4xx and a message naming what is
//! wrong and where, nothing of the rejected batch is stored, and the server stays healthy and writable.

use crate::support::server;

use argus_model::{Labels, Sample};
use argus_store::remote_write::{WriteSeries, encode, proto};
use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message;
use server::{Reply, Server, now_ms};
use std::io::Write;

/// Small limits, so the cases stay small.
const CONFIG: &str = r#"
[store]
max_line_bytes = 1024
max_labels_per_series = 8
"#;

/// One rejected request: where it goes, what it sends, and what must come back.
struct Case {
    name: &'static str,
    path: String,
    headers: Vec<(&'static str, &'static str)>,
    body: Vec<u8>,
    status: u16,
    /// Substrings of the JSON `message`.
    message: Vec<String>,
    /// The `errors` list as (line, column, substring of reason); empty: no `errors` key at all.
    errors: Vec<(u64, u64, String)>,
    /// Metric names the request carried, none of which may be stored afterwards.
    metrics: Vec<&'static str>,
}

const V2: &str = "/api/v2/write?org=o&bucket=b&precision=ms";

fn lines(v: &[String]) -> Vec<u8> {
    v.join("\n").into_bytes()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::default());
    e.write_all(data).expect("gzip");
    e.finish().expect("gzip")
}

fn cases(t: i64) -> Vec<Case> {
    let s = |x: &str| x.to_string();
    let long_line = format!("longline,tag={} value=2 {t}", "x".repeat(2000));
    let eight_tags = (1..=8).map(|i| format!("t{i}=v")).collect::<Vec<_>>().join(",");
    let seven_tags = (1..=7).map(|i| format!("t{i}=v")).collect::<Vec<_>>().join(",");
    let gz_good = gzip(format!("trunc_gz value=1 {t}\ntrunc_gz value=2 {}\n", t + 1).as_bytes());
    let rw_valid_snappy_bad_proto =
        snap::raw::Encoder::new().compress_vec(b"\xff\xff\xff\xff garbage").expect("snappy");
    // A snappy block starts with the uncompressed length as a varint; the rest never gets read.
    let mut rw_claims_300_mib = Vec::new();
    let mut n: u64 = 300 << 20;
    while n >= 0x80 {
        rw_claims_300_mib.push((n as u8) | 0x80);
        n >>= 7;
    }
    rw_claims_300_mib.extend([n as u8, 0, 0, 0]);
    let label = |name: &str, value: &str| proto::Label { name: name.into(), value: value.into() };
    let series = |labels: Vec<proto::Label>| proto::TimeSeries {
        labels,
        samples: vec![proto::Sample { value: 1.0, timestamp: t }],
        exemplars: vec![],
        histograms: vec![],
    };
    let request = proto::WriteRequest {
        timeseries: vec![
            series(vec![label("__name__", "rw_good")]),
            series(vec![label("__name__", "rw_dup"), label("job", "a"), label("job", "b")]),
        ],
        metadata: vec![],
    };
    let rw_repeated_label = snap::raw::Encoder::new().compress_vec(&request.encode_to_vec()).expect("snappy");
    let rw_too_many_labels = encode(&[WriteSeries {
        labels: Labels::from_pairs((0..9).map(|i| (format!("l{i}"), s("v"))).chain([(s("__name__"), s("rw_wide"))])),
        samples: vec![Sample::new(t, 1.0)],
    }])
    .expect("encode");
    vec![
        Case {
            name: "malformed lines among good ones",
            path: V2.into(),
            headers: vec![],
            body: lines(&[
                format!("mixed good=1 {t}"),
                s("mixed oops"),
                format!("mixed good=2 {}", t + 1),
                format!("mixed,host=a value=notanumber {t}"),
                format!("mixed good=3 {}", t + 2),
            ]),
            status: 400,
            message: vec![s("2 malformed line(s)"), s("nothing stored"), s("line 2, column 11")],
            errors: vec![(2, 11, s("expected '=' after field key")), (4, 20, s("invalid field value \"notanumber\""))],
            metrics: vec!["mixed_good", "mixed_value"],
        },
        Case {
            name: "invalid utf-8",
            path: V2.into(),
            headers: vec![],
            body: [
                format!("utf_bad value=1 {t}\nutf_bad,host=").as_bytes(),
                b"\xff\xfe",
                format!(" value=2 {t}").as_bytes(),
            ]
            .concat(),
            status: 400,
            message: vec![s("line 2, column 14")],
            errors: vec![(2, 14, s("invalid utf-8 at byte 43"))],
            metrics: vec!["utf_bad_value"],
        },
        Case {
            name: "truncated gzip",
            path: V2.into(),
            headers: vec![("Content-Encoding", "gzip")],
            body: gz_good[..gz_good.len() / 2].to_vec(),
            status: 400,
            message: vec![s("invalid gzip body")],
            errors: vec![],
            metrics: vec!["trunc_gz_value"],
        },
        Case {
            name: "unsupported content-encoding",
            path: V2.into(),
            headers: vec![("Content-Encoding", "br")],
            body: format!("enc_br value=1 {t}").into_bytes(),
            status: 415,
            message: vec![s("unsupported Content-Encoding \"br\"")],
            errors: vec![],
            metrics: vec!["enc_br_value"],
        },
        Case {
            name: "line longer than max_line_bytes",
            path: V2.into(),
            headers: vec![],
            body: lines(&[format!("longline value=1 {t}"), long_line.clone()]),
            status: 400,
            message: vec![s("line 2, column 1025")],
            errors: vec![(2, 1025, format!("line of {} bytes exceeds the limit of 1024 bytes", long_line.len()))],
            metrics: vec!["longline_value"],
        },
        Case {
            name: "timestamp more than 10 minutes in the future",
            path: V2.into(),
            headers: vec![],
            // `t` is a minute ago: this is 11 minutes ahead.
            body: lines(&[format!("future value=1 {t}"), format!("future value=2 {}", t + 12 * 60_000)]),
            status: 400,
            message: vec![s("line 2, column 1")],
            errors: vec![(2, 1, s("timestamp more than 10m in the future (store.max_future)"))],
            metrics: vec!["future_value"],
        },
        Case {
            name: "unknown v2 precision",
            path: "/api/v2/write?org=o&bucket=b&precision=xs".into(),
            headers: vec![],
            body: format!("prec_v2 value=1 {t}").into_bytes(),
            status: 400,
            message: vec![s("invalid precision \"xs\", want one of ns, us, ms, s")],
            errors: vec![],
            metrics: vec!["prec_v2_value"],
        },
        Case {
            name: "v2 precision spelled the v1 way",
            path: "/api/v2/write?org=o&bucket=b&precision=h".into(),
            headers: vec![],
            body: format!("prec_h value=1 {}", t / 3_600_000).into_bytes(),
            status: 400,
            message: vec![s("invalid precision \"h\"")],
            errors: vec![],
            metrics: vec!["prec_h_value"],
        },
        Case {
            name: "unknown v1 precision",
            path: "/write?db=x&precision=d".into(),
            headers: vec![],
            body: format!("prec_v1 value=1 {t}").into_bytes(),
            status: 400,
            message: vec![s("invalid precision \"d\", want one of n, ns, u, us, ms, s, m, h")],
            errors: vec![],
            metrics: vec!["prec_v1_value"],
        },
        Case {
            name: "too many labels",
            path: V2.into(),
            headers: vec![],
            body: lines(&[format!("wide value=1 {t}"), format!("wide,{eight_tags} value=2 {t}")]),
            status: 400,
            message: vec![s("line 2, column 1")],
            errors: vec![(2, 1, s("9 labels exceed the limit of 8 per series"))],
            metrics: vec!["wide_value"],
        },
        Case {
            name: "too many labels once v1 adds db",
            path: "/write?db=x&precision=ms".into(),
            headers: vec![],
            body: lines(&[format!("widedb value=1 {t}"), format!("widedb,{seven_tags} value=2 {t}")]),
            status: 400,
            message: vec![s("line 2, column 1")],
            errors: vec![(2, 1, s("9 labels exceed the limit of 8 per series"))],
            metrics: vec!["widedb_value"],
        },
        Case {
            name: "remote write: not snappy",
            path: "/api/v1/write".into(),
            headers: vec![("Content-Encoding", "snappy"), ("Content-Type", "application/x-protobuf")],
            body: b"this is not a snappy block at all".to_vec(),
            status: 400,
            message: vec![s("invalid snappy block")],
            errors: vec![],
            metrics: vec![],
        },
        Case {
            name: "remote write: snappy around garbage protobuf",
            path: "/api/v1/write".into(),
            headers: vec![("Content-Encoding", "snappy"), ("Content-Type", "application/x-protobuf")],
            body: rw_valid_snappy_bad_proto,
            status: 400,
            message: vec![s("invalid protobuf")],
            errors: vec![],
            metrics: vec![],
        },
        Case {
            name: "remote write: a snappy header claiming 300 MiB",
            path: "/api/v1/write".into(),
            headers: vec![("Content-Encoding", "snappy"), ("Content-Type", "application/x-protobuf")],
            body: rw_claims_300_mib,
            status: 413,
            message: vec![s("decompressed body of 314572800 bytes exceeds the limit of 268435456 bytes")],
            errors: vec![],
            metrics: vec![],
        },
        Case {
            name: "remote write: a repeated label name",
            path: "/api/v1/write".into(),
            headers: vec![("Content-Encoding", "snappy"), ("Content-Type", "application/x-protobuf")],
            body: rw_repeated_label,
            status: 400,
            message: vec![s("invalid series 1"), s("duplicate label name \"job\"")],
            errors: vec![],
            metrics: vec!["rw_good", "rw_dup"],
        },
        Case {
            name: "remote write: too many labels",
            path: "/api/v1/write".into(),
            headers: vec![("Content-Encoding", "snappy"), ("Content-Type", "application/x-protobuf")],
            body: rw_too_many_labels,
            status: 400,
            message: vec![s("series 1"), s("10 labels exceed the limit of 8")],
            errors: vec![],
            metrics: vec!["rw_wide"],
        },
    ]
}

fn check_rejection(case: &Case, r: &Reply) {
    let name = case.name;
    assert_eq!(r.status, case.status, "{name}: {}", r.body);
    let j = r.json();
    let message = j["message"].as_str().unwrap_or_else(|| panic!("{name}: no message in {j}"));
    assert!(!message.is_empty(), "{name}: empty message");
    assert!(j["code"].is_string(), "{name}: no code in {j}");
    for m in &case.message {
        assert!(message.contains(m.as_str()), "{name}: message {message:?} lacks {m:?}");
    }
    match (&j.get("errors"), case.errors.is_empty()) {
        (None, true) => {}
        (None, false) => panic!("{name}: no errors list in {j}"),
        (Some(e), true) => panic!("{name}: unexpected errors list {e}"),
        (Some(e), false) => {
            let got: Vec<(u64, u64, String)> = e
                .as_array()
                .expect("errors array")
                .iter()
                .map(|x| {
                    (x["line"].as_u64().unwrap(), x["column"].as_u64().unwrap(), x["reason"].as_str().unwrap().into())
                })
                .collect();
            assert_eq!(got.len(), case.errors.len(), "{name}: {got:?}");
            for ((gl, gc, gr), (el, ec, er)) in got.iter().zip(&case.errors) {
                assert_eq!((gl, gc), (el, ec), "{name}: position of {gr:?}");
                assert!(gr.contains(er.as_str()), "{name}: reason {gr:?} lacks {er:?}");
            }
        }
    }
}

#[test]
fn rejected_batches_are_explained_and_store_nothing() {
    let srv = Server::with_config(CONFIG);
    let t = now_ms() - 60_000;
    for case in cases(t) {
        let headers: Vec<(&str, &str)> = case.headers.clone();
        let r = srv.post(&case.path, &headers, case.body.clone());
        check_rejection(&case, &r);
        for m in &case.metrics {
            assert_eq!(srv.series(m), vec![], "{}: {m} was stored from a rejected batch", case.name);
        }
        srv.assert_healthy_and_writable(&[]);
    }
}

/// Gzip-compresses `n` MiB of zeros, streaming, so neither side of the test holds them.
fn zeros_gzipped(mib: usize) -> Vec<u8> {
    let chunk = vec![0u8; 1 << 20];
    let mut e = GzEncoder::new(Vec::new(), Compression::best());
    for _ in 0..mib {
        e.write_all(&chunk).expect("gzip");
    }
    e.finish().expect("gzip")
}

#[test]
fn gzip_bomb_is_refused_with_413() {
    let srv = Server::start();
    let bomb = zeros_gzipped(300);
    assert!(bomb.len() < 1 << 20, "the bomb should be small on the wire: {} bytes", bomb.len());
    let r = srv.post(V2, &[("Content-Encoding", "gzip")], bomb);
    assert_eq!(r.status, 413, "{}", r.body);
    let message = r.json()["message"].as_str().unwrap_or_default().to_string();
    assert!(message.contains("decompressed body exceeds the limit of 268435456 bytes"), "{message}");
    srv.assert_healthy_and_writable(&[]);
}

#[test]
fn body_over_max_body_bytes_is_refused_with_413() {
    let srv = Server::start();
    let t = now_ms() - 60_000;
    // 100 MB of valid lines, past the default 64 MiB limit. The server reads up to the limit, answers
    // 413 and closes, so the rest of the body meets a closed connection: over a raw socket the body is
    // written from a thread of its own (its broken pipe expected) while this one reads the answer,
    // which an HTTP client that writes the whole body first may never get to.
    let line = format!("huge,host=h value=1 {t}\n");
    let lines = 100_000_000 / line.len() + 1;
    let len = lines * line.len();
    assert!(len > 100_000_000);
    let url = srv.url(V2);
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_at(rest.find('/').expect("a path"));
    let conn = std::net::TcpStream::connect(host).expect("connect");
    conn.set_read_timeout(Some(std::time::Duration::from_secs(60))).expect("timeout");
    let mut writer = conn.try_clone().expect("clone the socket");
    let head = format!("POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len}\r\n\r\n");
    let sender = std::thread::spawn(move || {
        writer.write_all(head.as_bytes())?;
        let chunk = line.repeat(10_000);
        for _ in 0..lines / 10_000 {
            writer.write_all(chunk.as_bytes())?;
        }
        writer.write_all(line.repeat(lines % 10_000).as_bytes())
    });
    let mut answer = [0u8; 12];
    std::io::Read::read_exact(&mut &conn, &mut answer).expect("an answer");
    assert_eq!(String::from_utf8_lossy(&answer), "HTTP/1.1 413");
    let _ = conn.shutdown(std::net::Shutdown::Both);
    let _ = sender.join();
    assert_eq!(srv.series("huge_value"), vec![]);
    srv.assert_healthy_and_writable(&[]);
}

#[test]
fn samples_older_than_retention_are_dropped_and_counted() {
    let srv = Server::start_with(None, &["--retention", "1h"]);
    let metric = r#"argus_store_samples_dropped_total{reason="retention"}"#;
    let before = srv.metric(metric).unwrap_or(0.0);
    let now = now_ms();
    let (old, fresh) = (now - 2 * 3_600_000, now - 60_000);
    let body = [
        format!("aged,host=a value=1 {old}"),
        format!("aged,host=a value=2 {fresh}"),
        format!("aged,host=b value=3,other=4 {old}"),
    ]
    .join("\n");
    let r = srv.write_ms(&body);
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(srv.metric(metric), Some(before + 3.0));
    let got = srv.raw_samples(r#"{__name__=~"aged_.*"}"#, now, "3h");
    let want = vec![(server::lbl(&[("__name__", "aged_value"), ("host", "a")]), vec![(fresh, "2".to_string())])];
    assert_eq!(got, want);
    srv.assert_healthy_and_writable(&[]);
}

/// `[auth]` with the SHA-256 of two write tokens, "s3cret" and "second"; reads stay anonymous.
const TWO_WRITE_TOKENS: &str = "[auth]\nanonymous = [\"read\"]\n\
[[auth.tokens]]\nname = \"one\"\nscopes = [\"write\"]\n\
sha256 = \"1ec1c26b50d5d3c58d9583181af8076655fe00756bf7285940ba3670f99fcba0\"\n\
[[auth.tokens]]\nname = \"two\"\nscopes = [\"write\"]\n\
sha256 = \"16367aacb67a4a017c8da8ab95682ccb390863780f7114dda0a0e0c55644c7c4\"\n";

#[test]
fn writes_need_a_configured_token() {
    let srv = Server::with_config(TWO_WRITE_TOKENS);
    let t = now_ms() - 60_000;
    let rw = encode(&[WriteSeries {
        labels: Labels::from_pairs([("__name__", "auth_rw")]),
        samples: vec![Sample::new(t, 1.0)],
    }])
    .expect("encode");
    let lp = format!("auth value=1 {t}").into_bytes();
    let missing = "needs a token with the write scope";
    let unreadable = "unreadable Authorization header";
    // Each refused with 401 in InfluxDB's shape: (path, Authorization header, body, substring of the message).
    let cases: Vec<(&str, Option<&str>, &Vec<u8>, &str)> = vec![
        (V2, None, &lp, missing),
        (V2, Some("Token wrong"), &lp, "invalid token"),
        (V2, Some("Bearer s3cre"), &lp, "invalid token"),
        // Basic with "s3cret" as the whole credential, no user:password pair.
        (V2, Some("Basic czNjcmV0"), &lp, unreadable),
        (V2, Some("s3cret"), &lp, unreadable),
        ("/write?db=x&precision=ms", None, &lp, missing),
        ("/write?db=x&precision=ms", Some("Token nope"), &lp, "invalid token"),
        ("/api/v1/write", None, &rw, missing),
        ("/api/v1/write", Some("Bearer nope"), &rw, "invalid token"),
    ];
    for (path, auth, body, message) in cases {
        let headers: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        let r = srv.post(path, &headers, body.clone());
        assert_eq!(r.status, 401, "{path} {auth:?}: {}", r.body);
        assert!(r.header("www-authenticate").is_some_and(|h| h.starts_with("Bearer")), "{path}: {:?}", r.headers);
        let j = r.json();
        assert_eq!(j["code"], "unauthorized", "{path} {auth:?}: {j}");
        assert!(j["message"].as_str().unwrap_or_default().contains(message), "{path} {auth:?}: {j}");
    }
    // Flushing is an admin's: a write token is known but not enough.
    let r = srv.post("/internal/force_flush", &[("Authorization", "Bearer s3cret")], "");
    assert_eq!((r.status, r.body.as_str()), (403, "token \"one\" lacks the admin scope\n"));
    assert_eq!(srv.series("auth_value"), vec![]);
    assert_eq!(srv.series("auth_rw"), vec![]);

    // The right token, spelled either way, on every write endpoint.
    let accepted: Vec<(&str, &str, &Vec<u8>)> = vec![
        (V2, "Token s3cret", &lp),
        (V2, "Bearer second", &lp),
        // Basic as Grafana and Prometheus send it: "user:s3cret".
        (V2, "Basic dXNlcjpzM2NyZXQ=", &lp),
        ("/write?db=x&precision=ms", "Token second", &lp),
        ("/api/v1/write", "Bearer s3cret", &rw),
    ];
    for (path, auth, body) in accepted {
        let r = srv.post(path, &[("Authorization", auth)], body.clone());
        assert_eq!(r.status, 204, "{path} {auth}: {}", r.body);
    }
    let names: Vec<String> = srv
        .series(r#"{__name__=~"auth_.*"}"#)
        .into_iter()
        .map(|l| format!("{}{{db={:?}}}", l["__name__"], l.get("db").map_or("", String::as_str)))
        .collect();
    assert_eq!(names, ["auth_rw{db=\"\"}", "auth_value{db=\"\"}", "auth_value{db=\"x\"}"]);
    srv.assert_healthy_and_writable(&[("Authorization", "Token s3cret")]);
}
