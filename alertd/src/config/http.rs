//! Validation of Alertmanager's `http_config` (in `global:` and in each HTTP receiver's entry) and of
//! the `<key>` / `<key>_file` secret pairs. Files are named here, relative to the configuration
//! file's directory, and read when the receivers are built and at every request.

use super::ConfigError;
use super::raw;
use super::validate::{Ctx, unsupported};
use crate::receiver::{Authorization, HttpSettings, ProxySettings, SecretSource, TlsSettings, TlsVersion};
use argus_model::Secret;

/// `<key>` or `<key>_file`, not both; `f` is the field prefix (ending in `.`).
pub(super) fn secret(
    c: &Ctx,
    f: &str,
    key: &str,
    inline: &Option<String>,
    file: &Option<String>,
) -> Result<Option<SecretSource>, ConfigError> {
    match (inline, file) {
        (Some(_), Some(_)) => {
            Err(c.err(format!("{f}{key}"), &format!("{key}:"), format!("{key} and {key}_file exclude each other")))
        }
        (Some(s), None) if s.is_empty() => Err(c.err(format!("{f}{key}"), &format!("{key}:"), "empty")),
        (Some(s), None) => Ok(Some(SecretSource::Inline(Secret::new(s.clone())))),
        (None, Some(p)) if p.is_empty() => Err(c.err(format!("{f}{key}_file"), &format!("{key}_file:"), "empty path")),
        (None, Some(p)) => Ok(Some(SecretSource::File(c.path(p)))),
        (None, None) => Ok(None),
    }
}

/// The `http_config` written at `field` (e.g. `receivers[0].webhook_configs[1].http_config`), for
/// errors found at load; `name` says where it is for errors found later, when it is used.
pub(super) fn settings(
    c: &Ctx,
    field: &str,
    name: &str,
    h: Option<&raw::HttpConfig>,
) -> Result<Option<HttpSettings>, ConfigError> {
    let Some(h) = h else { return Ok(None) };
    let f = format!("{field}.");
    unsupported(c, &f, &[("oauth2", h.oauth2.is_some()), ("proxy_connect_header", h.proxy_connect_header.is_some())])?;
    let bearer = secret(c, &f, "bearer_token", &h.bearer_token, &h.bearer_token_file)?;
    let mut ways = Vec::new();
    if h.authorization.is_some() {
        ways.push("authorization");
    }
    if h.basic_auth.is_some() {
        ways.push("basic_auth");
    }
    if bearer.is_some() {
        ways.push("bearer_token");
    }
    if ways.len() > 1 {
        return Err(c.err(
            format!("{f}{}", ways[1]),
            &format!("{}:", ways[1]),
            format!("{} exclude each other: authenticate one way", ways.join(" and ")),
        ));
    }
    let authorization = if let Some(a) = &h.authorization {
        let af = format!("{f}authorization.");
        let scheme = a.kind.clone().unwrap_or_else(|| "Bearer".into());
        if scheme.is_empty() || scheme.contains(char::is_whitespace) || scheme.eq_ignore_ascii_case("basic") {
            return Err(c.err(
                format!("{af}type"),
                "type:",
                format!("{scheme:?} is not a single-word scheme (basic_auth is written as basic_auth:)"),
            ));
        }
        let credentials = secret(c, &af, "credentials", &a.credentials, &a.credentials_file)?
            .ok_or_else(|| c.err(format!("{af}credentials"), "authorization:", "missing"))?;
        Some(Authorization::Scheme { scheme, credentials })
    } else if let Some(b) = &h.basic_auth {
        let bf = format!("{f}basic_auth.");
        let username = secret(c, &bf, "username", &b.username, &b.username_file)?
            .ok_or_else(|| c.err(format!("{bf}username"), "basic_auth:", "missing"))?;
        Some(Authorization::Basic { username, password: secret(c, &bf, "password", &b.password, &b.password_file)? })
    } else {
        bearer.map(|credentials| Authorization::Scheme { scheme: "Bearer".into(), credentials })
    };
    let tls = match &h.tls_config {
        None => TlsSettings::default(),
        Some(t) => tls(c, &format!("{f}tls_config."), t)?,
    };
    let proxy = match (&h.proxy_url, h.proxy_from_environment) {
        (Some(_), Some(true)) => {
            return Err(c.err(
                format!("{f}proxy_from_environment"),
                "proxy_from_environment:",
                "proxy_url and proxy_from_environment exclude each other",
            ));
        }
        (Some(url), _) => {
            let parsed = reqwest::Url::parse(url)
                .map_err(|e| c.err(format!("{f}proxy_url"), "proxy_url:", format!("not a URL: {e}")))?;
            if !matches!(parsed.scheme(), "http" | "https" | "socks5" | "socks5h") {
                return Err(c.err(format!("{f}proxy_url"), "proxy_url:", "not an http(s) proxy URL"));
            }
            ProxySettings::Url { url: Secret::new(url.clone()), no_proxy: h.no_proxy.clone() }
        }
        (None, _) if h.no_proxy.is_some() => {
            return Err(c.err(format!("{f}no_proxy"), "no_proxy:", "needs proxy_url"));
        }
        (None, _) => ProxySettings::Environment,
    };
    Ok(Some(HttpSettings {
        authorization,
        tls,
        proxy,
        follow_redirects: h.follow_redirects.unwrap_or(true),
        field: name.to_string(),
    }))
}

