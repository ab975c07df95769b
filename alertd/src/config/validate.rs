//! raw → validated. Pure: no IO. Errors carry the file, the field path and the line where that field
//! is written (config/locate.rs).

use super::raw;
use super::{Config, ConfigError, duration, http, im, locate, matchers, paging, scheduler};
use crate::escalate::EscalationRule;
use crate::flap::FlapConfig;
use crate::incident::{CauseRule, CorrelationConfig};
use crate::inhibit::InhibitRule;
use crate::receiver::notification::Text;
use crate::receiver::template::BodyTemplate;
use crate::receiver::{Receiver, SIGNATURE_HEADER, WebhookConfig};
use crate::route::{GroupBy, Route, RouteOpts};
use crate::rules::template::notify::Library;
use crate::timeinterval::TimeInterval;
use argus_model::Secret;
use argus_model::{MatchOp, Matcher};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

pub(super) struct Ctx<'a> {
    src: &'a str,
    file: &'a str,
    /// The notification templates receivers' fields are parsed against.
    lib: &'a Library,
}

impl Ctx<'_> {
    /// A receiver field that takes a notification template (`f` the entry's field prefix): parsed
    /// against the configuration's templates, so bad syntax or a `{{ template }}` of an undefined
    /// name is refused at the field's line.
    pub(super) fn template(&self, f: &str, key: &str, v: Option<&str>) -> Result<Option<Text>, ConfigError> {
        let Some(s) = v else { return Ok(None) };
        Text::parse(self.lib, s).map(Some).map_err(|e| self.err(format!("{f}{key}"), &format!("{key}:"), e.to_string()))
    }

    /// An error at `field`, on the line where that field is written (see [`locate`]); `needle` (a key or
    /// a value) is searched for within its section when the field itself is not written.
    pub(super) fn err(&self, field: impl Into<String>, needle: &str, reason: impl Into<String>) -> ConfigError {
        let field = field.into();
        ConfigError::new(self.file, locate::line(self.src, &field, needle), field, reason)
    }

    /// A path as written, relative paths read from the configuration file's directory.
    pub(super) fn path(&self, p: &str) -> PathBuf {
        let f = PathBuf::from(p);
        match std::path::Path::new(self.file).parent() {
            Some(dir) if f.is_relative() => dir.join(f),
            _ => f,
        }
    }

    pub(super) fn duration(
        &self,
        field: &str,
        key: &str,
        v: &Option<String>,
        default: Duration,
    ) -> Result<Duration, ConfigError> {
        match v {
            None => Ok(default),
            Some(s) => duration::parse(s).map_err(|e| self.err(field, &format!("{key}: {s}"), e)),
        }
    }

    /// An integration's `timeout` (`f` the entry's field prefix): a duration greater than 0, default
    /// [`DEFAULT_TIMEOUT`](crate::receiver::DEFAULT_TIMEOUT).
    pub(super) fn timeout(&self, f: &str, v: &Option<String>) -> Result<Duration, ConfigError> {
        let t = self.duration(&format!("{f}timeout"), "timeout", v, crate::receiver::DEFAULT_TIMEOUT)?;
        if t.is_zero() {
            return Err(self.err(format!("{f}timeout"), "timeout:", "must be greater than 0"));
        }
        Ok(t)
    }

    fn matchers(&self, field: &str, list: &[String]) -> Result<Vec<Matcher>, ConfigError> {
        let mut out = Vec::new();
        for (i, s) in list.iter().enumerate() {
            out.extend(matchers::parse(s).map_err(|e| self.err(format!("{field}[{i}]"), s, e))?);
        }
        Ok(out)
    }

    fn legacy(
        &self,
        field: &str,
        eq: &BTreeMap<String, String>,
        re: &BTreeMap<String, String>,
    ) -> Result<Vec<Matcher>, ConfigError> {
        let mut out: Vec<Matcher> = eq.iter().map(|(n, v)| Matcher::eq(n.clone(), v.clone())).collect();
        for (n, v) in re {
            out.push(
                Matcher::new(n.clone(), MatchOp::RegexMatch, v.clone())
                    .map_err(|e| self.err(field, v, e.to_string()))?,
            );
        }
        Ok(out)
    }
}

