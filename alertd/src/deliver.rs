//! Delivery: Alertmanager's RetryStage made durable. `OutboxNotifier` is the `Notifier` the send
//! stage calls: it renders the integration's body and writes it to the outbox, nothing more, so the
//! engine never waits on the network. `Deliverer` runs one worker per integration that sends the
//! outbox's pending entries in order: 5xx, timeouts and connection errors are retried with
//! exponential backoff and jitter, a 429 waits for its `Retry-After`, any other 4xx fails at once.

pub mod batch;
pub mod dingtalk;
pub mod email;
pub mod feishu;
mod held;
mod http;
pub mod limit;
pub mod metrics;
pub mod opsgenie;
pub mod pagerduty;
mod robot;
pub mod scheduler;
pub mod sign;
pub mod slack;
pub mod template;
pub mod text;
pub mod webhook;
pub mod wecom;

pub use http::HttpTarget;

use crate::config::Config;
use crate::notify::{Notification, Notifier, NotifyError};
use crate::outbox::{self, Outbox, OutboxError, State};
use crate::receiver::{HttpSettings, SecretSource};
use crate::time::Timestamp;
use crate::webhook::Message;
use argus_model::Secret;
use limit::Window;
use metrics::Metrics;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;

/// Where one receiver integration sends: renders a notification into the body kept in the outbox,
/// and sends a kept body (signatures are made at each attempt, as some carry the send time).
pub trait Integration: Send + Sync {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError>;
    fn send<'a>(&'a self, body: &'a [u8], key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>>;

    /// The body of a capacity plan keyed `key`; None for integrations that take no capacity plans
    /// (all but the scheduler's).
    fn render_capacity(
        &self,
        _plan: &scheduler::capacity::CapacityPlan,
        _key: &str,
    ) -> Option<Result<Vec<u8>, DeliverError>> {
        None
    }
}

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Integrations by their notification-log name, e.g. `team/webhook/0`.
pub type Integrations = BTreeMap<String, Arc<dyn Integration>>;

#[derive(Debug, thiserror::Error)]
pub enum DeliverError {
    #[error("receiver answered http status {status}: {body}")]
    Status { status: u16, retry_after: Option<Duration>, body: String },
    #[error("request timed out")]
    Timeout,
    #[error("cannot connect: {0}")]
    Connect(String),
    #[error("request failed: {0}")]
    Request(String),
    #[error("receiver refused the message: {0}")]
    Refused(String),
    #[error("cannot render the message: {0}")]
    Render(String),
    #[error("integration {0} is no longer configured")]
    Unknown(String),
    #[error(transparent)]
    Outbox(#[from] OutboxError),
}

impl DeliverError {
    /// Alertmanager's rule: retry server errors, 429, timeouts and network errors; never other 4xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            DeliverError::Status { status, .. } => *status >= 500 || *status == 429,
            DeliverError::Timeout | DeliverError::Connect(_) | DeliverError::Request(_) => true,
            DeliverError::Outbox(e) => e.is_retryable(),
            DeliverError::Refused(_) | DeliverError::Render(_) | DeliverError::Unknown(_) => false,
        }
    }

    /// The wait a 429 asked for.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            DeliverError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// How long to wait between attempts, and when to give up.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    pub initial: Duration,
    pub multiplier: f64,
    pub max: Duration,
    /// Jitter: each wait is drawn from `[1 - jitter, 1 + jitter]` times the backoff.
    pub jitter: f64,
    /// An entry still failing this long after it was written is marked failed.
    pub give_up_after: Duration,
}

impl Default for RetryPolicy {
    /// Alertmanager's backoff (500 ms, ×1.5, ±50 %, at most 1 min); it gives up at the next group
    /// interval, alertd with the outbox after a day.
    fn default() -> Self {
        RetryPolicy {
            initial: Duration::from_millis(500),
            multiplier: 1.5,
            max: Duration::from_secs(60),
            jitter: 0.5,
            give_up_after: Duration::from_secs(24 * 3600),
        }
    }
}

impl RetryPolicy {
    /// The wait after failed attempt number `attempt` (1-based).
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exp = self.multiplier.powi(attempt.saturating_sub(1).min(64) as i32);
        let base = (self.initial.as_secs_f64() * exp).min(self.max.as_secs_f64());
        let factor = 1.0 + self.jitter * (2.0 * fastrand::f64() - 1.0);
        Duration::from_secs_f64((base * factor).max(0.0))
    }
}

