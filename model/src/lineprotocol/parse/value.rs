//! Unquoted field values and timestamps.

use super::super::FieldValue;

/// The end of an unquoted value or timestamp: the next comma, space or line end.
#[inline]
pub(super) fn token_end(b: &[u8], mut i: usize) -> usize {
    while let Some(&c) = b.get(i) {
        if matches!(c, b',' | b' ' | b'\n' | b'\r') {
            break;
        }
        i += 1;
    }
    i
}

/// A float, integer, unsigned integer or boolean, typed by its spelling as InfluxDB's grammar does:
/// `1i`, `1u`, `1`/`1.0`/`-1.5e-10`/`.5`, `t`/`true`/`F`... Anything else (`inf`, `NaN`, `0x10`) is
/// rejected rather than guessed at.
pub(super) fn scalar(s: &str) -> Result<FieldValue<'static>, String> {
    let b = s.as_bytes();
    match b.first() {
        Some(b'-' | b'0'..=b'9' | b'.') => match b.split_last() {
            Some((b'i', digits)) => match int(digits) {
                Ok(v) => Ok(FieldValue::Int(v)),
                Err(Num::Range) => Err("integer out of range".to_string()),
                Err(Num::Syntax) => Err(format!("invalid integer {s:?}")),
            },
            Some((b'u', digits)) => match uint(digits) {
                Ok(v) => Ok(FieldValue::UInt(v)),
                Err(Num::Range) => Err("unsigned integer out of range".to_string()),
                Err(Num::Syntax) => Err(format!("invalid unsigned integer {s:?}")),
            },
            _ => float(s).map(FieldValue::Float),
        },
        Some(b't' | b'T' | b'f' | b'F') => match s {
            "t" | "T" | "true" | "True" | "TRUE" => Ok(FieldValue::Bool(true)),
            "f" | "F" | "false" | "False" | "FALSE" => Ok(FieldValue::Bool(false)),
            _ => Err(format!("invalid boolean {s:?}")),
        },
        _ => Err(format!("invalid field value {s:?}")),
    }
}

/// A signed integer timestamp, in the write's precision.
pub(super) fn timestamp(s: &str) -> Result<i64, String> {
    match int(s.as_bytes()) {
        Ok(t) => Ok(t),
        Err(Num::Range) => Err("timestamp out of range".to_string()),
        Err(Num::Syntax) => Err(format!("invalid timestamp {s:?}")),
    }
}

enum Num {
    Syntax,
    Range,
}

fn float(s: &str) -> Result<f64, String> {
    if let Some(v) = simple_float(s.as_bytes()) {
        return Ok(v);
    }
    // std's parser also takes `inf`, `nan` and `+1`, which we must refuse, so check the grammar first
    // and let it do only the (correctly rounded) conversion.
    if !is_float(s.as_bytes()) {
        return Err(format!("invalid float {s:?}"));
    }
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok(v),
        Ok(_) => Err("float out of range".to_string()),
        Err(_) => Err(format!("invalid float {s:?}")),
    }
}

/// Powers of ten that are exact in an f64.
const POW10: [f64; 16] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/// The common case, `[-]digits[.digits]` with at most 15 digits, in one pass. The digits make an integer
/// below 2^53 and the divisor is an exact power of ten, so one IEEE division rounds correctly (Clinger's
/// fast path). Anything else is left to the general path.
#[inline]
fn simple_float(b: &[u8]) -> Option<f64> {
    let (neg, b) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    if b.len() > 16 {
        return None;
    }
    let mut mantissa: u64 = 0;
    let mut frac_digits = None;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'0'..=b'9' => mantissa = mantissa * 10 + u64::from(c - b'0'),
            b'.' if frac_digits.is_none() => frac_digits = Some(b.len() - i - 1),
            _ => return None,
        }
    }
    let digits = b.len() - usize::from(frac_digits.is_some());
    if digits == 0 || digits > 15 {
        return None;
    }
    let v = mantissa as f64 / POW10.get(frac_digits.unwrap_or(0))?;
    Some(if neg { -v } else { v })
}

/// `[-] (digits [. [digits]] | . digits) [(e|E) [+|-] digits]`, as in influxdata/line-protocol's EBNF.
fn is_float(b: &[u8]) -> bool {
    let mut i = usize::from(b.first() == Some(&b'-'));
    let int_digits = digits(b, &mut i);
    let mut frac_digits = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac_digits = digits(b, &mut i);
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(b, &mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

fn digits(b: &[u8], i: &mut usize) -> usize {
    let start = *i;
    while b.get(*i).is_some_and(u8::is_ascii_digit) {
        *i += 1;
    }
    *i - start
}

/// `[-] digits` as an i64, `i64::MIN` included; more than 19 digits (leading zeros) take a checked path.
fn int(b: &[u8]) -> Result<i64, Num> {
    let (neg, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, b),
    };
    if digits.is_empty() {
        return Err(Num::Syntax);
    }
    if digits.len() <= 19 {
        // Below 10^19 < 2^64, so a u64 cannot overflow: the common case, nanosecond timestamps included,
        // needs no checked arithmetic, only one range check at the end.
        let mut acc: u64 = 0;
        for &c in digits {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return Err(Num::Syntax);
            }
            acc = acc * 10 + u64::from(d);
        }
        let limit = if neg { i64::MIN.unsigned_abs() } else { i64::MAX.unsigned_abs() };
        if acc > limit {
            return Err(Num::Range);
        }
        // In range, so the cast is exact except for 2^63, which only a negative number reaches and
        // which negates to i64::MIN.
        return Ok(if neg { (acc as i64).wrapping_neg() } else { acc as i64 });
    }
    let mut acc: i64 = 0;
    let mut overflow = false;
    for &c in digits {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return Err(Num::Syntax);
        }
        let next = acc
            .checked_mul(10)
            .and_then(|a| if neg { a.checked_sub(i64::from(d)) } else { a.checked_add(i64::from(d)) });
        match next {
            Some(v) => acc = v,
            None => overflow = true,
        }
    }
    if overflow { Err(Num::Range) } else { Ok(acc) }
}

/// `digits` as a u64 (no sign, not even `-0`, as in InfluxDB).
fn uint(b: &[u8]) -> Result<u64, Num> {
    if b.is_empty() {
        return Err(Num::Syntax);
    }
    let mut acc: u64 = 0;
    let mut overflow = false;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return Err(Num::Syntax);
        }
        match acc.checked_mul(10).and_then(|a| a.checked_add(u64::from(d))) {
            Some(v) => acc = v,
            None => overflow = true,
        }
    }
    if overflow { Err(Num::Range) } else { Ok(acc) }
}