/// Keys Alertmanager has that alertd does not support yet, refused by name.
pub(super) fn unsupported(c: &Ctx, field: &str, present: &[(&str, bool)]) -> Result<(), ConfigError> {
    match present.iter().find(|(_, p)| *p) {
        Some((key, _)) => Err(c.err(format!("{field}{key}"), &format!("{key}:"), "not supported by alertd yet")),
        None => Ok(()),
    }
}

/// The errors found so far. Every section is validated whatever the others hold, so one run names
/// every error (sorted by line), not only the first.
#[derive(Default)]
struct Found(Vec<ConfigError>);

impl Found {
    fn ok<T>(&mut self, r: Result<T, ConfigError>) -> Option<T> {
        r.map_err(|e| self.0.push(e)).ok()
    }
}

pub(super) fn validate(raw: raw::File, src: &str, file: &str, lib: &Library) -> Result<Config, ConfigError> {
    let c = Ctx { src, file, lib };
    let mut found = Found::default();
    let global = found.ok(global(&c, &raw));
    // Names are known even of a receiver or interval refused, so a route naming it is not refused too.
    let receiver_names: BTreeSet<String> = raw.receivers.iter().map(|r| r.name.clone()).collect();
    let receivers = receivers(&c, &raw, &mut found);
    let interval_names: BTreeSet<String> =
        raw.time_intervals.iter().chain(&raw.mute_time_intervals).map(|s| s.name.clone()).collect();
    let time_intervals = time_intervals(&c, &raw, &mut found);
    let route = found.ok(routes(&c, raw.route.as_ref(), &receiver_names, &interval_names));
    let inhibit_rules = inhibit_rules(&c, &raw.inhibit_rules, &mut found);
    let argus = raw.argus.unwrap_or_default();
    let ext = extensions(&c, &argus, &receiver_names, &mut found);
    match (global, route, ext) {
        (Some((http, resolve_timeout)), Some(route), Some(ext)) if found.0.is_empty() => Ok(Config {
            http,
            resolve_timeout,
            route,
            inhibit_rules,
            receivers,
            time_intervals,
            external_url: argus.external_url.unwrap_or_default(),
            flap: ext.flap,
            correlation: ext.correlation,
            escalation: ext.escalation,
            rules: ext.rules,
            silence_until_resolved_max: ext.silence_until_resolved_max,
            history_retention: ext.history_retention,
        }),
        _ => {
            let mut all = found.0;
            all.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
            let mut first = all.remove(0);
            first.also = all;
            Err(first)
        }
    }
}

/// `global:` and the top-level keys alertd refuses: its HTTP settings and `resolve_timeout`.
fn global(c: &Ctx, raw: &raw::File) -> Result<(crate::receiver::HttpSettings, Duration), ConfigError> {
    let g = &raw.global;
    unsupported(
        c,
        "global.",
        &[
            ("smtp_auth_secret", g.smtp_auth_secret.is_some()),
            ("smtp_auth_identity", g.smtp_auth_identity.is_some()),
            ("wechat_api_url", g.wechat_api_url.is_some()),
            ("wechat_api_secret", g.wechat_api_secret.is_some()),
            ("wechat_api_corp_id", g.wechat_api_corp_id.is_some()),
            ("victorops_api_url", g.victorops_api_url.is_some()),
            ("victorops_api_key", g.victorops_api_key.is_some()),
            ("victorops_api_key_file", g.victorops_api_key_file.is_some()),
            ("telegram_api_url", g.telegram_api_url.is_some()),
            ("webex_api_url", g.webex_api_url.is_some()),
        ],
    )?;
    unsupported(c, "", &[("tracing", raw.tracing.is_some())])?;
    let http =
        http::settings(c, "global.http_config", "global.http_config", g.http_config.as_ref())?.unwrap_or_default();
    let resolve_timeout =
        c.duration("global.resolve_timeout", "resolve_timeout", &g.resolve_timeout, Duration::from_secs(300))?;
    if resolve_timeout.is_zero() {
        return Err(c.err("global.resolve_timeout", "resolve_timeout:", "must be greater than 0"));
    }
    Ok((http, resolve_timeout))
}

