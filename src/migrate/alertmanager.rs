//! The checks of an Alertmanager 0.25 configuration file. Each cites the sentence of Argus' docs it
//! implements; the refused keys are those alertd's raw model reads as `Unsupported`
//! (alertd/src/config/raw.rs) and its validation refuses by name.

use super::templates::{self, Name};
use super::yaml::{Doc, entries, items, text};
use super::{Finding, Kind};
use serde_norway::Value;

/// What to do about a receiver kind alertd lacks. docs/alerting.md, "What has to change":
/// "not supported yet: keep those routes in your Alertmanager for now (Prometheus sends to both), or,
/// where the vendor takes an incoming webhook, use `webhook_configs` with an `argus.body_template` in
/// the vendor's JSON shape".
const KEEP_ON_ALERTMANAGER: &str = "keep the routes to this receiver on Alertmanager for now (Prometheus can send to both), or, where the vendor takes an incoming webhook, use webhook_configs with an argus.body_template in the vendor's JSON shape";

/// Receiver kinds alertd has no integration for. docs/alertd.md, "Supported subset": "VictorOps,
/// Pushover, SNS, Telegram, Webex, Discord, MS Teams and WeChat receivers are refused by name".
const RECEIVERS: [(&str, &str); 8] = [
    ("victorops_configs", "VictorOps"),
    ("pushover_configs", "Pushover"),
    ("sns_configs", "Amazon SNS"),
    ("telegram_configs", "Telegram"),
    ("webex_configs", "Webex"),
    ("discord_configs", "Discord"),
    ("msteams_configs", "Microsoft Teams"),
    ("wechat_configs", "WeChat"),
];

/// docs/alertd.md, "Supported subset", `global`: "`smtp_auth_secret`, `smtp_auth_identity` and the
/// other vendors' global keys are refused by name".
const GLOBAL: [(&str, &str); 10] = [
    (
        "smtp_auth_secret",
        "use smtp_auth_username with smtp_auth_password (PLAIN or LOGIN), or keep e-mail on Alertmanager",
    ),
    ("smtp_auth_identity", "use smtp_auth_username with smtp_auth_password, or keep e-mail on Alertmanager"),
    ("wechat_api_url", KEEP_ON_ALERTMANAGER),
    ("wechat_api_secret", KEEP_ON_ALERTMANAGER),
    ("wechat_api_corp_id", KEEP_ON_ALERTMANAGER),
    ("victorops_api_url", KEEP_ON_ALERTMANAGER),
    ("victorops_api_key", KEEP_ON_ALERTMANAGER),
    ("victorops_api_key_file", KEEP_ON_ALERTMANAGER),
    ("telegram_api_url", KEEP_ON_ALERTMANAGER),
    ("webex_api_url", KEEP_ON_ALERTMANAGER),
];

/// docs/alertd.md, "Supported subset": "Slack's `fields`, `short_fields`, `callback_id`,
/// `link_names`, `mrkdwn_in`, `actions` … are refused by name".
const SLACK_REFUSED: [&str; 6] = ["fields", "short_fields", "callback_id", "link_names", "mrkdwn_in", "actions"];

/// Slack fields whose Alertmanager default is a template that renders something, and alertd's own
/// differs. docs/alertd.md, "Differences from Alertmanager 0.25": "Where a field is not set alertd
/// sends its own message, not Alertmanager's default (`username: Alertmanager`, `title_link` to
/// Alertmanager's UI, …): name the default template (`{{ template "slack.default.username" . }}`) to
/// get Alertmanager's." Alertmanager's `slack.default.text` is empty; alertd's own text is its alert
/// list (docs/alertd.md, "A field left out keeps alertd's own rendering").
const SLACK_DEFAULTS: [(&str, &str); 5] = [
    ("username", "slack.default.username"),
    ("title", "slack.default.title"),
    ("title_link", "slack.default.titlelink"),
    ("text", "slack.default.text"),
    ("fallback", "slack.default.fallback"),
];

/// docs/alerting.md, "What has to change": "Unset, alertd fills them with its own title, text and
/// alert list"; Alertmanager's defaults are these templates (alertd's built-in default.tmpl).
const PAGERDUTY_DEFAULTS: [(&str, &str); 2] =
    [("description", "pagerduty.default.description"), ("client", "pagerduty.default.client")];
