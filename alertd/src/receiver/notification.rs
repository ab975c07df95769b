//! Notification templates in receivers' fields (Slack's `title`, email's `html`, PagerDuty's
//! `description`, …): the template library a configuration loads (Alertmanager's `default.tmpl`
//! and `email.tmpl`, then the files `templates:` names), the data a template runs on, built from
//! the webhook v4 message, and [`Text`], a field's parsed template. The language and the data
//! types are the rule template engine's (`rules::template::notify`). A receiver setting: `config` parses fields into [`Text`], `deliver` renders them.

use crate::rules::template::TemplateError;
use crate::rules::template::notify::{AlertData, Library, NotifyData, NotifyTemplate};
use crate::webhook::Message;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

/// Alertmanager 0.25's `template/default.tmpl` and `template/email.tmpl` (Apache-2.0; see
/// notification/README.md).
const DEFAULTS: [(&str, &str); 2] = [
    ("default.tmpl", include_str!("notification/default.tmpl")),
    ("email.tmpl", include_str!("notification/email.tmpl")),
];

/// The library of Alertmanager's default templates alone.
pub fn defaults() -> &'static Library {
    static LIB: OnceLock<Library> = OnceLock::new();
    LIB.get_or_init(|| {
        let mut lib = Library::default();
        for (file, text) in DEFAULTS {
            // Checked by a test: the defaults parse.
            if let Err(e) = lib.add_file(file, text) {
                tracing::error!(file, %e, "Alertmanager's default template does not parse");
            }
        }
        lib
    })
}

/// The defaults, then each `(file, text)` in order (a later definition replaces an earlier one);
/// a `{{template}}` of an undefined name in any file is refused.
pub fn library(files: &[(String, String)]) -> Result<Library, TemplateError> {
    let mut lib = defaults().clone();
    for (file, text) in files {
        lib.add_file(file, text)?;
    }
    lib.check()?;
    Ok(lib)
}

/// Alertmanager's `template.Data` of a webhook message: the receiver's name with regular
/// expression metacharacters escaped (Alertmanager's `regexp.QuoteMeta`), the alerts as sent.
pub fn data(m: &Message) -> Rc<NotifyData> {
    let kv = |k: &crate::webhook::Kv| Rc::new(k.clone());
    let alerts = m
        .alerts
        .iter()
        .map(|a| {
            Rc::new(AlertData {
                status: status(a.status).into(),
                labels: kv(&a.labels),
                annotations: kv(&a.annotations),
                starts_at: a.starts_at.millis(),
                ends_at: a.ends_at.millis(),
                generator_url: a.generator_url.clone(),
                fingerprint: a.fingerprint.clone(),
            })
        })
        .collect();
    Rc::new(NotifyData {
        receiver: quote_meta(&m.receiver),
        status: status(m.status).into(),
        alerts: Rc::new(alerts),
        group_labels: kv(&m.group_labels),
        common_labels: kv(&m.common_labels),
        common_annotations: kv(&m.common_annotations),
        external_url: m.external_url.clone(),
    })
}

fn status(s: crate::alert::Status) -> &'static str {
    match s {
        crate::alert::Status::Firing => "firing",
        crate::alert::Status::Resolved => "resolved",
    }
}

/// Go's `regexp.QuoteMeta`.
fn quote_meta(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A receiver field written as a template, parsed against the configuration's library. Its
/// `Debug` is the text as written.
#[derive(Clone, PartialEq)]
pub struct Text(Arc<NotifyTemplate>);

impl Text {
    /// Parses `text` against `lib`.
    pub fn parse(lib: &Library, text: &str) -> Result<Text, TemplateError> {
        lib.parse_text(text).map(|t| Text(Arc::new(t)))
    }

    /// Plain text, rendered as written (a `{{` in it is text too).
    pub fn plain(text: &str) -> Text {
        Text(Arc::new(NotifyTemplate::literal(text)))
    }

    /// The text as written.
    pub fn source(&self) -> &str {
        self.0.text()
    }

    /// The field rendered for `data`.
    pub fn render(&self, data: &Rc<NotifyData>) -> Result<String, TemplateError> {
        self.0.execute(data)
    }

    /// The field rendered for `data` as HTML (see [`NotifyTemplate::execute_html`]).
    pub fn render_html(&self, data: &Rc<NotifyData>) -> Result<String, TemplateError> {
        self.0.execute_html(data)
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.0.text())
    }
}

/// Renders a receiver's fields for one message: the data is built once, on the first field.
pub struct Renderer<'a> {
    message: &'a Message,
    /// What the receiver's fields are called in errors (`slack_configs[0]`).
    integration: &'a str,
    data: Option<Rc<NotifyData>>,
}

impl<'a> Renderer<'a> {
    pub fn new(message: &'a Message, integration: &'a str) -> Self {
        Renderer { message, integration, data: None }
    }

    /// `field` rendered, or None when it is not set; the error names the receiver and the field.
    pub fn field(&mut self, field: &str, t: Option<&Text>) -> Result<Option<String>, String> {
        self.render(field, t, false)
    }

    /// An HTML field (an email's `html`) rendered, as [`Renderer::field`].
    pub fn html_field(&mut self, field: &str, t: Option<&Text>) -> Result<Option<String>, String> {
        self.render(field, t, true)
    }

    fn render(&mut self, field: &str, t: Option<&Text>, html: bool) -> Result<Option<String>, String> {
        let Some(t) = t else { return Ok(None) };
        let data = self.data.get_or_insert_with(|| data(self.message));
        let out = if html { t.render_html(data) } else { t.render(data) };
        out.map(Some).map_err(|e| format!("receiver {:?} {}.{field}: {e}", self.message.receiver, self.integration))
    }
}

#[cfg(test)]
mod tests;
