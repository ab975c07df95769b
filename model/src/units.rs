//! The values every Argus TOML configuration section shares: durations and byte sizes as operators
//! write them, and the error naming the key a refused value sits under. One parser each, so
//! `[store] query_timeout`, `[collector.host] interval` and `[analyzer] interval` accept the same
//! spellings and refuse bad ones in the same words. (alertd's YAML keeps Alertmanager's duration
//! grammar, `1h30m` with `d`, `w` and `y`, as Alertmanager users write it.)

use std::time::Duration;

/// A non-zero duration: "10s", "500ms", "5m", "1h 30m", "35d" (humantime's spellings).
pub fn duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|_| format!("{s:?} is not a duration (e.g. 500ms, 10s, 5m, 35d)"))?;
    if d.is_zero() {
        return Err("must be more than zero".into());
    }
    Ok(d)
}

/// A byte size: "512MiB", "4GiB", "1000000" (bytes); binary units KiB, MiB, GiB, TiB and decimal
/// KB, MB, GB, TB.
pub fn bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().map_err(|_| format!("{s:?} is not a size (e.g. 512MiB, 4GiB)"))?;
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "TiB" => 1 << 40,
        "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        u => return Err(format!("unknown unit {u:?} (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)")),
    };
    n.checked_mul(mult).ok_or_else(|| format!("{s:?} is too large"))
}

/// A configuration value refused: the key it sits under (`host.interval`, `sink[0].url`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct FieldError {
    pub key: String,
    pub reason: String,
}

impl FieldError {
    pub fn new(key: impl Into<String>, reason: impl Into<String>) -> FieldError {
        FieldError { key: key.into(), reason: reason.into() }
    }

    /// The same error one table further out: `interval` under `host` becomes `host.interval`.
    pub fn under(self, table: &str) -> FieldError {
        FieldError { key: format!("{table}.{}", self.key), reason: self.reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_operators_write_them() {
        assert_eq!(duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(duration(" 500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("1h 30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(duration("35d"), Ok(Duration::from_secs(35 * 86_400)));
        assert_eq!(duration("0s"), Err("must be more than zero".into()));
        assert_eq!(duration("soon"), Err(r#""soon" is not a duration (e.g. 500ms, 10s, 5m, 35d)"#.into()));
    }

    #[test]
    fn sizes_binary_and_decimal() {
        assert_eq!(bytes("512MiB"), Ok(512 << 20));
        assert_eq!(bytes("4 GiB"), Ok(4 << 30));
        assert_eq!(bytes("2TB"), Ok(2_000_000_000_000));
        assert_eq!(bytes("1000000"), Ok(1_000_000));
        assert_eq!(
            bytes("1parsec"),
            Err(r#"unknown unit "parsec" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)"#.into())
        );
        assert_eq!(bytes("MiB"), Err(r#""MiB" is not a size (e.g. 512MiB, 4GiB)"#.into()));
        assert_eq!(bytes("99999999999TiB"), Err(r#""99999999999TiB" is too large"#.into()));
    }

    #[test]
    fn a_field_error_names_its_table() {
        let e = FieldError::new("interval", "must be more than zero").under("host");
        assert_eq!(e.to_string(), "host.interval: must be more than zero");
    }
}