const OPSGENIE_DEFAULTS: [(&str, &str); 2] =
    [("message", "opsgenie.default.message"), ("description", "opsgenie.default.description")];

/// Plain-text fields, where a Go template is refused. docs/alertd.md, pagerduty: "the other text
/// fields are plain text (a `{{` in one is refused)"; docs/alerting.md: "not yet in `source`,
/// `class`, `component`, `group`, `links`, `tags`, `entity`, `priority`, `responders`, which are
/// refused by name".
const PAGERDUTY_PLAIN: [&str; 5] = ["severity", "source", "class", "component", "group"];
const OPSGENIE_PLAIN: [&str; 5] = ["source", "tags", "entity", "priority", "actions"];

/// docs/alertd.md, "Notification templates": "`date`, `tz`, `since`, `humanizeDuration` and
/// `trimSpace` came after 0.25 and are refused as undefined functions, as 0.25 refuses them".
const AFTER_025: [&str; 5] = ["date", "tz", "since", "humanizeDuration", "trimSpace"];

/// Every finding for the Alertmanager file `src`, then whatever else alertd's loader refuses.
pub fn check(src: &str, file: &str) -> Result<Vec<Finding>, String> {
    let d = Doc::parse(src, file)?;
    let mut out = Vec::new();
    let root = &d.root;
    let global = root.get("global").unwrap_or(&Value::Null);
    for (key, todo) in GLOBAL {
        if global.get(key).is_some() {
            out.push(d.finding(Kind::Refused, &format!("global.{key}"), "not supported by alertd", todo));
        }
    }
    // docs/alertd.md, "Supported subset": "`tracing` | — | refused when present".
    if root.get("tracing").is_some() {
        out.push(d.finding(Kind::Refused, "tracing", "not supported by alertd", "remove it from alertd's copy"));
    }
    let global_http = global.get("http_config");
    if let Some(h) = global_http {
        http_config(&d, "global.http_config", h, &mut out);
    }
    let mut without_proxy = None;
    for (i, r) in items(root, "receivers").iter().enumerate() {
        receiver(&d, &format!("receivers[{i}]"), r, &mut without_proxy, &mut out);
    }
    // docs/alertd.md, "HTTP settings": "`proxy_from_environment` | `HTTP_PROXY` / `HTTPS_PROXY` /
    // `NO_PROXY`. alertd follows them also when no proxy is configured at all, as it always has
    // (Alertmanager ignores them unless this is true)". Said once, at the first HTTP integration that
    // names no proxy.
    let global_proxy = global_http.is_some_and(names_proxy);
    if let Some(at) = without_proxy.filter(|_| !global_proxy) {
        out.push(d.finding(
            Kind::Differs,
            &at,
            "no proxy_url and no proxy_from_environment: true: alertd still sends through HTTP_PROXY / HTTPS_PROXY when they are set in its environment, where Alertmanager connects directly",
            "unset those variables for argus, or set no_proxy, if the receivers must be reached directly",
        ));
    }
    let loaded = argus_alertd::config::parse(&d.without_refused(&out, |_| true), file).map(|_| ());
    d.loader_errors(loaded, "see docs/alertd.md, \"Supported subset\"", &mut out);
    Ok(out)
}

fn names_proxy(h: &Value) -> bool {
    h.get("proxy_url").is_some() || h.get("proxy_from_environment").and_then(Value::as_bool) == Some(true)
}

