use super::*;
use crate::config::{AuthToken, Config};

/// The rows of the table in docs/auth.md under `header`: method (`None` for `any`), path, and the
/// last cell.
fn doc_table(header: &str) -> Vec<(Option<Method>, String, String)> {
    let doc = include_str!("../../docs/auth.md");
    let start = doc.find(header).unwrap_or_else(|| panic!("the table {header:?} in docs/auth.md"));
    doc[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(|c| c.trim().trim_matches('`')).collect();
            let method = (cells[0] != "any").then(|| Method::from_bytes(cells[0].as_bytes()).unwrap());
            (method, cells[1].to_string(), cells[2].to_string())
        })
        .collect()
}

/// docs/auth.md's table is `MAP`, row for row.
#[test]
fn the_documented_map_is_the_map() {
    let rows: Vec<(Option<Method>, String, Option<Scope>)> = doc_table("| Method | Path | Scope |")
        .into_iter()
        .map(|(method, path, scope)| {
            let scope = match scope.as_str() {
                "open" => None,
                "read" => Some(Scope::Read),
                "write" => Some(Scope::Write),
                "silence" => Some(Scope::Silence),
                "admin" => Some(Scope::Admin),
                other => panic!("unknown scope {other:?}"),
            };
            (method, path, scope)
        })
        .collect();
    let code: Vec<(Option<Method>, String, Option<Scope>)> =
        MAP.iter().map(|(m, p, s)| (m.clone(), p.to_string(), *s)).collect();
    assert_eq!(rows, code);
}

/// docs/auth.md's tenancy table is `SCOPED`, row for row.
#[test]
fn the_documented_tenancy_table_is_the_table() {
    use tenancy::Confine;
    let rows: Vec<(Option<Method>, String, Confine)> = doc_table("| Method | Path | Confined by |")
        .into_iter()
        .map(|(method, path, how)| {
            let how = match how.as_str() {
                "query" => Confine::Query,
                "match" => Confine::Match,
                "handler" => Confine::Handler,
                "shared" => Confine::Shared,
                other => panic!("unknown confinement {other:?}"),
            };
            (method, path, how)
        })
        .collect();
    let code: Vec<(Option<Method>, String, Confine)> =
        tenancy::SCOPED.iter().map(|(m, p, c)| (m.clone(), p.to_string(), *c)).collect();
    assert_eq!(rows, code);
}

/// Every endpoint a confined token may reach is one that needs a token at all, and the ones that
/// are not listed (Argus' own metrics, forecasts, incidents, admin) are closed to it.
#[test]
fn confined_tokens_reach_only_the_listed_endpoints() {
    use tenancy::{Confine, confinement};
    let get = Method::GET;
    assert_eq!(confinement(&get, "/api/v1/query"), Some(Confine::Query));
    assert_eq!(confinement(&Method::POST, "/api/v1/label/job/values"), Some(Confine::Match));
    assert_eq!(confinement(&Method::DELETE, "/api/v2/silence/abc"), Some(Confine::Handler));
    for closed in ["/metrics", "/api/v1/forecasts", "/api/v1/capacity", "/api/v1/incidents", "/api/v1/anomalies"] {
        assert_eq!(confinement(&get, closed), None, "{closed}");
    }
    assert_eq!(confinement(&Method::POST, "/api/v1/admin/tsdb/snapshot"), None);
    assert_eq!(confinement(&Method::POST, "/api/v1/incidents/3/ack"), None);
    for (m, p, _) in tenancy::SCOPED {
        let m = m.clone().unwrap_or(Method::GET);
        assert!(required(&m, &p.replace('*', "x")).is_some(), "{m} {p} needs no token: it cannot be confined");
    }
}