/// Every configured integration by its notification-log name: the one place where each receiver
/// kind is built. Remediation records its actions in memory; see [`build_with_ledger`].
pub fn build(cfg: &Config) -> Result<Integrations, DeliverError> {
    build_with_ledger(cfg, Arc::new(scheduler::remediation::MemoryLedger::default()))
}

/// [`build`], with remediation recording its actions in `ledger` (alertd's history in `argus serve`).
pub fn build_with_ledger(
    cfg: &Config,
    ledger: Arc<dyn scheduler::remediation::Ledger>,
) -> Result<Integrations, DeliverError> {
    let global = http::client(&cfg.http)?;
    // Each integration with its own `http_config` gets a client of its own; the others share one.
    let target = |url: SecretSource, own: &Option<HttpSettings>, timeout| -> Result<HttpTarget, DeliverError> {
        let settings = own.as_ref().unwrap_or(&cfg.http);
        let client = if own.is_some() { http::client(settings)? } else { global.clone() };
        Ok(HttpTarget { client, url, timeout, authorization: settings.authorization.clone() })
    };
    let inline = |s: &Secret| SecretSource::Inline(s.clone());
    let mut out = Integrations::new();
    for r in cfg.receivers.values() {
        let mut add = |kind: &str, i: usize, it: Arc<dyn Integration>| out.insert(recipient(&r.name, kind, i), it);
        for (i, w) in r.webhooks.iter().enumerate() {
            let hook = webhook::Webhook {
                target: target(w.url.clone(), &w.http, w.timeout)?,
                hmac_secret: w.hmac_secret.clone(),
                signature_header: w.signature_header.clone(),
                body_template: w.body_template.clone(),
            };
            add("webhook", i, Arc::new(hook));
        }
        for (i, s) in r.slack.iter().enumerate() {
            let slack = slack::Slack {
                target: target(s.api_url.clone(), &s.http, s.timeout)?,
                channel: s.channel.clone(),
                username: s.username.clone(),
                icon_emoji: s.icon_emoji.clone(),
                templates: s.templates.clone(),
                language: s.language,
            };
            add("slack", i, Arc::new(slack));
        }
        for (i, b) in r.dingtalk.iter().enumerate() {
            let t = target(inline(&b.url), &b.http, b.timeout)?;
            let bot = dingtalk::DingTalk {
                target: t,
                secret: b.secret.clone(),
                language: b.language,
                limit: Window::robot(),
                mentions: b.mentions.clone(),
            };
            add("dingtalk", i, Arc::new(bot));
        }
        for (i, b) in r.feishu.iter().enumerate() {
            let t = target(inline(&b.url), &b.http, b.timeout)?;
            let bot = feishu::Feishu {
                target: t,
                secret: b.secret.clone(),
                language: b.language,
                mentions: b.mentions.clone(),
            };
            add("feishu", i, Arc::new(bot));
        }
        for (i, b) in r.wecom.iter().enumerate() {
            let t = target(inline(&b.url), &b.http, b.timeout)?;
            let bot =
                wecom::WeCom { target: t, language: b.language, limit: Window::robot(), mentions: b.mentions.clone() };
            add("wecom", i, Arc::new(bot));
        }
        for (i, e) in r.email.iter().enumerate() {
            add("email", i, Arc::new(email::Email { cfg: e.clone() }));
        }
        for (i, p) in r.pagerduty.iter().enumerate() {
            let t = target(SecretSource::Inline(Secret::new(p.url.clone())), &p.http, p.timeout)?;
            add("pagerduty", i, Arc::new(pagerduty::PagerDuty { target: t, cfg: p.clone() }));
        }
        for (i, o) in r.opsgenie.iter().enumerate() {
            let t = target(SecretSource::Inline(Secret::new(o.api_url.clone())), &o.http, o.timeout)?;
            add("opsgenie", i, Arc::new(opsgenie::OpsGenie { target: t, cfg: o.clone() }));
        }
        for (i, s) in r.scheduler.iter().enumerate() {
            let t = target(inline(&s.url), &s.http, s.timeout)?;
            add("scheduler", i, Arc::new(scheduler::Scheduler::build(&r.name, i, s, t)?));
            if let Some(rem) = &s.remediation {
                add("remediation", i, Arc::new(scheduler::remediation::build(&r.name, i, rem, ledger.clone())?));
            }
        }
    }
    Ok(out)
}

/// The receivers' rate limits (`argus.rate_limit`), applied to each of their integrations.
pub fn rate_limits(cfg: &Config) -> RateLimits {
    let mut out = RateLimits::new();
    for r in cfg.receivers.values() {
        if let Some(limit) = r.rate_limit {
            // A scheduler is a program, not a person: its messages and remediation are never held
            // back and merged.
            for i in r.integrations().into_iter().filter(|i| !matches!(i.kind, "scheduler" | "remediation")) {
                out.insert(recipient(&r.name, i.kind, i.index), limit);
            }
        }
    }
    out
}

