use super::*;
use expect_test::{Expect, expect};

/// Renders the layout of a `[store.remote]` section given as TOML, or its error.
fn check(toml_text: &str, want: Expect) {
    let spec: RemoteSpec = match toml::from_str(toml_text) {
        Ok(s) => s,
        Err(e) => return want.assert_eq(&format!("parse error: {}", e.message())),
    };
    want.assert_eq(&match spec.validate() {
        Ok(o) => {
            let tenant = o.tenant_header.map(|(h, v)| format!(" | {h}: {v}")).unwrap_or_default();
            format!("{} | {} | {}{tenant}", o.write_url, o.query_url, o.range_url)
        }
        Err(e) => format!("error: {e}"),
    });
}

#[test]
fn flavours_lay_out_their_urls() {
    check(
        r#"url = "http://vm:8428""#,
        expect!["http://vm:8428/api/v1/write | http://vm:8428/api/v1/query | http://vm:8428/api/v1/query_range"],
    );
    check(
        r#"url = "http://vm:8428/"
write = "line_protocol""#,
        expect!["http://vm:8428/api/v2/write | http://vm:8428/api/v1/query | http://vm:8428/api/v1/query_range"],
    );
    check(
        r#"flavour = "victoriametrics-cluster"
write_url = "http://vminsert:8480"
read_url = "http://vmselect:8481""#,
        expect![
            "http://vminsert:8480/insert/0/prometheus/api/v1/write | http://vmselect:8481/select/0/prometheus/api/v1/query | http://vmselect:8481/select/0/prometheus/api/v1/query_range"
        ],
    );
    check(
        r#"flavour = "victoriametrics-cluster"
url = "https://vmauth/gw/"
tenant = "7:3"
write = "line_protocol""#,
        expect![
            "https://vmauth/gw/insert/7:3/influx/api/v2/write | https://vmauth/gw/select/7:3/prometheus/api/v1/query | https://vmauth/gw/select/7:3/prometheus/api/v1/query_range"
        ],
    );
    check(
        r#"flavour = "prometheus"
url = "http://prom:9090""#,
        expect!["http://prom:9090/api/v1/write | http://prom:9090/api/v1/query | http://prom:9090/api/v1/query_range"],
    );
    check(
        r#"flavour = "mimir"
url = "http://mimir:8080"
tenant = "team-a""#,
        expect![
            "http://mimir:8080/api/v1/push | http://mimir:8080/prometheus/api/v1/query | http://mimir:8080/prometheus/api/v1/query_range | X-Scope-OrgID: team-a"
        ],
    );
    check(
        r#"flavour = "thanos"
write_url = "http://receive:19291"
read_url = "http://query:10902""#,
        expect![
            "http://receive:19291/api/v1/receive | http://query:10902/api/v1/query | http://query:10902/api/v1/query_range"
        ],
    );
}