#[test]
fn endpoints_need_their_scope() {
    use Scope::*;
    let cases = [
        ("GET", "/-/healthy", None),
        ("GET", "/-/ready", None),
        ("POST", "/api/v2/write", Some(Write)),
        ("POST", "/write", Some(Write)),
        ("POST", "/api/v1/write", Some(Write)),
        ("GET", "/api/v1/query", Some(Read)),
        ("POST", "/api/v1/query_range", Some(Read)),
        ("POST", "/api/v1/label/job/values", Some(Read)),
        ("POST", "/api/v1/status/buildinfo", Some(Read)),
        ("GET", "/metrics", Some(Read)),
        ("GET", "/api/v2/alerts", Some(Read)),
        ("POST", "/api/v2/alerts", Some(Write)),
        ("POST", "/api/v1/scheduler/capacity", Some(Write)),
        ("GET", "/api/v2/silences", Some(Read)),
        ("POST", "/api/v2/silences", Some(Silence)),
        ("DELETE", "/api/v2/silence/abc", Some(Silence)),
        ("POST", "/api/v1/incidents/17/ack", Some(Silence)),
        ("POST", "/api/v1/incidents/17/silence", Some(Silence)),
        ("GET", "/api/v1/incidents", Some(Read)),
        ("POST", "/internal/force_flush", Some(Admin)),
        ("GET", "/internal/force_flush", Some(Admin)),
        ("POST", "/api/v1/admin/tsdb/snapshot", Some(Admin)),
        // Not in the map: closed.
        ("PUT", "/api/v2/alerts", Some(Admin)),
        ("DELETE", "/api/v1/series", Some(Admin)),
        ("POST", "/somewhere/else", Some(Admin)),
        ("POST", "/api/v1/incidents//ack", Some(Admin)),
    ];
    for (m, p, want) in cases {
        assert_eq!(required(&Method::from_bytes(m.as_bytes()).unwrap(), p), want, "{m} {p}");
    }
}

#[test]
fn credentials_in_every_spelling() {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let cases = [
        ("Bearer abc", Some("abc")),
        ("bearer  abc ", Some("abc")),
        ("Token abc", Some("abc")),
        (&*format!("Basic {}", b64("user:abc")), Some("abc")),
        (&*format!("Basic {}", b64("abc:")), Some("abc")),
        (&*format!("Basic {}", b64(":")), None),
        ("Basic !!!", None),
        ("Bearer", None),
        ("abc", None),
        ("Digest abc", None),
    ];
    for (header, want) in cases {
        let got = credential(&HeaderValue::from_str(header).unwrap());
        assert_eq!(got.as_deref(), want, "{header}");
    }
}