/// `receivers:`, each on its own: one refused does not hide the next.
fn receivers(c: &Ctx, raw: &raw::File, found: &mut Found) -> BTreeMap<String, Receiver> {
    let (mut out, mut seen) = (BTreeMap::new(), BTreeSet::new());
    for (i, r) in raw.receivers.iter().enumerate() {
        if !seen.insert(&r.name) {
            let field = format!("receivers[{i}].name");
            found.0.push(c.err(field, &r.name, format!("receiver {:?} is defined twice", r.name)));
        } else if let Some(receiver) = found.ok(receiver(c, &raw.global, r, i)) {
            out.insert(r.name.clone(), receiver);
        }
    }
    out
}

fn receiver(c: &Ctx, g: &raw::Global, r: &raw::Receiver, i: usize) -> Result<Receiver, ConfigError> {
    let field = format!("receivers[{i}].");
    if r.name.is_empty() {
        return Err(c.err(format!("{field}name"), "name:", "must not be empty"));
    }
    unsupported(
        c,
        &field,
        &[
            ("wechat_configs", r.wechat_configs.is_some()),
            ("pushover_configs", r.pushover_configs.is_some()),
            ("victorops_configs", r.victorops_configs.is_some()),
            ("sns_configs", r.sns_configs.is_some()),
            ("telegram_configs", r.telegram_configs.is_some()),
            ("webex_configs", r.webex_configs.is_some()),
            ("discord_configs", r.discord_configs.is_some()),
            ("msteams_configs", r.msteams_configs.is_some()),
        ],
    )?;
    let mut webhooks = Vec::new();
    for (j, w) in r.webhook_configs.iter().enumerate() {
        let wf = format!("{field}webhook_configs[{j}].");
        let url = im::url_source(c, &wf, "url", &w.url, &w.url_file)?
            .ok_or_else(|| c.err(format!("{wf}url"), "webhook_configs:", "missing"))?;
        let http = http::settings(
            c,
            &format!("{wf}http_config"),
            &format!("receivers {:?} webhook_configs[{j}].http_config", r.name),
            w.http_config.as_ref(),
        )?;
        let timeout = c.timeout(&wf, &w.timeout)?;
        let ext = w.argus.as_ref();
        let signature_header = ext.and_then(|a| a.signature_header.clone());
        if signature_header.as_ref().is_some_and(|h| reqwest::header::HeaderName::from_bytes(h.as_bytes()).is_err()) {
            return Err(c.err(format!("{wf}argus.signature_header"), "signature_header:", "not an http header name"));
        }
        webhooks.push(WebhookConfig {
            url,
            http,
            send_resolved: w.send_resolved.unwrap_or(true),
            max_alerts: w.max_alerts,
            timeout,
            hmac_secret: ext.and_then(|a| a.hmac_secret.clone()).map(Secret::new),
            signature_header: signature_header.unwrap_or_else(|| SIGNATURE_HEADER.to_string()),
            body_template: match ext.and_then(|a| a.body_template.as_deref()) {
                None => None,
                Some(t) => Some(
                    BodyTemplate::parse(t)
                        .map_err(|e| c.err(format!("{wf}argus.body_template"), "body_template:", e))?,
                ),
            },
        });
    }
    let mut receiver = Receiver { name: r.name.clone(), webhooks, ..Receiver::default() };
    im::receivers(c, g, r, &field, &mut receiver)?;
    paging::receivers(c, g, r, &field, &mut receiver)?;
    scheduler::receivers(c, r, &field, &mut receiver)?;
    Ok(receiver)
}

