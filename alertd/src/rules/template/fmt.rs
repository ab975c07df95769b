//! Go's `fmt` for the values templates print: `%v` of a float64 (`strconv.FormatFloat(v, 'g', -1,
//! 64)`), `%.4g` as Prometheus' humanize functions use it, and `printf`'s verbs with flags, width
//! and precision. Rust and Go both round the exact binary value half to even, so digits agree.

use super::value::Value;

/// A float as Go's `%v` prints it: the shortest digits that read back to it, in exponent form when
/// the exponent is below -4 or at least 6 (`1.2345675e+06`), else plainly (`123456.7`).
pub fn format_value(v: f64) -> String {
    fmt_g(v, None, false)
}

/// Go's `%g` (`prec` significant digits, or the shortest when `None`); `upper` for `%G`.
pub fn fmt_g(v: f64, prec: Option<usize>, upper: bool) -> String {
    if let Some(s) = special(v) {
        return s;
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let (neg, digits, dp) = decimal(v, prec.map(|p| p.max(1)));
    let nd = digits.len() as i64;
    let eprec = match prec {
        None => 6,
        Some(p) => {
            let p = p.max(1) as i64;
            if p > nd && nd >= dp { nd } else { p }
        }
    };
    let exp = dp - 1;
    let sign = if neg { "-" } else { "" };
    if exp < -4 || exp >= eprec {
        let mut m = digits[..1].to_string();
        if nd > 1 {
            m.push('.');
            m.push_str(&digits[1..]);
        }
        return format!("{sign}{m}{}", exponent(exp, upper));
    }
    format!("{sign}{}", fixed(&digits, dp, (nd - dp).max(0) as usize))
}

/// Go's `%e` with `prec` digits after the point.
pub fn fmt_e(v: f64, prec: usize, upper: bool) -> String {
    if let Some(s) = special(v) {
        return s;
    }
    let s = format!("{v:.prec$e}");
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = e.parse().unwrap_or(0);
    format!("{m}{}", exponent(exp, upper))
}

/// Go's `%f` with `prec` digits after the point.
pub fn fmt_f(v: f64, prec: usize) -> String {
    special(v).unwrap_or_else(|| format!("{v:.prec$}"))
}

fn special(v: f64) -> Option<String> {
    if v.is_nan() {
        Some("NaN".into())
    } else if v.is_infinite() {
        Some(if v > 0.0 { "+Inf".into() } else { "-Inf".into() })
    } else {
        None
    }
}

fn exponent(exp: i64, upper: bool) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{}{sign}{:02}", if upper { 'E' } else { 'e' }, exp.abs())
}

/// `v`'s decimal digits (trailing zeros removed; rounded to `prec` significant digits, or the
/// shortest that read back) and the position of the decimal point, as Go's `decimal` holds them.
fn decimal(v: f64, prec: Option<usize>) -> (bool, String, i64) {
    let s = match prec {
        Some(p) => format!("{:.*e}", p - 1, v.abs()),
        None => format!("{:e}", v.abs()),
    };
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = e.parse().unwrap_or(0);
    let digits: String = m.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    (v.is_sign_negative(), digits.to_string(), exp + 1)
}

/// Digits with the point at `dp`, `decimals` places after it.
fn fixed(digits: &str, dp: i64, decimals: usize) -> String {
    let mut int = String::new();
    if dp <= 0 {
        int.push('0');
    } else {
        for i in 0..dp as usize {
            int.push(digits.as_bytes().get(i).map_or('0', |&b| b as char));
        }
    }
    if decimals == 0 {
        return int;
    }
    int.push('.');
    for i in 0..decimals as i64 {
        let at = dp + i;
        int.push(if at < 0 { '0' } else { digits.as_bytes().get(at as usize).map_or('0', |&b| b as char) });
    }
    int
}

/// One `%` directive's flags, width and precision.
#[derive(Default)]
struct Spec {
    minus: bool,
    plus: bool,
    space: bool,
    zero: bool,
    sharp: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

/// Go's `fmt.Sprintf` for the values templates pass: `%v %s %q %d %x %X %o %b %c %t %e %E %f %F
/// %g %G %%`, flags `-+ 0#`, width and precision (`*` included); a verb that does not fit its
/// operand, a missing operand and extra operands print as Go prints them (`%!d(float64=1.5)`,
/// `%!d(MISSING)`, `%!(EXTRA int=1)`).
pub fn sprintf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut next = 0;
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                '#' => spec.sharp = true,
                _ => break,
            }
            chars.next();
        }
        let number = |chars: &mut std::iter::Peekable<std::str::Chars>, next: &mut usize| -> Option<usize> {
            if chars.peek() == Some(&'*') {
                chars.next();
                let n = match args.get(*next) {
                    Some(Value::Int(i)) => Some((*i).max(0) as usize),
                    _ => None,
                };
                *next += 1;
                return n;
            }
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize));
                chars.next();
            }
            n
        };
        spec.width = number(&mut chars, &mut next);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.prec = Some(number(&mut chars, &mut next).unwrap_or(0));
        }
        let Some(verb) = chars.next() else {
            out.push_str("%!(NOVERB)");
            break;
        };
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.get(next) else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        next += 1;
        out.push_str(&one(verb, &spec, arg));
    }
    if next < args.len() {
        let extra: Vec<String> = args[next..].iter().map(|a| format!("{}={}", a.type_name(), a.go_string())).collect();
        out.push_str(&format!("%!(EXTRA {})", extra.join(", ")));
    }
    out
}