#[test]
fn bad_sections_name_the_field() {
    check("", expect!["error: url: required (or both write_url and read_url)"]);
    check(r#"write_url = "http://a""#, expect!["error: url: required (or both write_url and read_url)"]);
    check(r#"url = "vm:8428""#, expect![[r#"error: url: "vm:8428" is not an http or https URL"#]]);
    check(r#"url = "not a url""#, expect![[r#"error: url: "not a url" is not a URL: relative URL without a base"#]]);
    check(
        r#"url = "http://user:pw@vm""#,
        expect!["error: url: credentials go in basic_auth, bearer_token or token, not in the URL"],
    );
    check(r#"url = "http://vm?x=1""#, expect![[r#"error: url: "http://vm?x=1" must not have a query or fragment"#]]);
    check(
        r#"url = "http://vm"
tenant = "1""#,
        expect![[r#"error: tenant: not used by flavour "victoriametrics""#]],
    );
    check(
        r#"flavour = "victoriametrics-cluster"
url = "http://vm"
tenant = "a""#,
        expect![[r#"error: tenant: "a" is not a VictoriaMetrics tenant (accountID or accountID:projectID)"#]],
    );
    check(
        r#"flavour = "prometheus"
url = "http://p"
write = "line_protocol""#,
        expect![[r#"error: write: line_protocol is not accepted by flavour "prometheus"; use remote_write"#]],
    );
    check(
        r#"url = "http://vm"
timeout = "0s""#,
        expect!["error: timeout: must be more than zero"],
    );
    check(
        r#"url = "http://vm"
bearer_token = "t"
basic_auth = { username = "u", password = "p" }"#,
        expect!["error: basic_auth: set either a bearer token or basic_auth, not both"],
    );
    check(
        r#"url = "http://vm"
bearer_token_file = "/run/secrets/token"
basic_auth = { username = "u", password = "p" }"#,
        expect!["error: basic_auth: set either a bearer token or basic_auth, not both"],
    );
    check(
        r#"url = "http://vm"
bearer_token = "t"
bearer_token_file = "/run/secrets/token""#,
        expect!["error: bearer_token_file: set either bearer_token or bearer_token_file, not both"],
    );
    check(
        r#"url = "http://vm"
bearer_token = """#,
        expect!["error: bearer_token: must not be empty"],
    );
    check(
        r#"url = "http://vm"
bearer_token_file = """#,
        expect!["error: bearer_token_file: must not be empty"],
    );
    check(
        r#"url = "http://vm"
basic_auth = { username = "u" }"#,
        expect!["error: basic_auth.password: required (or basic_auth.password_file)"],
    );
    check(
        r#"url = "http://vm"
basic_auth = { username = "u", password = "p", password_file = "/run/secrets/pw" }"#,
        expect![
            "error: basic_auth.password_file: set either basic_auth.password or basic_auth.password_file, not both"
        ],
    );
    check(
        r#"flavour = "cortex""#,
        expect![
            "parse error: unknown variant `cortex`, expected one of `victoriametrics`, `victoriametrics-cluster`, `prometheus`, `mimir`, `thanos`"
        ],
    );
}

#[test]
fn secrets_never_show_in_debug() {
    let spec: RemoteSpec = toml::from_str(
        r#"url = "http://vm"
basic_auth = { username = "u", password = "hunter2" }"#,
    )
    .unwrap();
    let opts = spec.validate().unwrap();
    let shown = format!("{spec:?} {opts:?}");
    assert!(!shown.contains("hunter2") && shown.contains("Secret(***)"), "{shown}");
    let influx: InfluxSpec =
        toml::from_str("url = \"http://influx:8086\"\norg = \"o\"\nbucket = \"b\"\ntoken = \"s3cret\"\n").unwrap();
    let shown = format!("{influx:?} {:?}", influx.validate().unwrap());
    assert!(!shown.contains("s3cret"), "{shown}");
}

#[test]
fn influxdb2_urls_are_server_roots() {
    let spec = |url: &str| InfluxSpec {
        url: url.into(),
        org: "o".into(),
        bucket: "b".into(),
        token: Secret::new("t"),
        timeout: None,
        ca_file: None,
    };
    assert_eq!(spec("http://influx:8086").validate().unwrap().url.as_str(), "http://influx:8086/");
    let e = spec("http://influx:8086/influx").validate().unwrap_err();
    assert!(e.starts_with("url: \"http://influx:8086/influx\" has a path"), "{e}");
    let e = InfluxSpec { bucket: String::new(), ..spec("http://i") }.validate().unwrap_err();
    assert_eq!(e, "bucket: must not be empty");
}

/// Renders how a section's credentials are sent: the key a file comes from, never a secret.
fn auth_of(toml_text: &str) -> String {
    let spec: RemoteSpec = toml::from_str(toml_text).unwrap();
    match spec.validate().unwrap().http.auth {
        Auth::None => "none".into(),
        Auth::Bearer(SecretSource::Inline(_)) => "bearer inline".into(),
        Auth::Bearer(SecretSource::File(f)) => format!("bearer from {} {}", f.key, f.path.display()),
        Auth::Basic { username, password: SecretSource::Inline(_) } => format!("basic {username} inline"),
        Auth::Basic { username, password: SecretSource::File(f) } => {
            format!("basic {username} from {} {}", f.key, f.path.display())
        }
    }
}

#[test]
fn credentials_come_inline_or_from_files() {
    expect!["none"].assert_eq(&auth_of(r#"url = "http://vm""#));
    expect!["bearer inline"].assert_eq(&auth_of("url = \"http://vm\"\nbearer_token = \"t\""));
    expect!["bearer from bearer_token_file /run/t"]
        .assert_eq(&auth_of("url = \"http://vm\"\nbearer_token_file = \"/run/t\""));
    expect!["basic u inline"]
        .assert_eq(&auth_of("url = \"http://vm\"\nbasic_auth = { username = \"u\", password = \"p\" }"));
    expect!["basic u from basic_auth.password_file /run/p"]
        .assert_eq(&auth_of("url = \"http://vm\"\nbasic_auth = { username = \"u\", password_file = \"/run/p\" }"));
}

#[test]
fn a_secret_file_is_read_again_and_its_last_good_secret_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    let f = SecretFile::new("bearer_token_file", path.clone());
    let e = f.read().unwrap_err().replace(&dir.path().display().to_string(), "DIR");
    expect!["bearer_token_file DIR/token: No such file or directory (os error 2)"].assert_eq(&e);
    assert!(f.current().is_none(), "never readable: nothing to send");
    std::fs::write(&path, "\n").unwrap();
    let e = f.read().unwrap_err().replace(&dir.path().display().to_string(), "DIR");
    expect!["bearer_token_file DIR/token: empty"].assert_eq(&e);
    std::fs::write(&path, "first\n").unwrap();
    assert_eq!(f.read().unwrap().expose(), "first", "the trailing newline is not part of it");
    std::fs::write(&path, "second").unwrap();
    assert_eq!(f.current().unwrap().expose(), "second", "a rotated secret is used at once");
    std::fs::remove_file(&path).unwrap();
    assert_eq!(f.current().unwrap().expose(), "second", "a vanished file keeps the last secret");
    assert!(!format!("{f:?}").contains("second"), "{f:?}");
}