/// `time_intervals:` and `mute_time_intervals:`, each set on its own.
fn time_intervals(c: &Ctx, raw: &raw::File, found: &mut Found) -> BTreeMap<String, Vec<TimeInterval>> {
    let mut time_intervals = BTreeMap::new();
    let sets = raw.time_intervals.iter().map(|s| ("time_intervals", s));
    'sets: for (i, (key, set)) in
        sets.chain(raw.mute_time_intervals.iter().map(|s| ("mute_time_intervals", s))).enumerate()
    {
        let mut out = Vec::new();
        for (j, ti) in set.time_intervals.iter().enumerate() {
            let t = TimeInterval::from_raw(ti).map_err(|(f, reason)| {
                let last = f.rsplit('.').next().unwrap_or(&f).to_string();
                c.err(format!("{key}[{i}].time_intervals[{j}].{f}"), &format!("{last}:"), reason)
            });
            match found.ok(t) {
                Some(t) => out.push(t),
                None => continue 'sets,
            }
        }
        if time_intervals.contains_key(&set.name) {
            found.0.push(c.err(
                format!("{key}[{i}].name"),
                &set.name,
                format!("time interval {:?} is defined twice", set.name),
            ));
        } else {
            time_intervals.insert(set.name.clone(), out);
        }
    }
    time_intervals
}

/// The route tree.
fn routes(
    c: &Ctx,
    root: Option<&raw::Route>,
    receivers: &BTreeSet<String>,
    intervals: &BTreeSet<String>,
) -> Result<Route, ConfigError> {
    let root = root.ok_or_else(|| c.err("route", "", "missing: the root route is required"))?;
    if !root.matchers.is_empty() || !root.match_eq.is_empty() || !root.match_re.is_empty() {
        return Err(c.err("route.matchers", "matchers:", "the root route must not have matchers"));
    }
    if root.continue_ {
        return Err(c.err("route.continue", "continue:", "the root route must not have continue"));
    }
    let receiver = root
        .receiver
        .clone()
        .ok_or_else(|| c.err("route.receiver", "route:", "missing: the root route needs a receiver"))?;
    let defaults = RouteOpts {
        receiver,
        group_by: GroupBy::Labels(Vec::new()),
        group_wait: Duration::from_secs(30),
        group_interval: Duration::from_secs(300),
        repeat_interval: Duration::from_secs(4 * 3600),
        mute_time_intervals: Vec::new(),
        active_time_intervals: Vec::new(),
    };
    build_route(c, root, "route", None, &defaults, receivers, intervals)
}

/// `inhibit_rules:`, each on its own.
fn inhibit_rules(c: &Ctx, list: &[raw::InhibitRule], found: &mut Found) -> Vec<InhibitRule> {
    let rule = |i: usize, r: &raw::InhibitRule| -> Result<InhibitRule, ConfigError> {
        let f = format!("inhibit_rules[{i}]");
        let mut source = c.matchers(&format!("{f}.source_matchers"), &r.source_matchers)?;
        source.extend(c.legacy(&format!("{f}.source_match_re"), &r.source_match, &r.source_match_re)?);
        let mut target = c.matchers(&format!("{f}.target_matchers"), &r.target_matchers)?;
        target.extend(c.legacy(&format!("{f}.target_match_re"), &r.target_match, &r.target_match_re)?);
        if source.is_empty() || target.is_empty() {
            return Err(c.err(f, "inhibit_rules:", "needs both source and target matchers"));
        }
        Ok(InhibitRule { source, target, equal: r.equal.clone() })
    };
    list.iter().enumerate().filter_map(|(i, r)| found.ok(rule(i, r))).collect()
}

/// The `argus:` section, validated.
struct Extensions {
    flap: Option<FlapConfig>,
    correlation: Option<CorrelationConfig>,
    escalation: Vec<EscalationRule>,
    rules: Option<super::RulesConfig>,
    silence_until_resolved_max: Duration,
    history_retention: Duration,
}

