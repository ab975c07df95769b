//! Alertmanager's matcher strings: `severity="critical"`, `job=~"node|gpu"`, `env!=dev`, and a list of
//! them in one string, `{a="1", b!~"x.*"}`.

use argus_model::{MatchOp, Matcher};

/// Parses one matcher string into its matchers (usually one).
pub fn parse(input: &str) -> Result<Vec<Matcher>, String> {
    let mut s = input.trim();
    if let Some(inner) = s.strip_prefix('{') {
        s = inner.strip_suffix('}').ok_or_else(|| format!("matcher {input:?}: missing closing brace"))?.trim();
    }
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let (m, tail) = one(rest).map_err(|e| format!("matcher {input:?}: {e}"))?;
        out.push(m);
        rest = tail.trim_start();
        if let Some(t) = rest.strip_prefix(',') {
            rest = t.trim_start();
        } else if !rest.is_empty() {
            return Err(format!("matcher {input:?}: expected a comma before {rest:?}"));
        }
    }
    if out.is_empty() {
        return Err(format!("matcher {input:?}: empty"));
    }
    Ok(out)
}

fn one(s: &str) -> Result<(Matcher, &str), String> {
    let name_len = s.bytes().take_while(|c| c.is_ascii_alphanumeric() || *c == b'_').count();
    let name = &s[..name_len];
    if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
        return Err("expected a label name".into());
    }
    let rest = s[name_len..].trim_start();
    let (op, rest) = if let Some(r) = rest.strip_prefix("=~") {
        (MatchOp::RegexMatch, r)
    } else if let Some(r) = rest.strip_prefix("!~") {
        (MatchOp::RegexNoMatch, r)
    } else if let Some(r) = rest.strip_prefix("!=") {
        (MatchOp::NotEqual, r)
    } else if let Some(r) = rest.strip_prefix('=') {
        (MatchOp::Equal, r)
    } else {
        return Err(format!("expected one of = != =~ !~ after {name}"));
    };
    let rest = rest.trim_start();
    let (value, rest) = if let Some(q) = rest.strip_prefix('"') {
        let mut v = String::new();
        let mut chars = q.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err("unterminated quoted value".into()),
                Some((i, '"')) => break i + 1,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => v.push('\n'),
                    Some((_, c)) => v.push(c),
                    None => return Err("unterminated quoted value".into()),
                },
                Some((_, c)) => v.push(c),
            }
        };
        (v, &q[end..])
    } else {
        let end = rest.find(',').unwrap_or(rest.len());
        (rest[..end].trim().to_string(), &rest[end..])
    };
    let m = Matcher::new(name, op, value).map_err(|e| e.to_string())?;
    Ok((m, rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(input: &str, expect: Expect) {
        let got = match parse(input) {
            Ok(ms) => ms.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(" "),
            Err(e) => e,
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn matchers() {
        check(r#"severity="critical""#, expect![[r#"severity="critical""#]]);
        check("severity = critical", expect![[r#"severity="critical""#]]);
        check(r#"job=~"node|gpu""#, expect![[r#"job=~"node|gpu""#]]);
        check(r#"{a="1", b!~"x.*",c!=y}"#, expect![[r#"a="1" b!~"x.*" c!="y""#]]);
        check(r#"msg="say \"hi\"""#, expect![[r#"msg="say \"hi\"""#]]);
        check("severity", expect![[r#"matcher "severity": expected one of = != =~ !~ after severity"#]]);
        check(
            r#"a=~"(""#,
            expect![[r#"
            matcher "a=~\"(\"": invalid regex "(" for label a: regex parse error:
                ^(?s:()$
                 ^
            error: unclosed group"#]],
        );
        check(r#"a="x" b="y""#, expect![[r#"matcher "a=\"x\" b=\"y\"": expected a comma before "b=\"y\"""#]]);
    }
}