fn receiver(d: &Doc, at: &str, r: &Value, without_proxy: &mut Option<String>, out: &mut Vec<Finding>) {
    for (key, vendor) in RECEIVERS {
        if r.get(key).is_some() {
            let what = format!("alertd has no {vendor} receiver");
            out.push(d.finding(Kind::Refused, &format!("{at}.{key}"), what, KEEP_ON_ALERTMANAGER));
        }
    }
    let mut http = |kind: &str, j: usize, c: &Value, out: &mut Vec<Finding>| {
        let f = format!("{at}.{kind}[{j}]");
        match c.get("http_config") {
            Some(h) => {
                http_config(d, &format!("{f}.http_config"), h, out);
                if !names_proxy(h) && without_proxy.is_none() {
                    *without_proxy = Some(format!("{f}.http_config"));
                }
            }
            None if without_proxy.is_none() => *without_proxy = Some(f),
            None => {}
        }
    };
    for (j, c) in items(r, "webhook_configs").iter().enumerate() {
        http("webhook_configs", j, c, out);
    }
    for (j, c) in items(r, "slack_configs").iter().enumerate() {
        http("slack_configs", j, c, out);
        slack(d, &format!("{at}.slack_configs[{j}]"), c, out);
    }
    for (j, c) in items(r, "email_configs").iter().enumerate() {
        email(d, &format!("{at}.email_configs[{j}]"), c, out);
    }
    for (j, c) in items(r, "pagerduty_configs").iter().enumerate() {
        http("pagerduty_configs", j, c, out);
        paging(d, &format!("{at}.pagerduty_configs[{j}]"), c, Paging::PAGERDUTY, out);
    }
    for (j, c) in items(r, "opsgenie_configs").iter().enumerate() {
        http("opsgenie_configs", j, c, out);
        paging(d, &format!("{at}.opsgenie_configs[{j}]"), c, Paging::OPSGENIE, out);
    }
}

fn http_config(d: &Doc, at: &str, h: &Value, out: &mut Vec<Finding>) {
    // docs/alertd.md, "HTTP settings": "`oauth2`, `proxy_connect_header` and
    // `tls_config.server_name` are refused by name".
    let refused = [
        (
            "oauth2",
            "use authorization with credentials_file holding a token another job refreshes, or keep this receiver on Alertmanager",
        ),
        ("proxy_connect_header", "remove it, or keep this receiver on Alertmanager"),
    ];
    for (key, todo) in refused {
        if h.get(key).is_some() {
            out.push(d.finding(Kind::Refused, &format!("{at}.{key}"), "not supported by alertd", todo));
        }
    }
    if h.get("tls_config").and_then(|t| t.get("server_name")).is_some() {
        let key = format!("{at}.tls_config.server_name");
        let todo = "reach the receiver by the name its certificate carries, or keep it on Alertmanager";
        out.push(d.finding(Kind::Refused, &key, "not supported by alertd", todo));
    }
    // docs/alertd.md, "HTTP settings": "`enable_http2` is accepted and has no effect: alertd speaks
    // HTTP/1.1 to receivers".
    if h.get("enable_http2").is_some() {
        out.push(d.finding(
            Kind::Differs,
            &format!("{at}.enable_http2"),
            "accepted and has no effect: alertd speaks HTTP/1.1 to receivers",
            "nothing to do unless the receiver accepts only HTTP/2",
        ));
    }
}

fn slack(d: &Doc, at: &str, c: &Value, out: &mut Vec<Finding>) {
    for key in SLACK_REFUSED {
        if c.get(key).is_some() {
            let todo = "remove it (alertd sends one attachment without it), or keep this receiver on Alertmanager, or send Slack's JSON through webhook_configs with an argus.body_template";
            out.push(d.finding(Kind::Refused, &format!("{at}.{key}"), "not supported by alertd", todo));
        }
    }
    unset(d, at, c, &SLACK_DEFAULTS, "alertd sends its own text, and no username or title_link", out);
    for key in [
        "channel",
        "username",
        "icon_emoji",
        "icon_url",
        "title",
        "title_link",
        "pretext",
        "text",
        "fallback",
        "color",
        "footer",
        "image_url",
        "thumb_url",
    ] {
        template_field(d, &format!("{at}.{key}"), c.get(key), out);
    }
}