fn one(verb: char, spec: &Spec, arg: &Value) -> String {
    let bad = || match arg {
        Value::Nil => format!("%!{verb}(<nil>)"),
        a => format!("%!{verb}({}={})", a.type_name(), a.go_string()),
    };
    match (verb, arg) {
        ('v', Value::Nil) => pad("<nil>".into(), spec, false),
        ('v' | 's', Value::Str(s)) => pad(truncate(s, spec.prec), spec, false),
        ('q', Value::Str(s)) => pad(go_quote(s), spec, false),
        ('x' | 'X', Value::Str(s)) => {
            let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
            pad(if verb == 'X' { hex.to_uppercase() } else { hex }, spec, false)
        }
        ('v' | 't', Value::Bool(b)) => pad(b.to_string(), spec, false),
        ('v' | 'd', Value::Int(i)) => number(i.to_string(), spec),
        ('x', Value::Int(i)) => number(signed(*i, format!("{:x}", i.unsigned_abs())), spec),
        ('X', Value::Int(i)) => number(signed(*i, format!("{:X}", i.unsigned_abs())), spec),
        ('o', Value::Int(i)) => number(signed(*i, format!("{:o}", i.unsigned_abs())), spec),
        ('b', Value::Int(i)) => number(signed(*i, format!("{:b}", i.unsigned_abs())), spec),
        ('c', Value::Int(i)) => pad(char::from_u32(*i as u32).unwrap_or('\u{fffd}').to_string(), spec, false),
        ('v', Value::Float(f)) => float(fmt_g(*f, spec.prec, false), spec),
        ('g' | 'G', Value::Float(f)) => float(fmt_g(*f, spec.prec, verb == 'G'), spec),
        ('e' | 'E', Value::Float(f)) => float(fmt_e(*f, spec.prec.unwrap_or(6), verb == 'E'), spec),
        ('f' | 'F', Value::Float(f)) => float(fmt_f(*f, spec.prec.unwrap_or(6)), spec),
        ('v' | 's', Value::Labels(_) | Value::Map(_) | Value::Samples(_) | Value::Sample(_) | Value::Root(_)) => {
            pad(arg.go_string(), spec, false)
        }
        ('v' | 's', Value::Time(_)) => pad(arg.go_string(), spec, false),
        _ => bad(),
    }
}

fn signed(i: i64, digits: String) -> String {
    if i < 0 { format!("-{digits}") } else { digits }
}

fn truncate(s: &str, prec: Option<usize>) -> String {
    match prec {
        Some(p) => s.chars().take(p).collect(),
        None => s.to_string(),
    }
}

/// A number with its sign flags and zero padding.
fn number(s: String, spec: &Spec) -> String {
    let s = if !s.starts_with('-') && spec.plus {
        format!("+{s}")
    } else if !s.starts_with('-') && spec.space {
        format!(" {s}")
    } else {
        s
    };
    pad(s, spec, spec.zero && !spec.minus)
}

/// A formatted float: Go keeps the `+` of `+Inf` and never zero-pads infinities or NaN.
fn float(s: String, spec: &Spec) -> String {
    if s.ends_with("Inf") || s == "NaN" {
        let s = if s == "NaN" && (spec.plus || spec.space) {
            format!("{}NaN", if spec.plus { '+' } else { ' ' })
        } else {
            s
        };
        return pad(s, spec, false);
    }
    number(s, spec)
}

fn pad(s: String, spec: &Spec, zeros: bool) -> String {
    let len = s.chars().count();
    let Some(w) = spec.width.filter(|w| *w > len) else { return s };
    let fill = w - len;
    if spec.minus {
        return format!("{s}{}", " ".repeat(fill));
    }
    if zeros {
        let (sign, rest) = match s.chars().next() {
            Some(c @ ('-' | '+' | ' ')) => (c.to_string(), &s[1..]),
            _ => (String::new(), &s[..]),
        };
        return format!("{sign}{}{rest}", "0".repeat(fill));
    }
    format!("{}{s}", " ".repeat(fill))
}

/// Go's `strconv.Quote`: a double-quoted string with Go escapes.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
