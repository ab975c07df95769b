use super::*;
use promql_parser::parser::Expr;

fn scope(items: &[&str]) -> LabelScope {
    LabelScope::parse(items).unwrap()
}

#[test]
fn matchers_are_parsed_and_bad_ones_named() {
    let s = scope(&[r#"cluster="a""#, r#"tenant=~"x|y""#]);
    assert_eq!(s.to_string(), r#"{cluster="a", tenant=~"x|y"}"#);
    let err = |items: &[&str]| LabelScope::parse(items).unwrap_err().to_string();
    assert_eq!(err(&[]), "no matchers: a scope needs at least one, such as cluster=\"a\"");
    assert!(err(&[r#"cluster="a""#, "cluster"]).starts_with("matcher 2 (\"cluster\") is not a label matcher"));
    assert!(err(&[r#"a="1",b="2""#]).contains("not a single matcher"), "{}", err(&[r#"a="1",b="2""#]));
    assert!(err(&[r#"a=~"(""#]).starts_with("matcher 1"), "{}", err(&[r#"a=~"(""#]));
    assert!(err(&[r#"cluster!="b""#]).contains("also select series without those labels"));
    // One matcher that needs a value bounds the scope; others may match the empty string.
    assert!(LabelScope::parse(&[r#"cluster="a""#, r#"team!="x""#]).is_ok());
}

#[test]
fn series_inside_and_outside() {
    let s = scope(&[r#"cluster="a""#, r#"team!="x""#]);
    let l = |pairs: &[(&str, &str)]| Labels::from_pairs(pairs.iter().copied());
    assert!(s.contains(&l(&[("__name__", "up"), ("cluster", "a")])));
    assert!(s.contains(&l(&[("cluster", "a"), ("team", "y")])));
    assert!(!s.contains(&l(&[("cluster", "b")])));
    assert!(!s.contains(&l(&[("cluster", "a"), ("team", "x")])));
    assert!(!s.contains(&l(&[("host", "h")])), "a series without the label is outside");
    let labels = l(&[("cluster", "b")]);
    assert_eq!(s.first_outside(|n| labels.get(n)).unwrap().to_string(), r#"cluster="a""#);
}

#[test]
fn every_selector_of_a_query_is_restricted() {
    let s = scope(&[r#"cluster="a""#]);
    let cases = [
        ("up", r#"up{cluster="a"}"#),
        (r#"up{job="x"}"#, r#"up{cluster="a",job="x"}"#),
        (r#"{__name__=~".+"}"#, r#"{__name__=~".+",cluster="a"}"#),
        ("rate(x[5m])", r#"rate(x{cluster="a"}[5m])"#),
        ("sum by (cluster) (x) / on() group_left count(y)", ""),
        ("max_over_time(rate(x[1m])[10m:1m])", ""),
        (r#"label_replace(x, "cluster", "b", "", "")"#, ""),
        ("absent(nope)", r#"absent(nope{cluster="a"})"#),
        ("topk(scalar(count(q)), x)", ""),
        ("-x offset 5m", ""),
        ("x @ 100", ""),
        ("1 + 2", "1 + 2"),
        ("time()", "time()"),
        (r#"x{cluster="b"}"#, r#"x{cluster="a",cluster="b"}"#),
    ];
    for (q, want) in cases {
        let got = s.restrict_query(q).unwrap_or_else(|e| panic!("{q}: {e}"));
        if !want.is_empty() {
            assert_eq!(got, want, "{q}");
        }
        assert_selectors_restricted(&promql::parse(&got).unwrap(), q);
    }
}

/// Every selector in `e` carries `cluster="a"`.
fn assert_selectors_restricted(e: &Expr, q: &str) {
    let check = |m: &promql_parser::label::Matchers| {
        let has = |ms: &[PMatcher]| ms.iter().any(|m| m.name == "cluster" && m.value == "a" && m.op == PMatchOp::Equal);
        if m.or_matchers.is_empty() {
            assert!(has(&m.matchers), "{q}: a selector is not restricted: {m}");
        } else {
            assert!(m.or_matchers.iter().all(|alt| has(alt)), "{q}: an alternative is not restricted: {m}");
        }
    };
    match e {
        Expr::VectorSelector(vs) => check(&vs.matchers),
        Expr::MatrixSelector(ms) => check(&ms.vs.matchers),
        Expr::Subquery(s) => assert_selectors_restricted(&s.expr, q),
        Expr::Aggregate(a) => {
            assert_selectors_restricted(&a.expr, q);
            if let Some(p) = &a.param {
                assert_selectors_restricted(p, q);
            }
        }
        Expr::Unary(u) => assert_selectors_restricted(&u.expr, q),
        Expr::Paren(p) => assert_selectors_restricted(&p.expr, q),
        Expr::Binary(b) => {
            assert_selectors_restricted(&b.lhs, q);
            assert_selectors_restricted(&b.rhs, q);
        }
        Expr::Call(c) => c.args.args.iter().for_each(|a| assert_selectors_restricted(a, q)),
        Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
    }
}

/// Every query of the PromQL differential corpus (the queries Argus is checked against Prometheus
/// with) is restricted, prints back to text that parses as the restricted query, and keeps no
/// selector unrestricted. A query the printer could not round-trip would be refused, never run wide.
#[test]
fn the_promql_corpus_is_restricted_exactly() {
    let corpus = include_str!("../../../tests/it/promql_diff/corpus.txt");
    let s = scope(&[r#"cluster="a""#]);
    let (mut restricted, mut refused) = (0, Vec::new());
    for line in corpus.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(at) = words.iter().position(|w| *w == "instant" || *w == "range") else { continue };
        let skip = if words[at] == "instant" { 2 } else { 4 };
        let query = words[at + skip..].join(" ");
        // Queries that are errors on purpose, and `${T+…}` placeholders, are not PromQL yet.
        if query.contains("${") || promql::parse(&query).is_err() {
            continue;
        }
        match s.restrict_query(&query) {
            Ok(text) => {
                assert_selectors_restricted(&promql::parse(&text).unwrap(), &query);
                restricted += 1;
            }
            Err(e) => refused.push(format!("{query}: {e}")),
        }
    }
    assert!(restricted > 300, "only {restricted} corpus queries restricted");
    assert!(refused.is_empty(), "queries the printer does not round-trip:\n{}", refused.join("\n"));
}

#[test]
fn series_selectors_are_restricted_and_other_expressions_refused() {
    let s = scope(&[r#"cluster="a""#]);
    assert_eq!(s.restrict_selector(r#"up{job="x"}"#).unwrap(), r#"up{cluster="a",job="x"}"#);
    assert_eq!(s.restrict_selector(r#"{__name__="up"}"#).unwrap(), r#"{__name__="up",cluster="a"}"#);
    assert!(s.restrict_selector("rate(up[5m])").unwrap_err().to_string().contains("is not a series selector"));
    assert!(s.restrict_selector("up{").is_err());
}
