//! Validation of the receivers beyond webhooks: Slack and the group robots (DingTalk, Feishu/Lark,
//! WeCom). URLs and secrets become `Secret`s here, and no error message repeats their value.

use super::ConfigError;
use super::http::{secret, settings};
use super::raw;
use super::validate::{Ctx, unsupported};
use crate::receiver::{
    DEFAULT_TIMEOUT, EmailConfig, EmailTls, Language, Mentions, Receiver, RobotConfig, SecretSource, SlackConfig,
    SlackTemplates,
};
use argus_model::Secret;

/// An http(s) URL, as a secret: the error names the field, not the value, which may hold a token.
pub(super) fn url(c: &Ctx, field: &str, anchor: &str, v: &Option<String>) -> Result<Secret, ConfigError> {
    let url = v.clone().ok_or_else(|| c.err(field, anchor, "missing"))?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(c.err(field, &url, "not an http(s) URL"));
    }
    Ok(Secret::new(url))
}

/// `<key>` (an http(s) URL, checked here) or `<key>_file` (checked when it is read); `f` is the
/// field prefix.
pub(super) fn url_source(
    c: &Ctx,
    f: &str,
    key: &str,
    inline: &Option<String>,
    file: &Option<String>,
) -> Result<Option<SecretSource>, ConfigError> {
    if inline.is_some() && file.is_none() {
        url(c, &format!("{f}{key}"), &format!("{key}:"), inline)?;
    }
    secret(c, f, key, inline, file)
}

/// `mentions`, as far as the robot's message can carry them.
fn mentions(c: &Ctx, f: &str, key: &str, m: Option<&raw::Mentions>) -> Result<Mentions, ConfigError> {
    let Some(m) = m else { return Ok(Mentions::default()) };
    let mf = format!("{f}mentions.");
    if key != "dingtalk_configs" && !m.mobiles.is_empty() {
        return Err(c.err(
            format!("{mf}mobiles"),
            "mobiles:",
            "Feishu and WeCom robots mention by user id only: use user_ids",
        ));
    }
    if key == "wecom_configs" && m.all {
        return Err(c.err(format!("{mf}all"), "all:", "WeCom markdown messages cannot mention everyone"));
    }
    for (list, name) in [(&m.mobiles, "mobiles"), (&m.user_ids, "user_ids")] {
        if let Some(bad) =
            list.iter().find(|v| v.is_empty() || v.contains(char::is_whitespace) || v.contains(['<', '>']))
        {
            return Err(c.err(
                format!("{mf}{name}"),
                &format!("{name}:"),
                format!("{bad:?} is not a mobile number or user id"),
            ));
        }
    }
    Ok(Mentions { mobiles: m.mobiles.clone(), user_ids: m.user_ids.clone(), all: m.all })
}

pub(super) fn language(c: &Ctx, field: &str, v: &Option<String>) -> Result<Language, ConfigError> {
    match v.as_deref() {
        None | Some("en") => Ok(Language::En),
        Some("zh") => Ok(Language::Zh),
        Some(other) => Err(c.err(field, "language:", format!("{other:?} is not en or zh"))),
    }
}

pub(super) fn receivers(
    c: &Ctx,
    g: &raw::Global,
    r: &raw::Receiver,
    field: &str,
    out: &mut Receiver,
) -> Result<(), ConfigError> {
    for (j, s) in r.slack_configs.iter().enumerate() {
        let f = format!("{field}slack_configs[{j}].");
        unsupported(
            c,
            &f,
            &[
                ("fields", s.fields.is_some()),
                ("short_fields", s.short_fields.is_some()),
                ("callback_id", s.callback_id.is_some()),
                ("link_names", s.link_names.is_some()),
                ("mrkdwn_in", s.mrkdwn_in.is_some()),
                ("actions", s.actions.is_some()),
            ],
        )?;
        let lang = s.argus.as_ref().and_then(|a| a.language.clone());
        let t = |key: &str, v: &Option<String>| c.template(&f, key, v.as_deref());
        let templates = SlackTemplates {
            title: t("title", &s.title)?,
            title_link: t("title_link", &s.title_link)?,
            pretext: t("pretext", &s.pretext)?,
            text: t("text", &s.text)?,
            fallback: t("fallback", &s.fallback)?,
            color: t("color", &s.color)?,
            footer: t("footer", &s.footer)?,
            icon_url: t("icon_url", &s.icon_url)?,
            image_url: t("image_url", &s.image_url)?,
            thumb_url: t("thumb_url", &s.thumb_url)?,
        };
        let api_url = match url_source(c, &f, "api_url", &s.api_url, &s.api_url_file)? {
            Some(u) => u,
            None => url_source(c, "global.", "slack_api_url", &g.slack_api_url, &g.slack_api_url_file)?.ok_or_else(
                || c.err(format!("{f}api_url"), "slack_configs:", "missing (and no global slack_api_url)"),
            )?,
        };
        out.slack.push(SlackConfig {
            api_url,
            http: settings(
                c,
                &format!("{f}http_config"),
                &format!("receivers {:?} slack_configs[{j}].http_config", r.name),
                s.http_config.as_ref(),
            )?,
            channel: t("channel", &s.channel)?,
            username: t("username", &s.username)?,
            icon_emoji: t("icon_emoji", &s.icon_emoji)?,
            templates,
            send_resolved: s.send_resolved.unwrap_or(false),
            language: language(c, &format!("{f}argus.language"), &lang)?,
            timeout: DEFAULT_TIMEOUT,
        });
    }
    let robots = [
        ("dingtalk_configs", &r.dingtalk_configs, &mut out.dingtalk),
        ("feishu_configs", &r.feishu_configs, &mut out.feishu),
        ("wecom_configs", &r.wecom_configs, &mut out.wecom),
    ];
    for (key, list, out) in robots {
        for (j, b) in list.iter().enumerate() {
            let f = format!("{field}{key}[{j}].");
            if key == "wecom_configs" && b.secret.is_some() {
                return Err(c.err(format!("{f}secret"), "secret:", "WeCom group robots are not signed"));
            }
            let timeout = c.timeout(&f, &b.timeout)?;
            let mentions = mentions(c, &f, key, b.mentions.as_ref())?;
            out.push(RobotConfig {
                mentions,
                url: url(c, &format!("{f}url"), &format!("{key}:"), &b.url)?,
                http: settings(
                    c,
                    &format!("{f}http_config"),
                    &format!("receivers {:?} {key}[{j}].http_config", r.name),
                    b.http_config.as_ref(),
                )?,
                secret: b.secret.clone().map(Secret::new),
                send_resolved: b.send_resolved.unwrap_or(true),
                language: language(c, &format!("{f}language"), &b.language)?,
                timeout,
            });
        }
    }
    if let Some(l) = r.argus.as_ref().and_then(|a| a.rate_limit.as_ref()) {
        let per = c.duration(&format!("{field}argus.rate_limit.per"), "per", &Some(l.per.clone()), DEFAULT_TIMEOUT)?;
        if l.max == 0 || per.is_zero() {
            return Err(c.err(format!("{field}argus.rate_limit"), "rate_limit:", "max and per must be greater than 0"));
        }
        out.rate_limit = Some((l.max, per));
    }
    for (j, e) in r.email_configs.iter().enumerate() {
        out.email.push(email(c, g, e, &format!("{field}email_configs[{j}]."))?);
    }
    Ok(())
}