/// An integration's notification-log name: receiver, kind, index.
pub fn recipient(receiver: &str, kind: &str, i: usize) -> String {
    format!("{receiver}/{kind}/{i}")
}

/// Milliseconds since the epoch, on the wall clock.
pub fn now_millis() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// The send stage's notifier: renders and writes to the outbox, then wakes the integration's worker.
pub struct OutboxNotifier {
    outbox: Arc<Outbox>,
    target: std::sync::RwLock<Target>,
}

/// The integrations a notifier renders for and the wake-ups of their workers.
#[derive(Clone)]
struct Target {
    integrations: Arc<Integrations>,
    wake: Arc<Wakers>,
}

impl OutboxNotifier {
    fn target(&self) -> Target {
        self.target.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Feeds `deliverer`'s workers from now on: a notifier handed out once (the in-process capacity
    /// path) follows a reload's new receivers this way.
    pub fn retarget(&self, deliverer: &Deliverer) {
        *self.target.write().unwrap_or_else(|e| e.into_inner()) =
            Target { integrations: deliverer.integrations.clone(), wake: deliverer.wake.clone() };
    }
}

/// One `Notify` per integration; a wake-up sent while its worker is busy is kept for it.
#[derive(Default)]
pub struct Wakers(BTreeMap<String, Notify>);

impl Wakers {
    fn for_integrations(i: &Integrations) -> Wakers {
        Wakers(i.keys().map(|k| (k.clone(), Notify::new())).collect())
    }

    fn wake(&self, integration: &str) {
        if let Some(n) = self.0.get(integration) {
            n.notify_one();
        }
    }
}

impl Notifier for OutboxNotifier {
    fn notify(&self, n: Notification) -> Result<(), NotifyError> {
        // A render error or an integration no longer configured is permanent; the outbox's own errors
        // keep its verdict (a busy database is retried).
        let failed = |e: DeliverError| NotifyError::integration(&n.receiver, e);
        let target = self.target();
        let integration = target
            .integrations
            .get(&n.integration)
            .ok_or_else(|| failed(DeliverError::Unknown(n.integration.clone())))?;
        let body = integration.render(&n).map_err(failed)?;
        let key = outbox::idempotency_key(&n);
        let message = serde_json::to_string(&n.message).map_err(|e| failed(DeliverError::Render(e.to_string())))?;
        let added = self
            .outbox
            .enqueue(&key, &n.receiver, &n.integration, &body, &message, now_millis())
            .map_err(|e| failed(e.into()))?;
        if !added {
            tracing::debug!(receiver = %n.receiver, integration = %n.integration, key, "Notification already in the outbox");
        }
        target.wake.wake(&n.integration);
        Ok(())
    }

    fn suppressed(&self) -> Option<Arc<crate::suppressed::Suppressed>> {
        Some(self.outbox.suppressed().clone())
    }

    /// Prunes delivered and failed outbox entries finished `retention` before `now`; pending ones stay.
    fn gc(&self, now: crate::time::Timestamp, retention: Duration) {
        let before = (now - retention).millis();
        match self.outbox.gc(before) {
            Ok(0) => {}
            Ok(n) => tracing::debug!(entries = n, "Finished outbox entries pruned"),
            Err(error) => tracing::warn!(%error, "Outbox pruning failed"),
        }
    }
}

/// The delivery workers of one outbox.
pub struct Deliverer {
    outbox: Arc<Outbox>,
    integrations: Arc<Integrations>,
    policy: RetryPolicy,
    wake: Arc<Wakers>,
    metrics: Arc<Metrics>,
    limits: RateLimits,
}

/// Rate limits by integration name: at most `max` messages in any `per`.
pub type RateLimits = BTreeMap<String, (u32, Duration)>;

impl Deliverer {
    pub fn new(outbox: Arc<Outbox>, integrations: Integrations, policy: RetryPolicy) -> Deliverer {
        let wake = Arc::new(Wakers::for_integrations(&integrations));
        Deliverer {
            outbox,
            integrations: Arc::new(integrations),
            policy,
            wake,
            metrics: Arc::default(),
            limits: RateLimits::new(),
        }
    }

    /// Storm control: integrations in `limits` send at most `max` messages per `per`, and what the
    /// limit holds is batched into one message.
    pub fn with_rate_limits(mut self, limits: RateLimits) -> Deliverer {
        self.limits = limits;
        self
    }