fn cfg(toml: &str) -> crate::config::Auth {
    Config::parse(toml).unwrap().auth
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn open_only_on_loopback_without_tokens() {
    assert!(Auth::resolve(&cfg(""), addr("127.0.0.1:9700")).unwrap().is_open());
    assert!(Auth::resolve(&cfg(""), addr("[::1]:9700")).unwrap().is_open());
    let e = Auth::resolve(&cfg(""), addr("0.0.0.0:9700")).err().unwrap().to_string();
    assert!(e.starts_with("refusing to listen on 0.0.0.0:9700 without authentication"), "{e}");
    assert!(e.contains("argus token new") && e.contains("anonymous = [\"read\"]"), "{e}");
    let a = Auth::resolve(&cfg("[auth]\nanonymous = [\"read\"]\n"), addr("0.0.0.0:9700")).unwrap();
    assert!(!a.is_open() && a.anonymous.allows(Scope::Read) && !a.anonymous.allows(Scope::Write));
    let a = Auth::resolve(&cfg("[auth]\nanonymous = [\"admin\"]\n"), addr("10.0.0.1:9700")).unwrap();
    assert!(a.is_open());
    let t = format!("[[auth.tokens]]\nname = \"a\"\nscopes = [\"read\"]\nsha256 = \"{}\"\n", hash_token("x"));
    let a = Auth::resolve(&cfg(&t), addr("127.0.0.1:9700")).unwrap();
    assert_eq!(a.anonymous, Scopes::default(), "tokens close the loopback too");
}

#[test]
fn tokens_match_by_digest_only() {
    let mut a = Auth { tokens: vec![], anonymous: Scopes::default(), refusals: Default::default() };
    let internal = a.add_internal("internal", &[Scope::Write]).unwrap();
    a.tokens.push(Token {
        name: "reader".into(),
        scopes: Scopes::of(&[Scope::Read]),
        labels: None,
        digest: digest("r3ad"),
    });
    let auth = |v: &str| {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        a.authenticate(&h).map(|t| t.map(|t| t.name.clone()))
    };
    assert_eq!(auth("Bearer r3ad"), Ok(Some("reader".into())));
    assert_eq!(auth(&format!("Token {internal}")), Ok(Some("internal".into())));
    assert_eq!(auth("Bearer r3a"), Err("invalid token"));
    assert_eq!(auth(&format!("Bearer {}", hash_token("r3ad"))), Err("invalid token"), "the digest is no token");
    assert!(auth("Negotiate x").unwrap_err().starts_with("unreadable Authorization header"));
    assert_eq!(a.authenticate(&HeaderMap::new()).map(|t| t.is_some()), Ok(false));
}

fn digest(t: &str) -> [u8; 32] {
    parse_digest(&hash_token(t)).unwrap()
}

#[test]
fn scopes_nest_only_under_admin() {
    let admin = Scopes::of(&[Scope::Admin]);
    assert!(admin.allows(Scope::Read) && admin.allows(Scope::Write) && admin.allows(Scope::Admin));
    let write = Scopes::of(&[Scope::Write]);
    assert!(write.allows(Scope::Write) && !write.allows(Scope::Read) && !write.allows(Scope::Admin));
    let rw = Scopes::of(&[Scope::Read, Scope::Write]);
    assert!(rw.allows(Scope::Read) && rw.allows(Scope::Write) && !rw.allows(Scope::Admin));
    assert!(!rw.allows(Scope::Silence) && admin.allows(Scope::Silence));
    let oncall = Scopes::of(&[Scope::Read, Scope::Silence]);
    assert!(oncall.allows(Scope::Silence) && !oncall.allows(Scope::Write) && !oncall.allows(Scope::Admin));
}

#[test]
fn new_tokens_are_random_and_hash_to_what_is_configured() {
    let (a, b) = (new_token().unwrap(), new_token().unwrap());
    assert_ne!(a, b);
    assert_eq!(a.len(), "argus_".len() + 64);
    // SHA-256("abc"), FIPS 180-2's example.
    assert_eq!(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    let _: AuthToken =
        toml::from_str(&format!("name = \"n\"\nscopes = [\"write\"]\nsha256 = \"{}\"", hash_token(&a))).unwrap();
}

#[test]
fn token_entries_are_validated_where_they_are() {
    let check = |text: &str, want: &str| {
        let e = Config::parse(text).unwrap_err();
        assert!(e.starts_with(want), "{e}");
    };
    let h = hash_token("t");
    check("[auth]\ntokens = [\"s3cret\"]\n", "2:11: invalid type: string \"s3cret\"");
    check(
        "[[auth.tokens]]\nname = \"a\"\nscopes = [\"read\"]\nsha256 = \"s3cret\"\n",
        "1:1: auth.tokens: token \"a\": sha256 must be 64 hex digits",
    );
    check(
        &format!("[[auth.tokens]]\nname = \"a\"\nscopes = []\nsha256 = \"{h}\"\n"),
        "1:1: auth.tokens: token \"a\" has no scopes",
    );
    check(
        &format!("[[auth.tokens]]\nname = \"a\"\nscopes = [\"read\"]\nmatchers = ['cluster']\nsha256 = \"{h}\"\n"),
        "1:1: auth.tokens: token \"a\": matchers: matcher 1 (\"cluster\") is not a label matcher",
    );
    check(
        &format!("[[auth.tokens]]\nname = \"a\"\nscopes = [\"read\"]\nmatchers = ['team!=\"x\"']\nsha256 = \"{h}\"\n"),
        "1:1: auth.tokens: token \"a\": matchers: the matchers {team!=\"x\"} also select series without those labels",
    );
    check(
        &format!("[[auth.tokens]]\nname = \"a\"\nscopes = [\"root\"]\nsha256 = \"{h}\"\n"),
        "3:11: unknown variant `root`",
    );
    check(
        &format!(
            "[[auth.tokens]]\nname = \"a\"\nscopes = [\"read\"]\nsha256 = \"{h}\"\n[[auth.tokens]]\nname = \"a\"\nscopes = [\"read\"]\nsha256 = \"{h}\"\n"
        ),
        "1:1: auth.tokens: name \"a\" is used twice",
    );
    check("[auth]\nanonymous = [\"everyone\"]\n", "2:14: unknown variant `everyone`");
    check("[server]\ntls_cert = \"c.pem\"\n", "2:1: server.tls_cert: set together with server.tls_key");
}
