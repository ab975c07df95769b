//! Sample values as Prometheus writes them, for the JSON answers (`http`) and for the labels
//! `count_values` sets (`query`). It is its own module so that `query` needs nothing from `http`.

use std::fmt::Write;

/// Go's `strconv.FormatFloat(v, 'f', -1, 64)`, as Prometheus formats sample values.
pub fn format_value(v: f64, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v == f64::INFINITY {
        out.push_str("+Inf");
    } else if v == f64::NEG_INFINITY {
        out.push_str("-Inf");
    } else if !short_decimal(v, out) {
        // ryu is several times faster than `{}`; its output differs from Go's only in a trailing
        // ".0" on whole numbers and in exponents, both handled here.
        let mut b = ryu::Buffer::new();
        let s = b.format_finite(v);
        if s.contains('e') {
            let _ = write!(out, "{v}");
        } else {
            out.push_str(s.strip_suffix(".0").unwrap_or(s));
        }
    }
}

/// Most telemetry values have a few decimals at most (37.3, 1024, 0.25): those are written with
/// integer formatting, several times faster than a general shortest-float search. `m / 10^k == v`
/// holds exactly when the decimal `m·10^-k` reads back as `v`, and the smallest such `k` gives the
/// shortest digits, which is what Go's `FormatFloat(v, 'f', -1, 64)` writes. Returns false otherwise.
fn short_decimal(v: f64, out: &mut String) -> bool {
    const POW: [f64; 5] = [1.0, 10.0, 100.0, 1_000.0, 10_000.0];
    if v == 0.0 {
        out.push_str(if v.is_sign_negative() { "-0" } else { "0" });
        return true;
    }
    for (k, p) in POW.iter().enumerate() {
        let x = v * p;
        if x.abs() >= 4.0e15 {
            return false;
        }
        // Round half away from zero with a cast: `f64::round` is a library call on this path.
        let m = (x + 0.5f64.copysign(x)) as i64;
        if m as f64 / p == v {
            // One integer formatting; the point goes in before the last k digits.
            let mut b = itoa::Buffer::new();
            let digits = b.format(m.unsigned_abs());
            if m < 0 {
                out.push('-');
            }
            match digits.len().checked_sub(k) {
                Some(0) | None => {
                    out.push_str("0.");
                    for _ in digits.len()..k {
                        out.push('0');
                    }
                    out.push_str(digits);
                }
                Some(int) if k > 0 => {
                    out.push_str(&digits[..int]);
                    out.push('.');
                    out.push_str(&digits[int..]);
                }
                Some(_) => out.push_str(digits),
            }
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_decimals_match_the_general_formatting() {
        let cases = [
            37.3,
            -37.3,
            0.25,
            -0.25,
            1024.0,
            -1024.0,
            -1.5,
            0.0001,
            -0.0012,
            0.001,
            12.05,
            1e-5,
            123456.789,
            0.1 + 0.2,
            4.0e15,
            7.0e14 + 0.5,
            10.5,
            100.0,
        ];
        for v in cases {
            let mut fast = String::new();
            format_value(v, &mut fast);
            assert_eq!(fast.parse::<f64>().unwrap().to_bits(), v.to_bits(), "{v} -> {fast}");
            assert_eq!(fast, format!("{v}"), "{v}");
        }
        let mut z = String::new();
        format_value(-0.0, &mut z);
        assert_eq!(z, "-0");
    }
}