    /// Counts into `metrics`: those of the deliverer this one replaces on a reload, already registered.
    /// The outbox's held-back ledger is counted there too.
    pub fn with_metrics(mut self, metrics: Arc<Metrics>) -> Deliverer {
        self.outbox.suppressed().count_into(metrics.suppressed_records.clone(), metrics.suppressed_dropped.clone());
        self.metrics = metrics;
        self
    }

    /// The workers' counters, to register with the process's registry.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The notifier that feeds these workers.
    pub fn notifier(&self) -> OutboxNotifier {
        let target = Target { integrations: self.integrations.clone(), wake: self.wake.clone() };
        OutboxNotifier { outbox: self.outbox.clone(), target: std::sync::RwLock::new(target) }
    }

    /// Starts one worker per integration; they run until the returned tasks are aborted. Pending
    /// entries from before a restart are sent first; those of integrations no longer configured fail.
    pub fn spawn(&self) -> Vec<tokio::task::JoinHandle<()>> {
        match self.outbox.pending_integrations() {
            Ok(names) => {
                for name in names.iter().filter(|n| !self.integrations.contains_key(*n)) {
                    let error = DeliverError::Unknown(name.clone()).to_string();
                    match self.outbox.fail_pending(name, &error, now_millis()) {
                        Ok(n) => {
                            tracing::error!(integration = %name, entries = n, "Pending notifications failed: integration no longer configured")
                        }
                        Err(error) => tracing::warn!(integration = %name, %error, "Outbox update failed"),
                    }
                }
            }
            Err(error) => tracing::warn!(%error, "Outbox unreadable"),
        }
        self.integrations
            .iter()
            .map(|(name, integration)| {
                self.metrics.init(name);
                let w = Worker {
                    name: name.clone(),
                    integration: integration.clone(),
                    outbox: self.outbox.clone(),
                    policy: self.policy.clone(),
                    wake: self.wake.clone(),
                    metrics: self.metrics.clone(),
                    limit: self.limits.get(name).map(|&(max, per)| Window::new(max as usize, per)),
                };
                tokio::spawn(w.run())
            })
            .collect()
    }
}

struct Worker {
    name: String,
    integration: Arc<dyn Integration>,
    outbox: Arc<Outbox>,
    policy: RetryPolicy,
    wake: Arc<Wakers>,
    metrics: Arc<Metrics>,
    limit: Option<Window>,
}

/// At most this many held notifications go out as one message.
const MAX_BATCH: usize = 1000;

/// How long a worker sleeps when its outbox cannot be read.
const OUTBOX_RETRY: Duration = Duration::from_secs(1);

impl Worker {
    async fn run(self) {
        let Some(wake) = self.wake.0.get(&self.name) else { return };
        let mut held = false;
        loop {
            let entry = match self.outbox.next(&self.name) {
                Ok(e) => e,
                Err(error) => {
                    tracing::warn!(integration = %self.name, %error, "Outbox unreadable, will retry");
                    tokio::time::sleep(OUTBOX_RETRY).await;
                    continue;
                }
            };
            let Some(entry) = entry else {
                wake.notified().await;
                continue;
            };
            let wait = entry.next_attempt_at - now_millis();
            if wait > 0 {
                // A new entry queues behind this one, so only time can make progress here.
                tokio::time::sleep(Duration::from_millis(wait as u64)).await;
                continue;
            }
            let batch = match &self.limit {
                None => vec![entry],
                Some(limit) => {
                    let wait = limit.try_acquire(tokio::time::Instant::now());
                    if !wait.is_zero() {
                        // Held by the rate limit: what piles up meanwhile goes out as one message.
                        held = true;
                        self.hold_for_storm(limit, &entry, wait);
                        // A notification that comes meanwhile is recorded as held too.
                        tokio::select! {
                            _ = tokio::time::sleep(wait) => {}
                            _ = wake.notified() => {}
                        }
                        continue;
                    }
                    match std::mem::take(&mut held).then(|| self.outbox.due(&self.name, now_millis(), MAX_BATCH)) {
                        Some(Ok(b)) if !b.is_empty() => b,
                        _ => vec![entry],
                    }
                }
            };
            self.attempt(batch).await;
        }
    }

    /// Records the notifications waiting behind the rate limit (the first of them `entry`) as held
    /// back by storm control for `wait`.
    fn hold_for_storm(&self, limit: &Window, entry: &outbox::Entry, wait: Duration) {
        let now = now_millis();
        let mut waiting = self.outbox.due(&self.name, i64::MAX, MAX_BATCH).unwrap_or_default();
        if waiting.is_empty() {
            waiting.push(entry.clone());
        }
        held::storm(&self.outbox, &self.name, &waiting, limit, wait, now);
    }

