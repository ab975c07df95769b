//! Go's `time.Time.Format` for UTC times: the reference-time layout (`2006-01-02 15:04:05`,
//! `Jan _2`, `Mon`, `PM`, `.000`, `MST`, `Z07:00`, …), as notification templates call it on an
//! alert's `.StartsAt`.

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// `ms` (Unix milliseconds, UTC) formatted by the Go layout `layout`.
pub fn format(ms: i64, layout: &str) -> String {
    let secs = ms.div_euclid(1000);
    let nanos = ms.rem_euclid(1000) * 1_000_000;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (year, month, day) = crate::time::civil_from_days(days);
    let (hour, min, sec) = (rem / 3600, rem / 60 % 60, rem % 60);
    // 1970-01-01 was a Thursday.
    let weekday = (days + 4).rem_euclid(7) as usize;
    let month_name = MONTHS[(month as usize).saturating_sub(1) % 12];
    let mut out = String::new();
    let mut rest = layout;
    while !rest.is_empty() {
        // Longest tokens first, as Go's `nextStdChunk` tells them apart.
        let tokens: &[(&str, &dyn Fn() -> String)] = &[
            ("January", &|| month_name.to_string()),
            ("Jan", &|| month_name[..3].to_string()),
            ("Monday", &|| DAYS[weekday].to_string()),
            ("Mon", &|| DAYS[weekday][..3].to_string()),
            ("MST", &|| "UTC".to_string()),
            ("2006", &|| format!("{year:04}")),
            ("Z07:00:00", &|| "Z".to_string()),
            ("Z07:00", &|| "Z".to_string()),
            ("Z0700", &|| "Z".to_string()),
            ("Z07", &|| "Z".to_string()),
            ("-07:00:00", &|| "+00:00:00".to_string()),
            ("-07:00", &|| "+00:00".to_string()),
            ("-0700", &|| "+0000".to_string()),
            ("-07", &|| "+00".to_string()),
            ("002", &|| format!("{:03}", day_of_year(year, month, day))),
            ("01", &|| format!("{month:02}")),
            ("02", &|| format!("{day:02}")),
            ("_2", &|| format!("{day:>2}")),
            ("06", &|| format!("{:02}", year.rem_euclid(100))),
            ("15", &|| format!("{hour:02}")),
            ("03", &|| format!("{:02}", hour12(hour))),
            ("04", &|| format!("{min:02}")),
            ("05", &|| format!("{sec:02}")),
            ("PM", &|| if hour >= 12 { "PM" } else { "AM" }.to_string()),
            ("pm", &|| if hour >= 12 { "pm" } else { "am" }.to_string()),
            ("1", &|| month.to_string()),
            ("2", &|| day.to_string()),
            ("3", &|| hour12(hour).to_string()),
            ("4", &|| min.to_string()),
            ("5", &|| sec.to_string()),
        ];
        // `.000` / `,999`: fractional seconds after a separator.
        if let Some(n) = fraction(rest) {
            let digits = format!("{nanos:09}");
            let kept = &digits[..n.len];
            if n.trim {
                let t = kept.trim_end_matches('0');
                if !t.is_empty() {
                    out.push(n.sep);
                    out.push_str(t);
                }
            } else {
                out.push(n.sep);
                out.push_str(kept);
            }
            rest = &rest[n.len + 1..];
            continue;
        }
        match tokens.iter().find(|(t, _)| rest.starts_with(t)) {
            Some((t, f)) => {
                out.push_str(&f());
                rest = &rest[t.len()..];
            }
            None => {
                let c = rest.chars().next().unwrap_or_default();
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

struct Fraction {
    sep: char,
    len: usize,
    trim: bool,
}

/// A `.000`/`.999` (or with `,`) fraction at the start of `s`, not followed by a digit.
fn fraction(s: &str) -> Option<Fraction> {
    let mut cs = s.chars();
    let sep = cs.next().filter(|c| matches!(c, '.' | ','))?;
    let digit = cs.next().filter(|c| matches!(c, '0' | '9'))?;
    let len = 1 + s[2..].chars().take_while(|&c| c == digit).count();
    if len > 9 || s[1 + len..].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(Fraction { sep, len, trim: digit == '9' })
}

fn hour12(h: i64) -> i64 {
    match h % 12 {
        0 => 12,
        x => x,
    }
}

fn day_of_year(y: i64, m: u32, d: u32) -> i64 {
    crate::time::days_from_civil(y, m, d) - crate::time::days_from_civil(y, 1, 1) + 1
}

#[cfg(test)]
mod tests {
    use super::format;

    #[test]
    fn layouts_read_as_go_formats_them() {
        // 2023-04-05T06:07:08.09Z, a Wednesday.
        let t = 1_680_674_828_090;
        assert_eq!(format(t, "2006-01-02 15:04:05"), "2023-04-05 06:07:08");
        assert_eq!(format(t, "Mon Jan _2 3:4:5 PM MST 2006"), "Wed Apr  5 6:7:8 AM UTC 2023");
        assert_eq!(format(t, "2006-01-02T15:04:05.000Z07:00"), "2023-04-05T06:07:08.090Z");
        assert_eq!(format(t, "15:04:05.999 -0700 Monday January 002"), "06:07:08.09 +0000 Wednesday April 095");
        assert_eq!(format(t - 90, "05.999|06|pm"), "08|23|am");
    }
}