fn email(c: &Ctx, g: &raw::Global, e: &raw::Email, f: &str) -> Result<EmailConfig, ConfigError> {
    unsupported(
        c,
        f,
        &[
            ("auth_secret", e.auth_secret.is_some()),
            ("auth_identity", e.auth_identity.is_some()),
            ("tls_config", e.tls_config.is_some()),
        ],
    )?;
    let mut subject = None;
    for (name, v) in e.headers.iter().flatten() {
        // Alertmanager matches header names without regard to case.
        if !name.eq_ignore_ascii_case("subject") {
            let reason = format!("header {name:?} is not supported by alertd yet: only Subject is");
            return Err(c.err(format!("{f}headers.{name}"), &format!("{name}:"), reason));
        }
        subject = c.template(&format!("{f}headers."), name, Some(v))?;
    }
    let missing =
        |key: &str| c.err(format!("{f}{key}"), "email_configs:", format!("missing (and no global smtp_{key})"));
    let to: Vec<String> =
        e.to.as_deref()
            .ok_or_else(|| c.err(format!("{f}to"), "email_configs:", "missing"))?
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
    if to.is_empty() {
        return Err(c.err(format!("{f}to"), "to:", "names no address"));
    }
    let from = e.from.clone().or_else(|| g.smtp_from.clone()).ok_or_else(|| missing("from"))?;
    let smarthost = e.smarthost.clone().or_else(|| g.smtp_smarthost.clone()).ok_or_else(|| missing("smarthost"))?;
    let (host, port) = smarthost
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.trim_start_matches('[').trim_end_matches(']').to_string(), p.parse::<u16>().ok()?)))
        .filter(|(h, _)| !h.is_empty())
        .ok_or_else(|| c.err(format!("{f}smarthost"), "smarthost:", format!("{smarthost:?} is not host:port")))?;
    // The entry's own credentials, else the global ones (Alertmanager takes each key on its own).
    let auth_username = e.auth_username.clone().or_else(|| g.smtp_auth_username.clone());
    let auth_password = match secret(c, f, "auth_password", &e.auth_password, &e.auth_password_file)? {
        Some(p) => Some(p),
        None => secret(c, "global.", "smtp_auth_password", &g.smtp_auth_password, &g.smtp_auth_password_file)?,
    };
    if auth_password.is_some() != auth_username.is_some() {
        return Err(c.err(format!("{f}auth_username"), "auth_", "auth_username and auth_password go together"));
    }
    let tls = if port == 465 {
        EmailTls::Implicit
    } else if e.require_tls.or(g.smtp_require_tls).unwrap_or(true) {
        EmailTls::StartTls
    } else {
        EmailTls::None
    };
    let lang = e.argus.as_ref().and_then(|a| a.language.clone());
    Ok(EmailConfig {
        to,
        from,
        host,
        port,
        hello: e.hello.clone().or_else(|| g.smtp_hello.clone()),
        auth_username,
        auth_password,
        tls,
        subject,
        text: c.template(f, "text", e.text.as_deref())?,
        html: c.template(f, "html", e.html.as_deref())?,
        send_resolved: e.send_resolved.unwrap_or(false),
        language: language(c, &format!("{f}argus.language"), &lang)?,
        timeout: DEFAULT_TIMEOUT,
    })
}