    /// Sends one entry, or a batch of them as one message, and records the outcome for each.
    async fn attempt(&self, batch: Vec<outbox::Entry>) {
        let Some(first) = batch.first() else { return };
        let attempt = batch.iter().map(|e| e.attempts).max().unwrap_or(0) + 1;
        let (key, result) = match self.batch_body(&batch) {
            Ok((key, body)) => {
                let r = self.integration.send(&body, &key).await;
                (key, r)
            }
            Err(e) => (first.key.clone(), Err(e)),
        };
        let now = now_millis();
        let receiver = &first.receiver;
        let count = |outcome| self.metrics.count(receiver, &self.name, outcome);
        let n = batch.len();
        let oldest = batch.iter().map(|e| e.created_at).min().unwrap_or(now);
        let recorded: Result<(), OutboxError> = match result {
            Ok(()) => {
                count("delivered");
                tracing::debug!(%receiver, integration = %self.name, %key, attempt, batched = n, "Notification delivered");
                held::released(&self.outbox, &self.name, &batch, now);
                batch.iter().try_for_each(|e| {
                    self.outbox.finish(e.id, State::Delivered, None, now)?;
                    self.outbox.finished(e, State::Delivered);
                    Ok(())
                })
            }
            Err(error) if error.is_retryable() && now - oldest < self.policy.give_up_after.as_millis() as i64 => {
                count("retried");
                let wait = error.retry_after().unwrap_or_else(|| self.policy.backoff(attempt));
                tracing::warn!(%receiver, integration = %self.name, %key, attempt, batched = n, wait_ms = wait.as_millis() as u64, %error, "Notification failed, will retry");
                // Times are whole milliseconds and `now` was truncated: round both up so the next
                // attempt never comes sooner than `wait` after this failure. But never later than the
                // give-up time: a receiver's Retry-After of days would hold every later notification of
                // this integration behind this one.
                let wait_ms = i64::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(i64::MAX);
                let give_up_at =
                    oldest.saturating_add(i64::try_from(self.policy.give_up_after.as_millis()).unwrap_or(i64::MAX));
                let at = now.saturating_add(1).saturating_add(wait_ms).min(give_up_at.max(now + 1));
                held::failing(&self.outbox, &self.name, &batch, &error, attempt, Some(at), now);
                batch.iter().try_for_each(|e| self.outbox.retry_at(e.id, at, &error.to_string()))
            }
            Err(error) => {
                count("failed");
                tracing::error!(%receiver, integration = %self.name, %key, attempt, batched = n, retryable = error.is_retryable(), %error, "Notification failed, giving up");
                let reason = error.to_string();
                held::failing(&self.outbox, &self.name, &batch, &error, attempt, None, now);
                batch.iter().try_for_each(|e| {
                    self.outbox.finish(e.id, State::Failed, Some(&reason), now)?;
                    self.outbox.finished(e, State::Failed);
                    Ok(())
                })
            }
        };
        if let Err(error) = recorded {
            // The entries stay pending and are sent again: at least once, under the same key.
            tracing::warn!(integration = %self.name, %key, %error, "Outbox update failed");
            tokio::time::sleep(OUTBOX_RETRY).await;
        }
    }

    /// The key and body to send: an entry's own, or for a batch a key made of the members' keys and
    /// the body rendered from their merged messages.
    fn batch_body(&self, batch: &[outbox::Entry]) -> Result<(String, Vec<u8>), DeliverError> {
        if let [one] = batch {
            return Ok((one.key.clone(), one.body.clone()));
        }
        let messages = batch
            .iter()
            .map(|e| serde_json::from_str::<Message>(&e.message).map_err(|err| DeliverError::Render(err.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let last = batch.last().map(|e| e.created_at).unwrap_or(0);
        let message = batch::merge(messages).ok_or_else(|| DeliverError::Render("empty batch".into()))?;
        let receiver = batch[0].receiver.clone();
        let n = Notification {
            at: Timestamp::from_millis(last),
            previous: None,
            receiver,
            integration: self.name.clone(),
            message,
        };
        let keys: Vec<&str> = batch.iter().map(|e| e.key.as_str()).collect();
        Ok((outbox::batch_key(&keys), self.integration.render(&n)?))
    }
}

#[cfg(test)]
mod im_tests;
#[cfg(test)]
mod paging_tests;
#[cfg(test)]
mod tests;
