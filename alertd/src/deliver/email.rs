//! Email over SMTP (lettre): a text and an HTML part, STARTTLS, implicit TLS or none, optional
//! auth. The outbox keeps the rendered subject and parts; the `Message-ID` is made from the
//! idempotency key, so a repeated email is recognisable as one.

use super::text::{self, Markup};
use super::{BoxFuture, DeliverError, Integration};
use crate::notify::Notification;
use crate::receiver::notification::Renderer;
use crate::receiver::{EmailConfig, EmailTls};
use lettre::message::{Mailbox, MultiPart, header};
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{Tls, TlsParameters};
use lettre::{AsyncSmtpTransport, AsyncTransport, Tokio1Executor};
use serde::{Deserialize, Serialize};

pub struct Email {
    pub cfg: EmailConfig,
}

/// What the outbox keeps of an email.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    subject: String,
    text: String,
    html: String,
}

impl Integration for Email {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let (c, lang) = (&self.cfg, self.cfg.language);
        let mut r = Renderer::new(&n.message, "email_configs");
        let subject = r.field("headers.Subject", c.subject.as_ref()).map_err(DeliverError::Render)?;
        let subject = subject.unwrap_or_else(|| text::title(&n.message, lang));
        let body = match r.field("text", c.text.as_ref()).map_err(DeliverError::Render)? {
            Some(t) => t,
            None => text::body(&n.message, lang, Markup::Markdown),
        };
        let html = match r.html_field("html", c.html.as_ref()).map_err(DeliverError::Render)? {
            Some(h) => h,
            None => format!("<html><body><h3>{}</h3><pre>{}</pre></body></html>", escape(&subject), escape(&body)),
        };
        let stored = Stored { subject, text: body, html };
        serde_json::to_vec(&stored).map_err(|e| DeliverError::Render(e.to_string()))
    }

    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            let stored: Stored = serde_json::from_slice(body).map_err(|e| DeliverError::Render(e.to_string()))?;
            let msg = self.message(stored, key)?;
            let transport = self.transport()?;
            match tokio::time::timeout(self.cfg.timeout, transport.send(msg)).await {
                Err(_) => Err(DeliverError::Timeout),
                Ok(Ok(_)) => Ok(()),
                Ok(Err(e)) => Err(smtp_error(&e)),
            }
        })
    }
}

impl Email {
    fn message(&self, s: Stored, key: &str) -> Result<lettre::Message, DeliverError> {
        let mailbox = |a: &str| a.parse::<Mailbox>().map_err(|e| DeliverError::Render(format!("address {a:?}: {e}")));
        let mut b = lettre::Message::builder()
            .from(mailbox(&self.cfg.from)?)
            .subject(s.subject)
            .message_id(Some(format!("<{key}@alertd>")))
            .header(header::ContentTransferEncoding::QuotedPrintable);
        for to in &self.cfg.to {
            b = b.to(mailbox(to)?);
        }
        b.multipart(MultiPart::alternative_plain_html(s.text, s.html)).map_err(|e| DeliverError::Render(e.to_string()))
    }

    fn transport(&self) -> Result<AsyncSmtpTransport<Tokio1Executor>, DeliverError> {
        let c = &self.cfg;
        let params = || TlsParameters::new(c.host.clone()).map_err(|e| DeliverError::Request(e.to_string()));
        let tls = match c.tls {
            EmailTls::Implicit => Tls::Wrapper(params()?),
            EmailTls::StartTls => Tls::Required(params()?),
            EmailTls::None => Tls::None,
        };
        let mut b = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(c.host.as_str())
            .port(c.port)
            .tls(tls)
            .timeout(Some(c.timeout));
        if let Some(hello) = &c.hello {
            b = b.hello_name(lettre::transport::smtp::extension::ClientId::Domain(hello.clone()));
        }
        if let (Some(user), Some(pass)) = (&c.auth_username, &c.auth_password) {
            // Read at every send, so a rotated password file is used without a reload.
            let pass = pass.read().map_err(|e| DeliverError::Request(format!("auth_password_file {e}")))?;
            b = b.credentials(Credentials::new(user.clone(), pass.expose().to_string()));
        }
        Ok(b.build())
    }
}

/// SMTP 4xx is transient (retried), 5xx permanent; connection and TLS trouble is retried. lettre's
/// messages quote the server, never the credentials.
fn smtp_error(e: &lettre::transport::smtp::Error) -> DeliverError {
    let code = e.status().map(|c| c.to_string());
    if e.is_permanent() {
        return DeliverError::Refused(format!("smtp {}: {e}", code.unwrap_or_default()));
    }
    if e.is_timeout() {
        return DeliverError::Timeout;
    }
    DeliverError::Connect(format!("smtp: {e}"))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
