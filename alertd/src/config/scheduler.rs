//! Validation of `scheduler_configs` (alertd's own receiver): what it takes, how it signs and
//! authenticates, and its remediation targets. Files (secrets, CAs) are named here and read when the
//! receivers are built.

use super::ConfigError;
use super::http::{secret, settings};
use super::im::url;
use super::raw;
use super::validate::Ctx;
use crate::receiver::{
    DEFAULT_SCONTROL, DEFAULT_TAINT_KEY, DEFAULT_TIMEOUT, IN_CLUSTER_CA, IN_CLUSTER_TOKEN, IN_CLUSTER_URL,
    KubernetesConfig, NodeAction, Receiver, RemediationConfig, SIGNATURE_HEADER, SchedulerConfig, SlurmConfig,
};

pub(super) fn receivers(c: &Ctx, r: &raw::Receiver, field: &str, out: &mut Receiver) -> Result<(), ConfigError> {
    for (j, s) in r.scheduler_configs.iter().enumerate() {
        let name = format!("receivers {:?} scheduler_configs[{j}]", r.name);
        out.scheduler.push(scheduler(c, s, &format!("{field}scheduler_configs[{j}]."), &name)?);
    }
    Ok(())
}

fn scheduler(c: &Ctx, s: &raw::Scheduler, f: &str, name: &str) -> Result<SchedulerConfig, ConfigError> {
    let url = url(c, &format!("{f}url"), "scheduler_configs:", &s.url)?;
    let timeout = c.timeout(f, &s.timeout)?;
    let hmac_secret = secret(c, f, "hmac_secret", &s.hmac_secret, &s.hmac_secret_file)?;
    let signature_header = s.signature_header.clone().unwrap_or_else(|| SIGNATURE_HEADER.to_string());
    if reqwest::header::HeaderName::from_bytes(signature_header.as_bytes()).is_err() {
        return Err(c.err(format!("{f}signature_header"), "signature_header:", "not an http header name"));
    }
    let (mut critical, mut capacity) = (true, true);
    if let Some(events) = &s.events {
        (critical, capacity) = (false, false);
        for e in events {
            match e.as_str() {
                "critical" => critical = true,
                "capacity" => capacity = true,
                other => {
                    return Err(c.err(
                        format!("{f}events"),
                        "events:",
                        format!("{other:?} is not critical or capacity"),
                    ));
                }
            }
        }
        if !critical && !capacity {
            return Err(c.err(format!("{f}events"), "events:", "takes nothing: name critical, capacity or both"));
        }
    }
    let http = settings(c, &format!("{f}http_config"), &format!("{name}.http_config"), s.http_config.as_ref())?;
    let remediation = match &s.remediation {
        Some(r) if r.enabled => Some(remediation(c, r, &format!("{f}remediation."))?),
        _ => None,
    };
    Ok(SchedulerConfig {
        url,
        hmac_secret,
        signature_header,
        http,
        critical,
        capacity,
        send_resolved: s.send_resolved.unwrap_or(true),
        timeout,
        remediation,
    })
}

/// An enabled `remediation` section: at least one target, each written out (no target is implied).
fn remediation(c: &Ctx, r: &raw::Remediation, f: &str) -> Result<RemediationConfig, ConfigError> {
    if r.kubernetes.is_none() && r.slurm.is_none() {
        return Err(c.err(format!("{f}enabled"), "enabled:", "remediation names no target: add kubernetes or slurm"));
    }
    let kubernetes = match &r.kubernetes {
        None => None,
        Some(k) => {
            let kf = format!("{f}kubernetes.");
            let api_url = k.api_url.clone().unwrap_or_else(|| IN_CLUSTER_URL.into());
            if !(api_url.starts_with("http://") || api_url.starts_with("https://")) {
                return Err(c.err(format!("{kf}api_url"), "api_url:", "not an http(s) URL"));
            }
            let action = match k.action.as_deref() {
                None | Some("taint") => {
                    let key = k.taint_key.clone().unwrap_or_else(|| DEFAULT_TAINT_KEY.into());
                    let valid = |s: &str| {
                        !s.is_empty()
                            && s.len() <= 253
                            && s.chars().all(|c| c.is_ascii_alphanumeric() || "./-_".contains(c))
                    };
                    if !valid(&key) {
                        return Err(c.err(
                            format!("{kf}taint_key"),
                            "taint_key:",
                            format!("{key:?} is not a taint key"),
                        ));
                    }
                    let effect = k.taint_effect.clone().unwrap_or_else(|| "NoSchedule".into());
                    if !matches!(effect.as_str(), "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                        return Err(c.err(
                            format!("{kf}taint_effect"),
                            "taint_effect:",
                            format!("{effect:?} is not NoSchedule, PreferNoSchedule or NoExecute"),
                        ));
                    }
                    NodeAction::Taint { key, effect }
                }
                Some("condition") => {
                    if k.taint_key.is_some() || k.taint_effect.is_some() {
                        return Err(c.err(
                            format!("{kf}action"),
                            "action:",
                            "taint_key and taint_effect go with action: taint",
                        ));
                    }
                    NodeAction::Condition
                }
                Some(other) => {
                    return Err(c.err(
                        format!("{kf}action"),
                        "action:",
                        format!("{other:?} is not taint or condition"),
                    ));
                }
            };
            let timeout = c.duration(&format!("{kf}timeout"), "timeout", &k.timeout, DEFAULT_TIMEOUT)?;
            let in_cluster = k.api_url.is_none();
            Some(KubernetesConfig {
                api_url,
                bearer_token_file: c.path(k.bearer_token_file.as_deref().unwrap_or(IN_CLUSTER_TOKEN)),
                ca_file: match (&k.ca_file, in_cluster) {
                    (Some(p), _) => Some(c.path(p)),
                    (None, true) => Some(IN_CLUSTER_CA.into()),
                    (None, false) => None,
                },
                action,
                timeout,
            })
        }
    };
    let slurm = match &r.slurm {
        None => None,
        Some(s) => {
            let timeout = c.duration(&format!("{f}slurm.timeout"), "timeout", &s.timeout, DEFAULT_TIMEOUT)?;
            let scontrol = s.scontrol.clone().unwrap_or_else(|| DEFAULT_SCONTROL.into());
            if scontrol.is_empty() {
                return Err(c.err(format!("{f}slurm.scontrol"), "scontrol:", "empty"));
            }
            // A bare name is looked up in PATH; a path is read from the configuration's directory.
            let scontrol = if scontrol.contains('/') { c.path(&scontrol) } else { scontrol.into() };
            Some(SlurmConfig { scontrol, timeout })
        }
    };
    if r.node_label.as_deref() == Some("") {
        return Err(c.err(format!("{f}node_label"), "node_label:", "empty"));
    }
    Ok(RemediationConfig { dry_run: r.dry_run, node_label: r.node_label.clone(), kubernetes, slurm })
}