/// `argus:`, each part on its own; None when any part was refused.
fn extensions(c: &Ctx, argus: &raw::Argus, receivers: &BTreeSet<String>, found: &mut Found) -> Option<Extensions> {
    let flap = found.ok(flap(c, argus.flap.as_ref()));
    let correlation = found.ok(argus.correlation.as_ref().map(|k| correlation(c, k)).transpose());
    let escalation = found.ok(escalation(c, &argus.escalation, argus.correlation.is_some(), receivers));
    let rules = found.ok(super::rules::validate(c, argus.rules.as_ref()));
    let positive = |field: &str, key: &str, v: &Option<String>, default: Duration| {
        let d = c.duration(field, key, v, default)?;
        if d.is_zero() {
            return Err(c.err(field, key, "must be greater than 0"));
        }
        Ok(d)
    };
    let silence_until_resolved_max = found.ok(positive(
        "argus.silence_until_resolved_max",
        "silence_until_resolved_max",
        &argus.silence_until_resolved_max,
        super::DEFAULT_SILENCE_UNTIL_RESOLVED_MAX,
    ));
    let history_retention = found.ok(positive(
        "argus.history_retention",
        "history_retention",
        &argus.history_retention,
        super::DEFAULT_HISTORY_RETENTION,
    ));
    Some(Extensions {
        flap: flap?,
        correlation: correlation?,
        escalation: escalation?,
        rules: rules?,
        silence_until_resolved_max: silence_until_resolved_max?,
        history_retention: history_retention?,
    })
}

fn flap(c: &Ctx, f: Option<&raw::Flap>) -> Result<Option<FlapConfig>, ConfigError> {
    let Some(f) = f else { return Ok(None) };
    let d = FlapConfig::default();
    let cfg = FlapConfig {
        window: c.duration("argus.flap.window", "window", &f.window, d.window)?,
        threshold: f.threshold.unwrap_or(d.threshold),
        settle: c.duration("argus.flap.settle", "settle", &f.settle, d.settle)?,
    };
    if cfg.threshold < 2 {
        return Err(c.err("argus.flap.threshold", "threshold:", "must be at least 2 state changes"));
    }
    Ok(Some(cfg))
}

fn escalation(
    c: &Ctx,
    list: &[raw::Escalation],
    correlated: bool,
    receivers: &BTreeSet<String>,
) -> Result<Vec<EscalationRule>, ConfigError> {
    if !list.is_empty() && !correlated {
        return Err(c.err(
            "argus.escalation",
            "escalation:",
            "needs argus.correlation: escalation acts on incidents, and only correlation makes them",
        ));
    }
    let mut out = Vec::new();
    for (i, e) in list.iter().enumerate() {
        let field = format!("argus.escalation[{i}]");
        let receiver =
            e.receiver.clone().ok_or_else(|| c.err(format!("{field}.receiver"), "escalation:", "missing"))?;
        if !receivers.contains(&receiver) {
            return Err(c.err(
                format!("{field}.receiver"),
                &format!("receiver: {receiver}"),
                format!("undefined receiver {receiver:?}"),
            ));
        }
        let after = match &e.after {
            None => return Err(c.err(format!("{field}.after"), "escalation:", "missing: how long unacknowledged")),
            Some(_) => c.duration(&format!("{field}.after"), "after", &e.after, Duration::ZERO)?,
        };
        if after.is_zero() {
            return Err(c.err(format!("{field}.after"), "after:", "must be longer than zero"));
        }
        let matchers = match &e.matchers {
            Some(m) => c.matchers(&format!("{field}.matchers"), m)?,
            None => vec![Matcher::eq("severity", "critical")],
        };
        out.push(EscalationRule { matchers, after, receiver });
    }
    Ok(out)
}

