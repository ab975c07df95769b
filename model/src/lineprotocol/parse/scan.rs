//! Byte classes for names and tag values, and their unescaping.

/// Element masks: which bytes end (or may be escaped in) a measurement, and in a tag key, tag value or
/// field key. A backslash carries both bits so that scanning stops to look at it.
pub(super) const MEASUREMENT: u8 = 1;
pub(super) const KEY: u8 = 2;

static CLASS: [u8; 256] = classes();

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    t[b',' as usize] = MEASUREMENT | KEY;
    t[b' ' as usize] = MEASUREMENT | KEY;
    t[b'\n' as usize] = MEASUREMENT | KEY;
    t[b'\\' as usize] = MEASUREMENT | KEY;
    t[b'=' as usize] = KEY;
    t
}

/// Whether `\` followed by `c` is an escape in `element`: only its separators are escapable, never a
/// backslash or a newline (InfluxDB's grammar: `\\,` is a literal backslash and an escaped comma).
#[inline]
fn escapable(c: u8, element: u8) -> bool {
    c != b'\\' && c != b'\n' && CLASS[c as usize] & element != 0
}

/// Scans a name from `i` to the first unescaped separator of `element`; returns its end and whether it
/// held an escape (so needs unescaping).
#[inline]
pub(super) fn ident(b: &[u8], mut i: usize, element: u8) -> (usize, bool) {
    let mut escaped = false;
    loop {
        i = skip_plain(b, i, element);
        let Some(&c) = b.get(i) else { break };
        if c != b'\\' {
            break;
        }
        match b.get(i + 1) {
            Some(&next) if escapable(next, element) => {
                escaped = true;
                i += 2;
            }
            _ => i += 1,
        }
    }
    (i, escaped)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` equal to `c`, exact for the lowest such byte (a borrow can only
/// mark bytes above a true match).
#[inline]
fn bytes_equal(w: u64, c: u8) -> u64 {
    let x = w ^ (ONES * u64::from(c));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// Skips bytes that are neither separators of `element` nor backslashes, eight at a time: names are
/// mostly a few plain words, so this usually ends in one or two steps.
#[inline]
fn skip_plain(b: &[u8], mut i: usize, element: u8) -> usize {
    while let Some(chunk) = b.get(i..i + 8) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let mut hits = bytes_equal(w, b',') | bytes_equal(w, b' ') | bytes_equal(w, b'\\') | bytes_equal(w, b'\n');
        if element == KEY {
            hits |= bytes_equal(w, b'=');
        }
        if hits != 0 {
            return i + (hits.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while b.get(i).is_some_and(|&c| CLASS[c as usize] & element == 0) {
        i += 1;
    }
    i
}

/// Removes the escaping backslashes from a name that `ident` scanned.
pub(super) fn unescape(s: &str, element: u8) -> String {
    unescape_with(s, |c| escapable(c, element))
}

/// Removes the escaping backslashes from a string field value: `\"` and `\\` are escapes, any other
/// backslash is literal.
pub(super) fn unescape_string(s: &str) -> String {
    unescape_with(s, |c| c == b'"' || c == b'\\')
}

fn unescape_with(s: &str, escapable: impl Fn(u8) -> bool) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && b.get(i + 1).is_some_and(|&c| escapable(c)) {
            // Both bytes are ASCII, so both slice ends are char boundaries.
            out.push_str(&s[copied..i]);
            copied = i + 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[copied..]);
    out
}