#[cfg(test)]
mod tests {
    use crate::config::parse;
    use expect_test::{Expect, expect};

    /// Parses a receiver `sched` with one `scheduler_configs` entry written as `entry` (YAML flow or
    /// block lines indented under the list item); shows the validated entry or the error.
    fn check(entry: &str, expect: Expect) {
        let src = format!(
            "route: {{receiver: sched}}\nreceivers:\n  - name: sched\n    scheduler_configs:\n      - {entry}\n"
        );
        let got = match parse(&src, "/etc/argus/alertd.yml") {
            Ok(c) => format!("{:?}", c.receivers["sched"].scheduler[0]),
            Err(e) => e.to_string(),
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn scheduler_configs() {
        check(
            "{url: 'http://sched:8080/argus', hmac_secret_file: secrets/hmac, events: [capacity], timeout: 3s, http_config: {authorization: {credentials: t0k}, tls_config: {ca_file: ca.pem}}}",
            expect![[
                r#"SchedulerConfig { url: Secret(***), hmac_secret: Some(File("/etc/argus/secrets/hmac")), signature_header: "X-Argus-Signature", http: Some(HttpSettings { authorization: Some(Scheme { scheme: "Bearer", credentials: Inline(Secret(***)) }), tls: TlsSettings { ca: Some(File("/etc/argus/ca.pem")), client: None, insecure_skip_verify: false, min_version: None, max_version: None }, proxy: Environment, follow_redirects: true, field: "receivers \"sched\" scheduler_configs[0].http_config" }), critical: false, capacity: true, send_resolved: true, timeout: 3s, remediation: None }"#
            ]],
        );
        check(
            "{url: 'https://s/', hmac_secret: k, signature_header: X-Sig, send_resolved: false}",
            expect![[
                r#"SchedulerConfig { url: Secret(***), hmac_secret: Some(Inline(Secret(***))), signature_header: "X-Sig", http: None, critical: true, capacity: true, send_resolved: false, timeout: 10s, remediation: None }"#
            ]],
        );
        check(
            "{url: 'http://s/', colour: red}",
            expect![[
                r#"/etc/argus/alertd.yml:5: receivers[0].scheduler_configs[0]: unknown field `colour`, expected one of `url`, `hmac_secret`, `hmac_secret_file`, `signature_header`, `http_config`, `events`, `send_resolved`, `timeout`, `remediation`"#
            ]],
        );
        check(
            "{url: 'ftp://s/'}",
            expect![[r#"/etc/argus/alertd.yml:5: receivers[0].scheduler_configs[0].url: not an http(s) URL"#]],
        );
        check(
            "{url: 'http://s/', events: [critical, all]}",
            expect![[
                r#"/etc/argus/alertd.yml:5: receivers[0].scheduler_configs[0].events: "all" is not critical or capacity"#
            ]],
        );
        check(
            "{url: 'http://s/', events: []}",
            expect![[
                r#"/etc/argus/alertd.yml:5: receivers[0].scheduler_configs[0].events: takes nothing: name critical, capacity or both"#
            ]],
        );
        check(
            "{url: 'http://s/', hmac_secret: a, hmac_secret_file: b}",
            expect![[
                r#"/etc/argus/alertd.yml:5: receivers[0].scheduler_configs[0].hmac_secret: hmac_secret and hmac_secret_file exclude each other"#
            ]],
        );
        check(
            "{url: 'http://s/', http_config: {authorization: {type: Bearer}}}",
            expect![[
                r#"/etc/argus/alertd.yml:5: receivers[0].scheduler_configs[0].http_config.authorization.credentials: missing"#
            ]],
        );
        check(
            "{url: 'http://s/', http_config: {proxy_url: 'http://p/'}}",
            expect![[
                r#"SchedulerConfig { url: Secret(***), hmac_secret: None, signature_header: "X-Argus-Signature", http: Some(HttpSettings { authorization: None, tls: TlsSettings { ca: None, client: None, insecure_skip_verify: false, min_version: None, max_version: None }, proxy: Url { url: Secret(***), no_proxy: None }, follow_redirects: true, field: "receivers \"sched\" scheduler_configs[0].http_config" }), critical: true, capacity: true, send_resolved: true, timeout: 10s, remediation: None }"#
            ]],
        );
    }
}