fn email(d: &Doc, at: &str, c: &Value, out: &mut Vec<Finding>) {
    // docs/alertd.md, email: "`auth_secret`, `auth_identity`, `tls_config` and headers other than
    // `Subject` are refused".
    let refused = [
        ("auth_secret", "use auth_username with auth_password (PLAIN or LOGIN), or keep e-mail on Alertmanager"),
        ("auth_identity", "use auth_username with auth_password, or keep e-mail on Alertmanager"),
        (
            "tls_config",
            "remove it (alertd verifies the server against the system's CAs), or keep e-mail on Alertmanager",
        ),
    ];
    for (key, todo) in refused {
        if c.get(key).is_some() {
            out.push(d.finding(Kind::Refused, &format!("{at}.{key}"), "not supported by alertd", todo));
        }
    }
    let mut subject = false;
    for (name, v) in entries(c, "headers") {
        let key = format!("{at}.headers.{name}");
        // Alertmanager matches header names without regard to case, and so does alertd.
        if name.eq_ignore_ascii_case("subject") {
            subject = true;
            template_field(d, &key, Some(v), out);
        } else {
            let todo = "remove it (alertd sets From, To and Subject itself), or keep e-mail on Alertmanager";
            out.push(d.finding(Kind::Refused, &key, "alertd sends no headers but Subject", todo));
        }
    }
    // docs/alertd.md, email: "subject = the title; each templated part replaces alertd's own", and
    // "`multipart/alternative`: text and HTML parts". Alertmanager 0.25's defaults: html
    // `email.default.html`, Subject `email.default.subject`, no text part.
    let mut missing = Vec::new();
    if c.get("html").is_none() {
        missing.push("html: '{{ template \"email.default.html\" . }}'");
    }
    if !subject {
        missing.push("headers: {Subject: '{{ template \"email.default.subject\" . }}'}");
    }
    if !missing.is_empty() || c.get("text").is_none() {
        let mut what = Vec::new();
        if !missing.is_empty() {
            what.push(format!(
                "{} unset: alertd renders its own title and message where Alertmanager renders its default templates",
                if missing.len() == 2 {
                    "html and Subject"
                } else if subject {
                    "html"
                } else {
                    "Subject"
                }
            ));
        }
        if c.get("text").is_none() {
            what.push("text unset: alertd adds its own plain-text part where Alertmanager sends HTML only".into());
        }
        let todo = if missing.is_empty() {
            "nothing to do unless readers depend on an HTML-only mail".to_string()
        } else {
            format!("to get Alertmanager's, set {}", missing.join(" and "))
        };
        out.push(d.finding(Kind::Differs, at, what.join("; "), todo));
    }
    for key in ["html", "text"] {
        template_field(d, &format!("{at}.{key}"), c.get(key), out);
    }
    if let Some(html) = c.get("html").and_then(Value::as_str) {
        html_contexts(d, &format!("{at}.html"), html, out);
    }
}

/// docs/alertd.md, "Differences from Alertmanager 0.25": "Email `html` escapes what its actions print
/// as Go's html/template escapes HTML text …, but does not tell html/template's other contexts apart: a
/// URL in an attribute is not also percent-encoded, and script and style contexts get the same
/// escaping." Alertmanager's `email.default.html` prints its URLs into `href` attributes.
fn html_contexts(d: &Doc, key: &str, html: &str, out: &mut Vec<Finding>) {
    // An action inside an open tag, after `=` and an open quote.
    let in_attribute = html.match_indices("{{").any(|(i, _)| {
        let Some((_, tag)) = html[..i].rsplit_once('<') else { return false };
        !tag.contains('>') && tag.rfind('=').is_some_and(|e| tag[e..].matches(['"', '\'']).count() % 2 == 1)
    });
    let lower = html.to_ascii_lowercase();
    let script = lower.contains("<script") || lower.contains("<style");
    let default = html.contains("\"email.default.html\"");
    if in_attribute || script || default {
        let why = if default {
            "email.default.html prints URLs into href attributes"
        } else if script {
            "the template prints into a script or style element"
        } else {
            "the template prints into an attribute"
        };
        out.push(d.finding(
            Kind::Differs,
            key,
            format!("{why}: alertd escapes every action as HTML text, without html/template's URL, script and style escaping"),
            "check the rendered mail where label values may hold characters a URL must percent-encode",
        ));
    }
}

struct Paging {
    defaults: &'static [(&'static str, &'static str)],
    plain: &'static [&'static str],
    /// The key alertd refuses by name, and its advice.
    refused: (&'static str, &'static str),
    templated: &'static [&'static str],
}