fn tls(c: &Ctx, f: &str, t: &raw::TlsConfig) -> Result<TlsSettings, ConfigError> {
    unsupported(c, f, &[("server_name", t.server_name.is_some())])?;
    let ca = secret(c, f, "ca", &t.ca, &t.ca_file)?;
    let cert = secret(c, f, "cert", &t.cert, &t.cert_file)?;
    let key = secret(c, f, "key", &t.key, &t.key_file)?;
    let client = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        (Some(_), None) => return Err(c.err(format!("{f}key_file"), "cert", "a client certificate needs its key")),
        (None, Some(_)) => return Err(c.err(format!("{f}cert_file"), "key", "a client key needs its certificate")),
    };
    let version = |key: &str, v: &Option<String>| -> Result<Option<TlsVersion>, ConfigError> {
        match v.as_deref() {
            None => Ok(None),
            Some("TLS10") => Ok(Some(TlsVersion::Tls10)),
            Some("TLS11") => Ok(Some(TlsVersion::Tls11)),
            Some("TLS12") => Ok(Some(TlsVersion::Tls12)),
            Some("TLS13") => Ok(Some(TlsVersion::Tls13)),
            Some(other) => Err(c.err(
                format!("{f}{key}"),
                &format!("{key}:"),
                format!("{other:?} is not TLS10, TLS11, TLS12 or TLS13"),
            )),
        }
    };
    let (min_version, max_version) = (version("min_version", &t.min_version)?, version("max_version", &t.max_version)?);
    if let (Some(lo), Some(hi)) = (min_version, max_version)
        && (lo as u8) > (hi as u8)
    {
        return Err(c.err(format!("{f}min_version"), "min_version:", "above max_version"));
    }
    Ok(TlsSettings {
        ca,
        client,
        insecure_skip_verify: t.insecure_skip_verify.unwrap_or(false),
        min_version,
        max_version,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use expect_test::{Expect, expect};

    /// A webhook receiver with `http_config: {h}` (YAML flow); shows its validated settings or the error.
    fn check(h: &str, expect: Expect) {
        let src = format!(
            "route: {{receiver: r}}\nreceivers:\n  - name: r\n    webhook_configs:\n      - url: 'http://hook/'\n        http_config: {h}\n"
        );
        let got = match parse(&src, "/etc/argus/alertd.yml") {
            Ok(c) => format!("{:?}", c.receivers["r"].webhooks[0].http),
            Err(e) => e.to_string(),
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn receiver_http_config() {
        check(
            "{basic_auth: {username: u, password_file: pw}, tls_config: {ca_file: ca.pem, cert_file: c.pem, key_file: /k.pem, min_version: TLS12}, proxy_url: 'http://proxy:3128', no_proxy: 'localhost,10.0.0.0/8', follow_redirects: false}",
            expect![[
                r#"Some(HttpSettings { authorization: Some(Basic { username: Inline(Secret(***)), password: Some(File("/etc/argus/pw")) }), tls: TlsSettings { ca: Some(File("/etc/argus/ca.pem")), client: Some((File("/etc/argus/c.pem"), File("/k.pem"))), insecure_skip_verify: false, min_version: Some(Tls12), max_version: None }, proxy: Url { url: Secret(***), no_proxy: Some("localhost,10.0.0.0/8") }, follow_redirects: false, field: "receivers \"r\" webhook_configs[0].http_config" })"#
            ]],
        );
        check(
            "{bearer_token_file: /run/secrets/token, proxy_from_environment: true, enable_http2: true}",
            expect![[
                r#"Some(HttpSettings { authorization: Some(Scheme { scheme: "Bearer", credentials: File("/run/secrets/token") }), tls: TlsSettings { ca: None, client: None, insecure_skip_verify: false, min_version: None, max_version: None }, proxy: Environment, follow_redirects: true, field: "receivers \"r\" webhook_configs[0].http_config" })"#
            ]],
        );
        check(
            "{authorization: {credentials: a}, basic_auth: {username: u}}",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].webhook_configs[0].http_config.basic_auth: authorization and basic_auth exclude each other: authenticate one way"#
            ]],
        );
        check(
            "{authorization: {type: Basic, credentials: a}}",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].webhook_configs[0].http_config.authorization.type: "Basic" is not a single-word scheme (basic_auth is written as basic_auth:)"#
            ]],
        );
        check(
            "{tls_config: {cert_file: c.pem}}",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].webhook_configs[0].http_config.tls_config.key_file: a client certificate needs its key"#
            ]],
        );
        check(
            "{tls_config: {min_version: TLS1.2}}",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].webhook_configs[0].http_config.tls_config.min_version: "TLS1.2" is not TLS10, TLS11, TLS12 or TLS13"#
            ]],
        );
        check(
            "{proxy_url: 'ftp://p/'}",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].webhook_configs[0].http_config.proxy_url: not an http(s) proxy URL"#
            ]],
        );
        check(
            "{no_proxy: localhost}",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].webhook_configs[0].http_config.no_proxy: needs proxy_url"#
            ]],
        );
        check(
            "{oauth2: {client_id: x}}",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].webhook_configs[0].http_config.oauth2: not supported by alertd yet"#
            ]],
        );
        check(
            "{basic_auth: {password: p}}",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].webhook_configs[0].http_config.basic_auth.username: missing"#
            ]],
        );
    }

    #[test]
    fn global_defaults_and_files() {
        let src = "global:\n  smtp_smarthost: 'smtp.x.org:587'\n  smtp_from: alertd@x.org\n  smtp_auth_username: u\n  smtp_auth_password_file: smtp.pw\n  smtp_require_tls: false\n  slack_api_url_file: /run/slack\n  http_config: {bearer_token: t}\nroute: {receiver: r}\nreceivers:\n  - name: r\n    email_configs: [{to: a@x.org}, {to: b@x.org, from: me@x.org, auth_username: v, auth_password: p}]\n    slack_configs: [{channel: '#a'}, {api_url: 'https://hooks.slack.com/x'}]\n    webhook_configs: [{url_file: hook.url}]\n";
        let c = parse(src, "/etc/argus/alertd.yml").unwrap();
        let r = &c.receivers["r"];
        let emails: Vec<String> = r
            .email
            .iter()
            .map(|e| {
                format!("{} {}:{} {:?} {:?} {:?}", e.from, e.host, e.port, e.tls, e.auth_username, e.auth_password)
            })
            .collect();
        expect![[r#"
            alertd@x.org smtp.x.org:587 None Some("u") Some(File("/etc/argus/smtp.pw"))
            me@x.org smtp.x.org:587 None Some("v") Some(Inline(Secret(***)))"#]]
        .assert_eq(&emails.join("\n"));
        let slack: Vec<String> = r.slack.iter().map(|s| format!("{:?}", s.api_url)).collect();
        expect![[r#"File("/run/slack") | Inline(Secret(***))"#]].assert_eq(&slack.join(" | "));
        expect![[r#"File("/etc/argus/hook.url") None"#]]
            .assert_eq(&format!("{:?} {:?}", r.webhooks[0].url, r.webhooks[0].http));
        expect![[r#"Some(Scheme { scheme: "Bearer", credentials: Inline(Secret(***)) })"#]]
            .assert_eq(&format!("{:?}", c.http.authorization));

        let bad = |src: &str| parse(src, "alertd.yml").unwrap_err().to_string();
        expect!["alertd.yml:4: receivers[0].slack_configs[0].api_url: missing (and no global slack_api_url)"]
            .assert_eq(&bad("route: {receiver: r}\nreceivers:\n  - name: r\n    slack_configs: [{channel: '#a'}]\n"));
        expect!["alertd.yml:4: receivers[0].webhook_configs[0].url: url and url_file exclude each other"].assert_eq(
            &bad("route: {receiver: r}\nreceivers:\n  - name: r\n    webhook_configs: [{url: 'http://a/', url_file: f}]\n"),
        );
        expect!["alertd.yml:2: global.smtp_auth_password: smtp_auth_password and smtp_auth_password_file exclude each other"]
            .assert_eq(&bad("global:\n  smtp_auth_password: a\n  smtp_auth_password_file: b\nroute: {receiver: r}\nreceivers:\n  - name: r\n    email_configs: [{to: a@x.org, from: f@x.org, smarthost: 'h:25', auth_username: u}]\n"));
    }
}
