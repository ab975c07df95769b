//! Validation of the paging services' receivers: PagerDuty (`pagerduty_configs`) and Opsgenie
//! (`opsgenie_configs`), with their global defaults. The fields Alertmanager's defaults fill from
//! templates (PagerDuty's `description`, `client`, `client_url`, `details`; Opsgenie's `message`,
//! `description`, `details`, `note`) take notification templates; in the others a Go template
//! (`{{ … }}`) is refused by name.

use super::ConfigError;
use super::http::{secret, settings};
use super::im::language;
use super::raw;
use super::validate::{Ctx, unsupported};
use crate::receiver::{
    OPSGENIE_API_URL, OpsGenieConfig, OpsGenieResponder, PAGERDUTY_V1_URL, PAGERDUTY_V2_URL, PagerDutyConfig,
    PagerDutyKey, Receiver,
};
use std::collections::BTreeMap;

pub(super) fn receivers(
    c: &Ctx,
    g: &raw::Global,
    r: &raw::Receiver,
    field: &str,
    out: &mut Receiver,
) -> Result<(), ConfigError> {
    for (j, p) in r.pagerduty_configs.iter().enumerate() {
        let name = format!("receivers {:?} pagerduty_configs[{j}].http_config", r.name);
        out.pagerduty.push(pagerduty(c, g, p, &format!("{field}pagerduty_configs[{j}]."), &name)?);
    }
    for (j, o) in r.opsgenie_configs.iter().enumerate() {
        let name = format!("receivers {:?} opsgenie_configs[{j}].http_config", r.name);
        out.opsgenie.push(opsgenie(c, g, o, &format!("{field}opsgenie_configs[{j}]."), &name)?);
    }
    Ok(())
}

/// Plain text: `None` when unset, refused when it holds a Go template.
fn text(c: &Ctx, f: &str, key: &str, v: &Option<String>) -> Result<Option<String>, ConfigError> {
    match v {
        Some(s) if s.contains("{{") => Err(c.err(
            format!("{f}{key}"),
            &format!("{key}:"),
            "Go templates are not supported by alertd in this field yet: write plain text, or leave it out for alertd's own",
        )),
        other => Ok(other.clone()),
    }
}

fn http_url(c: &Ctx, field: &str, anchor: &str, url: &str) -> Result<(), ConfigError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(c.err(field, anchor, "not an http(s) URL"))
    }
}

fn pagerduty(
    c: &Ctx,
    g: &raw::Global,
    p: &raw::PagerDuty,
    f: &str,
    name: &str,
) -> Result<PagerDutyConfig, ConfigError> {
    unsupported(c, f, &[("images", p.images.is_some())])?;
    let routing = secret(c, f, "routing_key", &p.routing_key, &p.routing_key_file)?;
    let service = secret(c, f, "service_key", &p.service_key, &p.service_key_file)?;
    let key = match (routing, service) {
        (Some(k), None) => PagerDutyKey::Routing(k),
        (None, Some(k)) => PagerDutyKey::Service(k),
        (None, None) => {
            return Err(c.err(format!("{f}routing_key"), "pagerduty_configs:", "missing: routing_key or service_key"));
        }
        (Some(_), Some(_)) => {
            return Err(c.err(
                format!("{f}service_key"),
                "service_key",
                "routing_key and service_key exclude each other",
            ));
        }
    };
    let default_url = match key {
        PagerDutyKey::Routing(_) => g.pagerduty_url.clone().unwrap_or_else(|| PAGERDUTY_V2_URL.into()),
        PagerDutyKey::Service(_) => PAGERDUTY_V1_URL.into(),
    };
    let url = p.url.clone().unwrap_or(default_url);
    http_url(c, &format!("{f}url"), "url:", &url)?;
    let severity = text(c, f, "severity", &p.severity)?.unwrap_or_else(|| "error".into());
    if !matches!(severity.as_str(), "critical" | "error" | "warning" | "info") {
        return Err(c.err(
            format!("{f}severity"),
            "severity:",
            format!("{severity:?} is not critical, error, warning or info"),
        ));
    }
    let details = match &p.details {
        None => None,
        Some(d) => {
            let mut out = BTreeMap::new();
            for (k, v) in d {
                out.extend(c.template(&format!("{f}details."), k, Some(v))?.map(|t| (k.clone(), t)));
            }
            Some(out)
        }
    };
    let mut links = Vec::new();
    for (i, l) in p.links.iter().enumerate() {
        let lf = format!("{f}links[{i}].");
        text(c, &lf, "href", &Some(l.href.clone()))?;
        text(c, &lf, "text", &Some(l.text.clone()))?;
        links.push((l.href.clone(), l.text.clone()));
    }
    let lang = p.argus.as_ref().and_then(|a| a.language.clone());
    Ok(PagerDutyConfig {
        key,
        url,
        http: settings(c, &format!("{f}http_config"), name, p.http_config.as_ref())?,
        client: c
            .template(f, "client", Some(p.client.as_deref().unwrap_or("Argus alertd")))?
            .ok_or_else(|| c.err(format!("{f}client"), "client:", "missing"))?,
        client_url: c.template(f, "client_url", p.client_url.as_deref())?,
        description: c.template(f, "description", p.description.as_deref())?,
        severity,
        source: text(c, f, "source", &p.source)?,
        class: text(c, f, "class", &p.class)?,
        component: text(c, f, "component", &p.component)?,
        group: text(c, f, "group", &p.group)?,
        details,
        links,
        send_resolved: p.send_resolved.unwrap_or(true),
        language: language(c, &format!("{f}argus.language"), &lang)?,
        timeout: c.timeout(f, &p.timeout)?,
    })
}

