//! The default IM message, in English or Chinese: a title and one item per alert, rendered as the
//! markdown DingTalk, Feishu and WeCom read, or as Slack's mrkdwn.

use crate::alert::Status;
use crate::receiver::Language;
use crate::webhook::{Message, MessageAlert};
use std::fmt::Write;

/// Which markup the lines use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    /// `**bold**`, `[text](url)`.
    Markdown,
    /// Slack: `*bold*`, `<url|text>`.
    Slack,
}

struct Words {
    firing: &'static str,
    resolved: &'static str,
    alerts: &'static str,
    since: &'static str,
    resolved_at: &'static str,
    cause: &'static str,
    incident: &'static str,
    flapping: &'static str,
    more: &'static str,
    open: &'static str,
}

const EN: Words = Words {
    firing: "FIRING",
    resolved: "RESOLVED",
    alerts: "alerts",
    since: "since",
    resolved_at: "resolved at",
    cause: "Probable cause",
    incident: "incident",
    flapping: "flapping, state changes",
    more: "more alerts not shown",
    open: "Open in alertd",
};

const ZH: Words = Words {
    firing: "告警",
    resolved: "已恢复",
    alerts: "条告警",
    since: "开始于",
    resolved_at: "恢复于",
    cause: "可能原因",
    incident: "事件",
    flapping: "抖动，状态变化次数",
    more: "条告警未显示",
    open: "在 alertd 中查看",
};

fn words(l: Language) -> &'static Words {
    match l {
        Language::En => &EN,
        Language::Zh => &ZH,
    }
}

/// `[FIRING:2] GpuHot host=a` — the message's status, count, alert name and group labels.
pub fn title(m: &Message, lang: Language) -> String {
    let w = words(lang);
    let status = if m.status == Status::Firing { w.firing } else { w.resolved };
    let firing = m.alerts.iter().filter(|a| a.status == Status::Firing).count();
    let count = if m.status == Status::Firing { firing } else { m.alerts.len() };
    let mut t = format!("[{status}:{count}]");
    if let Some(name) = m.common_labels.get("alertname") {
        write!(t, " {name}").ok();
    }
    for (k, v) in m.group_labels.iter().filter(|(k, _)| k.as_str() != "alertname") {
        write!(t, " {k}={v}").ok();
    }
    t
}

/// The body under the title: incident, then each alert, then what was left out and a link.
pub fn body(m: &Message, lang: Language, markup: Markup) -> String {
    let w = words(lang);
    let bold = |s: &str| match markup {
        Markup::Markdown => format!("**{s}**"),
        Markup::Slack => format!("*{s}*"),
    };
    let mut out = String::new();
    let extras = m.argus.as_ref();
    if let Some(i) = extras.and_then(|e| e.incident.as_ref()) {
        let n = i.alerts;
        writeln!(out, "{}: {} ({} #{}, {n} {})\n", bold(w.cause), i.probable_cause, w.incident, i.id, w.alerts).ok();
    }
    for a in &m.alerts {
        let name = a.labels.get("alertname").map(String::as_str).unwrap_or("");
        let status = if a.status == Status::Firing { w.firing } else { w.resolved };
        write!(out, "- {} {status}", bold(name)).ok();
        if let Some(text) = a.annotations.get("summary").or_else(|| a.annotations.get("description")) {
            write!(out, ": {text}").ok();
        }
        out.push('\n');
        let labels = labels(a);
        if !labels.is_empty() {
            writeln!(out, "  {labels}").ok();
        }
        match a.status {
            Status::Firing => writeln!(out, "  {} {}", w.since, a.starts_at).ok(),
            Status::Resolved => writeln!(out, "  {} {}", w.resolved_at, a.ends_at).ok(),
        };
        if let Some(n) = extras.and_then(|e| e.flapping.get(&a.fingerprint)) {
            writeln!(out, "  {} {n}", w.flapping).ok();
        }
    }
    if m.truncated_alerts > 0 {
        writeln!(out, "\n{} {}", m.truncated_alerts, w.more).ok();
    }
    if !m.external_url.is_empty() {
        let link = match markup {
            Markup::Markdown => format!("[{}]({})", w.open, m.external_url),
            Markup::Slack => format!("<{}|{}>", m.external_url, w.open),
        };
        writeln!(out, "\n{link}").ok();
    }
    out
}

/// `k=v` pairs of an alert's labels, alertname left out (it is already shown).
fn labels(a: &MessageAlert) -> String {
    let pairs: Vec<String> =
        a.labels.iter().filter(|(k, _)| k.as_str() != "alertname").map(|(k, v)| format!("{k}={v}")).collect();
    pairs.join(" ")
}