impl Paging {
    // docs/alertd.md, pagerduty: "`images` is refused"; opsgenie: "`visible_to` is refused".
    const PAGERDUTY: &Paging = &Paging {
        defaults: &PAGERDUTY_DEFAULTS,
        plain: &PAGERDUTY_PLAIN,
        refused: ("images", "remove it, or keep this receiver on Alertmanager"),
        templated: &["description", "client", "client_url"],
    };
    const OPSGENIE: &Paging = &Paging {
        defaults: &OPSGENIE_DEFAULTS,
        plain: &OPSGENIE_PLAIN,
        refused: ("visible_to", "remove it, or keep this receiver on Alertmanager"),
        templated: &["message", "description", "note"],
    };
}

fn paging(d: &Doc, at: &str, c: &Value, p: &Paging, out: &mut Vec<Finding>) {
    if c.get(p.refused.0).is_some() {
        out.push(d.finding(Kind::Refused, &format!("{at}.{}", p.refused.0), "not supported by alertd", p.refused.1));
    }
    let plain = |key: &str, v: Option<String>, out: &mut Vec<Finding>| {
        if v.is_some_and(|s| s.contains("{{")) {
            out.push(d.finding(
                Kind::Refused,
                key,
                "a Go template where alertd takes plain text",
                "write plain text, or leave it out for alertd's own",
            ));
        }
    };
    for key in p.plain {
        plain(&format!("{at}.{key}"), text(c, key), out);
    }
    for (i, l) in items(c, "links").iter().enumerate() {
        for key in ["href", "text"] {
            plain(&format!("{at}.links[{i}].{key}"), text(l, key), out);
        }
    }
    for (i, r) in items(c, "responders").iter().enumerate() {
        for key in ["id", "name", "username"] {
            plain(&format!("{at}.responders[{i}].{key}"), text(r, key), out);
        }
    }
    unset(d, at, c, p.defaults, "alertd sends its own title and text", out);
    for key in p.templated {
        template_field(d, &format!("{at}.{key}"), c.get(key), out);
    }
    for (name, v) in entries(c, "details") {
        template_field(d, &format!("{at}.details.{name}"), Some(v), out);
    }
}

/// One finding for the fields of an integration left to Alertmanager's default templates.
fn unset(d: &Doc, at: &str, c: &Value, defaults: &[(&str, &str)], ours: &str, out: &mut Vec<Finding>) {
    let missing: Vec<_> = defaults.iter().filter(|(k, _)| c.get(k).is_none()).collect();
    if missing.is_empty() {
        return;
    }
    let names: Vec<&str> = missing.iter().map(|(k, _)| *k).collect();
    let what = format!("{} unset: {ours} where Alertmanager renders its default templates", names.join(", "));
    let set: Vec<String> = missing.iter().map(|(k, t)| format!("{k}: '{{{{ template \"{t}\" . }}}}'")).collect();
    out.push(d.finding(Kind::Differs, at, what, format!("to get Alertmanager's, set {}", set.join(", "))));
}

/// A field that takes a notification template: functions Alertmanager 0.25 lacks, and `.Local`.
fn template_field(d: &Doc, key: &str, v: Option<&Value>, out: &mut Vec<Finding>) {
    let Some(text) = v.and_then(Value::as_str) else { return };
    let mut seen = Vec::new();
    for name in templates::names(text) {
        match &name {
            Name::Func(f) if AFTER_025.contains(&f.as_str()) && !seen.contains(&name) => out.push(d.finding_at(
                d.text_at(key, f),
                Kind::Refused,
                key,
                format!("function {f:?} came after Alertmanager 0.25; alertd refuses it, as 0.25 does"),
                "use 0.25's functions (toUpper, toLower, title, join, match, safeHtml, reReplaceAll, stringSlice) and the times' .Format",
            )),
            // docs/alertd.md, "Differences from Alertmanager 0.25": "Times are UTC (`.Local` is
            // `.UTC`), at millisecond precision."
            Name::Field(f) if f == "Local" && !seen.contains(&name) => out.push(d.finding_at(
                d.text_at(key, ".Local"),
                Kind::Differs,
                key,
                "alertd's times are UTC: .Local is .UTC, not the server's zone",
                "write the zone you mean into the text, or accept UTC",
            )),
            _ => {}
        }
        seen.push(name);
    }
}
