use expect_test::{Expect, expect};
use proptest::prelude::*;

use super::*;

const STALE_NAN: u64 = 0x7ff0_0000_0000_0002;
const T0: i64 = 1_764_374_400_000; // 2025-11-29T00:00:00Z in ms

/// Regular 10 s scrapes from `T0`.
fn regular(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| T0 + i * 10_000).collect()
}

fn specials() -> Vec<f64> {
    vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        f64::from_bits(STALE_NAN),
        f64::from_bits(0xfff8_dead_beef_0001),
        f64::MIN_POSITIVE,
        f64::from_bits(1),
        -f64::from_bits(0x000f_ffff_ffff_ffff),
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        1.0,
    ]
}

fn bits(vals: &[f64]) -> Vec<u64> {
    vals.iter().map(|v| v.to_bits()).collect()
}

/// A chunk through the pco codec even where `encode` would pick Gorilla, so small inputs
/// exercise it too.
fn encode_pco_only(ts: &[i64], vals: &[f64]) -> Vec<u8> {
    let mut out = vec![Encoding::Pco.tag()];
    varint::put_uvarint(&mut out, ts.len() as u64);
    pco::encode(ts, vals, &mut out).expect("pco accepts 1..=2^20 samples");
    out
}

/// What each way of writing produces, by name.
fn writers(ts: &[i64], vals: &[f64]) -> [(&'static str, Vec<u8>); 3] {
    let with = |enc| {
        let mut out = Vec::new();
        encode(enc, ts, vals, &mut out);
        out
    };
    [("gorilla", with(Encoding::Gorilla)), ("pco-only", encode_pco_only(ts, vals)), ("Pco", with(Encoding::Pco))]
}

/// Round-trips through each writer, checks bit-exactness and appending, and reports sizes
/// and what `Encoding::Pco` chose.
fn check(ts: &[i64], vals: &[f64], expect: Expect) {
    let mut report = Vec::new();
    for (name, chunk) in writers(ts, vals) {
        let (mut got_ts, mut got_vals) = (vec![-7], vec![0.5]);
        let n = decode_into(&chunk, &mut got_ts, &mut got_vals).expect("own chunk decodes");
        assert_eq!(n, ts.len(), "{name} count");
        assert_eq!(got_ts[1..], *ts, "{name} timestamps");
        assert_eq!(bits(&got_vals[1..]), bits(vals), "{name} values");
        assert_eq!((got_ts[0], got_vals[0]), (-7, 0.5), "{name} kept what was there");
        let written = encoding_of(&chunk).expect("tag");
        report.push(format!("{name} {}", chunk.len()));
        if name == "Pco" {
            report.push(format!("as {written:?}"));
        }
    }
    expect.assert_eq(&report.join(" "));
}

#[test]
fn round_trips() {
    // "pco-only" is the pco codec alone; "Pco" is what `Encoding::Pco` writes after comparing
    // with Gorilla.
    let n = 720;
    let walk: Vec<f64> = (0..n).map(|i| ((i * 37 % 23) as f64 - 11.0) * 0.1 + 50.0).collect();
    let counter: Vec<f64> = (0..n).map(|i| (1_000_000_000 + i * i * 1_234 + i % 7) as f64).collect();
    let jitter: Vec<i64> = (0..n as i64).map(|i| T0 + i * 10_000 + (i * 7919) % 41 - 20).collect();
    let sp = specials();
    let sp_ts = regular(sp.len());

    check(&[T0], &[42.5], expect!["gorilla 16 pco-only 25 Pco 16 as Gorilla"]);
    check(&[T0, T0 + 1], &[1.0, 1.0], expect!["gorilla 18 pco-only 25 Pco 18 as Gorilla"]);
    check(&[-5_000, -10, 0, 3], &[1.0, 2.0, 3.0, 4.0], expect!["gorilla 25 pco-only 71 Pco 25 as Gorilla"]);
    check(&[i64::MIN, -1, 0, i64::MAX], &[0.0, 1.0, 2.0, 3.0], expect!["gorilla 54 pco-only 80 Pco 54 as Gorilla"]);
    check(
        &[0, 1, 1 << 40, (1 << 40) + 8193, (1 << 41) + 3],
        &[5.0; 5],
        expect!["gorilla 38 pco-only 57 Pco 38 as Gorilla"],
    );
    check(&sp_ts, &sp, expect!["gorilla 105 pco-only 138 Pco 105 as Gorilla"]);
    check(&regular(n), &vec![f64::from_bits(STALE_NAN); n], expect!["gorilla 199 pco-only 27 Pco 27 as Pco"]);
    check(&regular(n), &vec![0.0; n], expect!["gorilla 199 pco-only 27 Pco 27 as Pco"]);
    check(&regular(n), &walk, expect!["gorilla 4694 pco-only 155 Pco 155 as Pco"]);
    check(&regular(n), &counter, expect!["gorilla 2735 pco-only 458 Pco 458 as Pco"]);
    check(&jitter, &walk, expect!["gorilla 5088 pco-only 237 Pco 237 as Pco"]);
    let util: Vec<f64> = (0..n).map(|i| (60_000_000 + i * i * 31 % 900_001) as f64 / (3 << 25) as f64).collect();
    check(&regular(n), &util, expect!["gorilla 4452 pco-only 204 Pco 204 as Pco"]);
    check(
        &regular(n),
        &sp.iter().cycle().take(n).copied().collect::<Vec<_>>(),
        expect!["gorilla 6019 pco-only 466 Pco 466 as Pco"],
    );
}

#[test]
fn ratio_base_finds_odd_denominators_only() {
    let ratio = |d: f64, k: i32| -> Vec<f64> {
        (0..200).map(|i| f64::from(50_000_000 + i * 7_919 % 4_001) / (d * f64::from(k).exp2())).collect()
    };
    let decimal: Vec<f64> = (0..200).map(|i| f64::from(300 + i * 37 % 101) / 10.0).collect();
    let integer: Vec<f64> = (0..200).map(|i| f64::from(1_000_000 + i * 1_234)).collect();
    let dyadic: Vec<f64> = (0..200).map(|i| f64::from(i * 13 % 97) / 1024.0).collect();
    let noise: Vec<f64> = (1..200).map(|i| (f64::from(i) * 1.618_033_988_749).sin()).collect();
    let base = |vals: &[f64]| pco::ratio_base(vals).map(|b| format!("1/{}", 1.0 / b));
    let got = [ratio(3.0, 25), ratio(5.0, 34), ratio(9.0, 10), decimal, integer, dyadic, noise].map(|v| base(&v));
    expect![[r#"
        [
            Some(
                "1/100663296",
            ),
            Some(
                "1/85899345920",
            ),
            Some(
                "1/9216",
            ),
            Some(
                "1/30",
            ),
            None,
            None,
            None,
        ]
    "#]]
    .assert_debug_eq(&got);
}

#[test]
fn empty_input_makes_an_empty_chunk() {
    for enc in [Encoding::Gorilla, Encoding::Pco] {
        let mut out = Vec::new();
        encode(enc, &[], &[], &mut out);
        assert_eq!(out, [1, 0], "{enc:?}");
        assert_eq!(decode(&out), Ok((vec![], vec![])));
    }
}

/// Fixed input, fixed bytes: a change here is a format change (docs/format/chunk.md).
#[test]
fn golden_bytes() {
    let vals = [1.5, 1.5, 2.0, f64::from_bits(STALE_NAN), -0.0];
    let irregular = [T0, T0 + 10_000, T0 + 20_000, T0 + 30_001, T0 + 40_000];
    let hex = |chunk: Vec<u8>| chunk.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut gorilla = Vec::new();
    encode(Encoding::Gorilla, &irregular, &vals, &mut gorilla);
    expect!["010580b0c6ced9663ff8000000000000904e3099fff00038bdffc000000000000dfff60ffffc00000000000080"]
        .assert_eq(&hex(gorilla));
    expect!["02050401011001018087130000000000400100cce8cc9a01008025004300c0ffffffffffffff1f40000000000000f8bf8000000000000000000322000000000000ff0f006d060000"].assert_eq(&hex(encode_pco_only(&irregular, &vals)));
    expect!["020504010080b0c6ced966904e004300c0ffffffffffffff1f40000000000000f8bf8000000000000000000322000000000000ff0f006d060000"].assert_eq(&hex(encode_pco_only(&regular(5), &vals)));
}

#[test]
fn corrupt_input_errors_without_panicking() {
    let n = 300;
    let ts: Vec<i64> = (0..n as i64).map(|i| T0 + i * 10_000 + (i * 31) % 5).collect();
    let vals: Vec<f64> = (0..n).map(|i| ((i * 13) % 97) as f64 * 0.25).collect();
    let samples = [(ts.clone(), vals.clone()), (regular(n), vals.clone()), (ts[..3].to_vec(), vals[..3].to_vec())];
    for (ts, vals) in &samples {
        for (name, chunk) in writers(ts, vals) {
            for len in 0..chunk.len() {
                assert!(decode(&chunk[..len]).is_err(), "{name}: prefix of {len} bytes decoded");
            }
            let mut longer = chunk.clone();
            longer.push(0);
            assert!(decode(&longer).is_err(), "{name}: trailing byte accepted");
            for i in 0..chunk.len() {
                for flip in [0x01, 0x10, 0x80, 0xff] {
                    let mut bad = chunk.clone();
                    bad[i] ^= flip;
                    if let Ok((t, v)) = decode(&bad) {
                        assert_eq!(t.len(), v.len());
                    }
                }
            }
        }
    }
    assert_eq!(decode(&[3, 0]), Err(ChunkError::UnknownEncoding(3)));
    assert_eq!(decode(&[]), Err(ChunkError::Truncated));
}

#[test]
fn failed_decode_leaves_buffers_alone() {
    let mut chunk = encode_pco_only(&regular(100), &[1.0; 100]);
    chunk.pop();
    let (mut ts, mut vals) = (vec![1], vec![2.0]);
    assert!(decode_into(&chunk, &mut ts, &mut vals).is_err());
    assert_eq!((ts, vals), (vec![1], vec![2.0]));
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        (-1000i32..1000).prop_map(|x| f64::from(x) * 0.1),
        Just(f64::from_bits(STALE_NAN)),
        Just(-0.0),
    ]
}

proptest! {
    #[test]
    fn round_trips_any_series(
        start in any::<i64>(),
        steps in prop::collection::vec(1i64..100_000_000, 0..400),
        vals in prop::collection::vec(any_f64(), 401),
    ) {
        let mut ts = vec![start];
        for s in steps {
            let next = ts[ts.len() - 1].wrapping_add(s);
            ts.push(next);
        }
        let vals = &vals[..ts.len()];
        for (name, chunk) in writers(&ts, vals) {
            let (got_ts, got_vals) = decode(&chunk).expect("own chunk decodes");
            prop_assert_eq!(&got_ts, &ts, "{}", name);
            prop_assert_eq!(bits(&got_vals), bits(vals), "{}", name);
        }
    }

    #[test]
    fn random_bytes_never_panic(tag in 1u8..3, data in prop::collection::vec(any::<u8>(), 0..200)) {
        let mut chunk = vec![tag];
        chunk.extend(data);
        let _ = decode(&chunk);
    }
}