fn opsgenie(c: &Ctx, g: &raw::Global, o: &raw::OpsGenie, f: &str, name: &str) -> Result<OpsGenieConfig, ConfigError> {
    unsupported(c, f, &[("visible_to", o.visible_to.is_some())])?;
    let api_key = match secret(c, f, "api_key", &o.api_key, &o.api_key_file)? {
        Some(k) => k,
        None => secret(c, "global.", "opsgenie_api_key", &g.opsgenie_api_key, &g.opsgenie_api_key_file)?.ok_or_else(
            || c.err(format!("{f}api_key"), "opsgenie_configs:", "missing (and no global opsgenie_api_key)"),
        )?,
    };
    let mut api_url =
        o.api_url.clone().or_else(|| g.opsgenie_api_url.clone()).unwrap_or_else(|| OPSGENIE_API_URL.into());
    http_url(c, &format!("{f}api_url"), "api_url:", &api_url)?;
    if !api_url.ends_with('/') {
        api_url.push('/');
    }
    let priority = text(c, f, "priority", &o.priority)?;
    if let Some(p) = &priority
        && !matches!(p.as_str(), "P1" | "P2" | "P3" | "P4" | "P5")
    {
        return Err(c.err(format!("{f}priority"), "priority:", format!("{p:?} is not P1 to P5")));
    }
    let mut responders = Vec::new();
    for (i, r) in o.responders.iter().enumerate() {
        let rf = format!("{f}responders[{i}].");
        if !matches!(r.kind.as_str(), "team" | "teams" | "user" | "escalation" | "schedule") {
            return Err(c.err(
                format!("{rf}type"),
                "type:",
                format!("{:?} is not team, teams, user, escalation or schedule", r.kind),
            ));
        }
        for (key, v) in [("id", &r.id), ("name", &r.name), ("username", &r.username)] {
            text(c, &rf, key, &Some(v.clone()))?;
        }
        if r.id.is_empty() && r.name.is_empty() && r.username.is_empty() {
            return Err(c.err(format!("{rf}id"), "responders:", "names no one: give id, name or username"));
        }
        if r.kind == "teams" {
            // Alertmanager's shorthand: several teams by name, comma-separated.
            for team in r.name.split(',').map(str::trim).filter(|t| !t.is_empty()) {
                responders.push(OpsGenieResponder { kind: "team".into(), name: team.into(), ..Default::default() });
            }
        } else {
            responders.push(OpsGenieResponder {
                kind: r.kind.clone(),
                id: r.id.clone(),
                name: r.name.clone(),
                username: r.username.clone(),
            });
        }
    }
    let list = |key: &str, v: &Option<String>| -> Result<Vec<String>, ConfigError> {
        Ok(text(c, f, key, v)?
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect())
    };
    let mut details = BTreeMap::new();
    for (k, v) in &o.details {
        details.extend(c.template(&format!("{f}details."), k, Some(v))?.map(|t| (k.clone(), t)));
    }
    let lang = o.argus.as_ref().and_then(|a| a.language.clone());
    Ok(OpsGenieConfig {
        api_key,
        api_url,
        http: settings(c, &format!("{f}http_config"), name, o.http_config.as_ref())?,
        message: c.template(f, "message", o.message.as_deref())?,
        description: c.template(f, "description", o.description.as_deref())?,
        source: text(c, f, "source", &o.source)?,
        details,
        responders,
        tags: list("tags", &o.tags)?,
        note: c.template(f, "note", o.note.as_deref())?,
        priority,
        entity: text(c, f, "entity", &o.entity)?,
        actions: list("actions", &o.actions)?,
        update_alerts: o.update_alerts.unwrap_or(false),
        send_resolved: o.send_resolved.unwrap_or(true),
        language: language(c, &format!("{f}argus.language"), &lang)?,
        timeout: c.timeout(f, &o.timeout)?,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use expect_test::{Expect, expect};

    /// A receiver `p` with `entries` (YAML lines under it); shows its PagerDuty and Opsgenie entries or the error.
    fn check(entries: &str, expect: Expect) {
        let src = format!("route: {{receiver: p}}\nreceivers:\n  - name: p\n{entries}");
        let got = match parse(&src, "/etc/argus/alertd.yml") {
            Ok(c) => {
                let r = &c.receivers["p"];
                format!("{:?}\n{:?}", r.pagerduty, r.opsgenie)
            }
            Err(e) => e.to_string(),
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn pagerduty_and_opsgenie_entries() {
        check(
            "    pagerduty_configs: [{routing_key_file: pd.key}]\n    opsgenie_configs: [{api_key: k, api_url: 'https://api.eu.opsgenie.com', responders: [{type: team, id: t1}]}]\n",
            expect![[r#"
                [PagerDutyConfig { key: Routing(File("/etc/argus/pd.key")), url: "https://events.pagerduty.com/v2/enqueue", http: None, client: "Argus alertd", client_url: None, description: None, severity: "error", source: None, class: None, component: None, group: None, details: None, links: [], send_resolved: true, language: En, timeout: 10s }]
                [OpsGenieConfig { api_key: Inline(Secret(***)), api_url: "https://api.eu.opsgenie.com/", http: None, message: None, description: None, source: None, details: {}, responders: [OpsGenieResponder { kind: "team", id: "t1", name: "", username: "" }], tags: [], note: None, priority: None, entity: None, actions: [], update_alerts: false, send_resolved: true, language: En, timeout: 10s }]"#]],
        );
        check(
            "    pagerduty_configs: [{routing_key: a, source: '{{ .CommonAnnotations.summary }}'}]\n",
            expect![
                "/etc/argus/alertd.yml:4: receivers[0].pagerduty_configs[0].source: Go templates are not supported by alertd in this field yet: write plain text, or leave it out for alertd's own"
            ],
        );
        check(
            "    pagerduty_configs: [{routing_key: a, description: '{{ .CommonAnnotations.summary }}', details: {n: '{{ len .Alerts }}'}}]\n    opsgenie_configs: [{api_key: k, message: '{{ template \"opsgenie.default.message\" . }}', note: x}]\n",
            expect![[r#"
                [PagerDutyConfig { key: Routing(Inline(Secret(***))), url: "https://events.pagerduty.com/v2/enqueue", http: None, client: "Argus alertd", client_url: None, description: Some("{{ .CommonAnnotations.summary }}"), severity: "error", source: None, class: None, component: None, group: None, details: Some({"n": "{{ len .Alerts }}"}), links: [], send_resolved: true, language: En, timeout: 10s }]
                [OpsGenieConfig { api_key: Inline(Secret(***)), api_url: "https://api.opsgenie.com/", http: None, message: Some("{{ template \"opsgenie.default.message\" . }}"), description: None, source: None, details: {}, responders: [], tags: [], note: Some("x"), priority: None, entity: None, actions: [], update_alerts: false, send_resolved: true, language: En, timeout: 10s }]"#]],
        );
        check(
            "    opsgenie_configs:\n      - api_key: k\n        description: '{{ template \"nope\" . }}'\n",
            expect![[
                r#"/etc/argus/alertd.yml:6: receivers[0].opsgenie_configs[0].description: template: :1:1: no such template "nope""#
            ]],
        );
        check(
            "    pagerduty_configs: [{url: 'https://x/'}]\n",
            expect![
                "/etc/argus/alertd.yml:4: receivers[0].pagerduty_configs[0].routing_key: missing: routing_key or service_key"
            ],
        );
        check(
            "    pagerduty_configs: [{routing_key: a, service_key: b}]\n",
            expect![
                "/etc/argus/alertd.yml:4: receivers[0].pagerduty_configs[0].service_key: routing_key and service_key exclude each other"
            ],
        );
        check(
            "    pagerduty_configs: [{routing_key: a, severity: page}]\n",
            expect![[
                r#"/etc/argus/alertd.yml:4: receivers[0].pagerduty_configs[0].severity: "page" is not critical, error, warning or info"#
            ]],
        );
        check(
            "    opsgenie_configs: [{api_url: 'https://x/'}]\n",
            expect![
                "/etc/argus/alertd.yml:4: receivers[0].opsgenie_configs[0].api_key: missing (and no global opsgenie_api_key)"
            ],
        );
        check(
            "    opsgenie_configs: [{api_key: k, priority: high}]\n",
            expect![[r#"/etc/argus/alertd.yml:4: receivers[0].opsgenie_configs[0].priority: "high" is not P1 to P5"#]],
        );
        check(
            "    opsgenie_configs: [{api_key: k, responders: [{type: squad, name: x}]}]\n",
            expect![[
                r#"/etc/argus/alertd.yml:4: receivers[0].opsgenie_configs[0].responders[0].type: "squad" is not team, teams, user, escalation or schedule"#
            ]],
        );
        check(
            "    opsgenie_configs: [{api_key: k, responders: [{type: user}]}]\n",
            expect![
                "/etc/argus/alertd.yml:4: receivers[0].opsgenie_configs[0].responders[0].id: names no one: give id, name or username"
            ],
        );
    }
}
