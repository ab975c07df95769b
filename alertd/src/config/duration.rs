//! Prometheus durations: `30s`, `5m`, `1h30m`, `1d`, `2w`, `1y`, `100ms`, `0`.

use std::time::Duration;

/// Parses a Prometheus duration (units y, w, d, h, m, s, ms, largest first, each at most once).
pub fn parse(s: &str) -> Result<Duration, String> {
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    const UNITS: [(&str, u64); 7] = [
        ("y", 365 * 86_400_000),
        ("w", 7 * 86_400_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1000),
        ("ms", 1),
    ];
    let bad = || format!("invalid duration {s:?} (expected e.g. 30s, 5m, 1h30m, 2d)");
    let mut rest = s;
    let mut ms: u64 = 0;
    let mut next_unit = 0;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let i = UNITS.iter().position(|(u, _)| *u == unit).ok_or_else(bad)?;
        if i < next_unit {
            return Err(bad());
        }
        next_unit = i + 1;
        ms = n.checked_mul(UNITS[i].1).and_then(|v| ms.checked_add(v)).ok_or_else(bad)?;
    }
    Ok(Duration::from_millis(ms))
}

/// Formats as Prometheus does: `1h30m`, `5m`, `0s`.
pub fn format(d: Duration) -> String {
    let mut ms = d.as_millis() as u64;
    if ms == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (u, m) in [("w", 7 * 86_400_000), ("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)] {
        if ms >= m {
            out.push_str(&format!("{}{u}", ms / m));
            ms %= m;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(input: &str, expect: Expect) {
        let got = match parse(input) {
            Ok(d) => format!("{}ms {}", d.as_millis(), format(d)),
            Err(e) => e,
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn durations() {
        check("30s", expect!["30000ms 30s"]);
        check("1h30m", expect!["5400000ms 1h30m"]);
        check("2d", expect!["172800000ms 2d"]);
        check("0", expect!["0ms 0s"]);
        check("150ms", expect!["150ms 150ms"]);
        check("5", expect![[r#"invalid duration "5" (expected e.g. 30s, 5m, 1h30m, 2d)"#]]);
        check("1m1h", expect![[r#"invalid duration "1m1h" (expected e.g. 30s, 5m, 1h30m, 2d)"#]]);
        check("", expect![[r#"invalid duration "" (expected e.g. 30s, 5m, 1h30m, 2d)"#]]);
    }
}