fn correlation(c: &Ctx, k: &raw::Correlation) -> Result<CorrelationConfig, ConfigError> {
    let d = CorrelationConfig::default();
    let mut causes = d.causes.clone();
    if let Some(list) = &k.causes {
        causes = Vec::new();
        for (i, cause) in list.iter().enumerate() {
            let field = format!("argus.correlation.causes[{i}]");
            if cause.name.is_empty() {
                return Err(c.err(format!("{field}.name"), "name:", "must not be empty"));
            }
            let matchers = c.matchers(&format!("{field}.matchers"), &cause.matchers)?;
            causes.push(CauseRule { name: cause.name.clone(), matchers });
        }
    }
    let cfg = CorrelationConfig {
        labels: k.labels.clone().unwrap_or(d.labels),
        window: c.duration("argus.correlation.window", "window", &k.window, d.window)?,
        burst_window: c.duration("argus.correlation.burst_window", "burst_window", &k.burst_window, d.burst_window)?,
        backoff_window: c.duration(
            "argus.correlation.backoff_window",
            "backoff_window",
            &k.backoff_window,
            d.backoff_window,
        )?,
        backoff_step: k.backoff_step.unwrap_or(d.backoff_step),
        update_interval: c.duration(
            "argus.correlation.update_interval",
            "update_interval",
            &k.update_interval,
            d.update_interval,
        )?,
        recurrence_window: c.duration(
            "argus.correlation.recurrence_window",
            "recurrence_window",
            &k.recurrence_window,
            d.recurrence_window,
        )?,
        causes,
    };
    if cfg.labels.is_empty() {
        return Err(c.err("argus.correlation.labels", "labels:", "must name at least one topology label"));
    }
    if cfg.backoff_step == 0 {
        return Err(c.err("argus.correlation.backoff_step", "backoff_step:", "must be at least 1"));
    }
    Ok(cfg)
}

fn build_route(
    c: &Ctx,
    r: &raw::Route,
    field: &str,
    parent_route: Option<&Route>,
    parent: &RouteOpts,
    receivers: &BTreeSet<String>,
    intervals: &BTreeSet<String>,
) -> Result<Route, ConfigError> {
    let mut matchers = c.matchers(&format!("{field}.matchers"), &r.matchers)?;
    matchers.extend(c.legacy(&format!("{field}.match_re"), &r.match_eq, &r.match_re)?);
    let receiver = r.receiver.clone().unwrap_or_else(|| parent.receiver.clone());
    if !receivers.contains(&receiver) {
        return Err(c.err(
            format!("{field}.receiver"),
            &format!("receiver: {receiver}"),
            format!("undefined receiver {receiver:?}"),
        ));
    }
    let group_by = match &r.group_by {
        None => parent.group_by.clone(),
        Some(list) if list.iter().any(|l| l == "...") => {
            if list.len() > 1 {
                return Err(c.err(format!("{field}.group_by"), "group_by:", "'...' must be the only element"));
            }
            GroupBy::All
        }
        Some(list) => {
            let mut seen = BTreeSet::new();
            for l in list {
                if !seen.insert(l) {
                    return Err(c.err(format!("{field}.group_by"), "group_by:", format!("duplicated label {l:?}")));
                }
            }
            GroupBy::Labels(list.clone())
        }
    };
    for name in r.mute_time_intervals.iter().chain(&r.active_time_intervals) {
        if !intervals.contains(name) {
            return Err(c.err(
                format!("{field}.mute_time_intervals"),
                name,
                format!("undefined time interval {name:?}"),
            ));
        }
    }
    let opts = RouteOpts {
        receiver,
        group_by,
        group_wait: c.duration(&format!("{field}.group_wait"), "group_wait", &r.group_wait, parent.group_wait)?,
        group_interval: c.duration(
            &format!("{field}.group_interval"),
            "group_interval",
            &r.group_interval,
            parent.group_interval,
        )?,
        repeat_interval: c.duration(
            &format!("{field}.repeat_interval"),
            "repeat_interval",
            &r.repeat_interval,
            parent.repeat_interval,
        )?,
        mute_time_intervals: r.mute_time_intervals.clone(),
        active_time_intervals: r.active_time_intervals.clone(),
    };
    if opts.group_interval.is_zero() {
        return Err(c.err(format!("{field}.group_interval"), "group_interval", "must be greater than 0"));
    }
    if opts.repeat_interval.is_zero() {
        return Err(c.err(format!("{field}.repeat_interval"), "repeat_interval", "must be greater than 0"));
    }
    let mut node = Route::new(parent_route, matchers, r.continue_, opts);
    for (i, child) in r.routes.iter().enumerate() {
        let child =
            build_route(c, child, &format!("{field}.routes[{i}]"), Some(&node), &node.opts, receivers, intervals)?;
        node.add_child(child);
    }
    Ok(node)
}
