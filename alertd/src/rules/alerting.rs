//! One alerting rule's alerts and their states, as Prometheus keeps them (rules/alerting.go,
//! `AlertingRule.Eval`, `sendAlerts` and `Alert.needsSending`): an alert is pending from the first
//! evaluation that returns its series, firing once it has been active for `for`, kept firing
//! `keep_firing_for` after its series disappears, then inactive (resolved), and forgotten 15 minutes
//! after it resolved. Labels and annotations are expanded from the series' labels and value
//! (`$labels` holds `__name__` where the query kept it), and a template that fails expands to
//! `<error expanding template: …>`, as Prometheus does. Pure: evaluation results (and, for
//! templates that call `query`, a [`QueryFn`] answering from prefetched results) come in, series
//! and alerts to send go out.

use super::AlertingRule;
use super::template::{Data, NoQuery, Prefetched, QueryFn, Template, TemplateError, expand_for_alert};
use crate::alert::PostableAlert;
use crate::time::Timestamp;
use argus_model::{Labels, METRIC_NAME};
use std::collections::HashMap;
use std::time::Duration;

/// How long a resolved alert is still sent as resolved (Prometheus' `resolvedRetention`).
pub const RESOLVED_RETENTION: Duration = Duration::from_secs(15 * 60);
/// The series of pending and firing alerts.
pub const ALERTS: &str = "ALERTS";
/// The series holding each active alert's `activeAt` (Unix seconds), from which `for` is restored.
pub const ALERTS_FOR_STATE: &str = "ALERTS_FOR_STATE";

/// A query result's series and value, with annotations of its own (a forecast rule's crossing).
pub type Annotated = (Labels, f64, Vec<(String, String)>);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Inactive,
    Pending,
    Firing,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Inactive => "inactive",
            State::Pending => "pending",
            State::Firing => "firing",
        }
    }
}

/// One alert of a rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveAlert {
    /// The series' labels without `__name__`, the rule's labels, and `alertname`.
    pub labels: Labels,
    pub annotations: Labels,
    pub value: f64,
    pub state: State,
    pub active_at: Timestamp,
    pub fired_at: Option<Timestamp>,
    pub resolved_at: Option<Timestamp>,
    pub last_sent_at: Option<Timestamp>,
    pub keep_firing_since: Option<Timestamp>,
}

/// An alerting rule and its alerts, keyed by the labels of the series that raised them.
#[derive(Debug, Clone)]
pub struct AlertingState {
    pub rule: AlertingRule,
    active: HashMap<Labels, ActiveAlert>,
    /// `for` state has been restored (or there was none to restore): from now on the ALERTS series
    /// are written. Until then they would record a wrong `activeAt`.
    pub restored: bool,
    /// What templates see as `$externalLabels` and `$externalURL`.
    pub external_labels: Labels,
    pub external_url: String,
    /// The rule's label and annotation templates, parsed once (a rule file refuses templates
    /// that do not parse; a rule built in code with one expands to the error).
    labels: Vec<(String, Result<Template, TemplateError>)>,
    annotations: Vec<(String, Result<Template, TemplateError>)>,
}

impl AlertingState {
    pub fn new(rule: AlertingRule) -> Self {
        let parse = |m: &std::collections::BTreeMap<String, String>| {
            m.iter().map(|(k, v)| (k.clone(), Template::parse(v))).collect::<Vec<_>>()
        };
        AlertingState {
            labels: parse(&rule.labels),
            annotations: parse(&rule.annotations),
            rule,
            active: HashMap::new(),
            restored: false,
            external_labels: Labels::default(),
            external_url: String::new(),
        }
    }

    /// Whether a label or annotation template calls `query`.
    pub fn uses_query(&self) -> bool {
        self.labels.iter().chain(&self.annotations).any(|(_, t)| t.as_ref().is_ok_and(Template::uses_query))
    }

    /// Expands every template for every series of `result`, answering `query` from `answers`,
    /// and returns the queries `answers` could not answer yet; their answers may make further
    /// queries (a query built from another's result), so fetch them and call it again until it
    /// returns none.
    pub fn template_queries(&self, result: &[Annotated], answers: &mut Prefetched) -> Vec<String> {
        let name = format!("__alert_{}", self.rule.name);
        for (series, value, _) in result {
            let data = self.data(series, *value);
            for (_, t) in self.labels.iter().chain(&self.annotations) {
                if let Ok(t) = t {
                    // Failures here are reported by the evaluation that follows.
                    let _ = t.expand(&name, &data, answers);
                }
            }
        }
        answers.missing()
    }

    fn data<'a>(&'a self, series: &'a Labels, value: f64) -> Data<'a> {
        Data { labels: series, value, external_labels: &self.external_labels, external_url: &self.external_url }
    }

    /// The alerts, resolved ones kept for [`RESOLVED_RETENTION`] included, sorted by labels.
    pub fn alerts(&self) -> Vec<&ActiveAlert> {
        let mut v: Vec<&ActiveAlert> = self.active.values().collect();
        v.sort_by(|a, b| a.labels.cmp(&b.labels));
        v
    }

    /// Takes the result of the rule's query at `ts` and moves every alert on; returns the `ALERTS`
    /// and `ALERTS_FOR_STATE` samples of the active alerts (none until restored).
    /// Templates that call `query` get an error; see [`eval_with`](Self::eval_with).
    pub fn eval(&mut self, ts: Timestamp, result: &[(Labels, f64)]) -> Result<Vec<(Labels, f64)>, TemplateError> {
        let result: Vec<Annotated> = result.iter().map(|(l, v)| (l.clone(), *v, Vec::new())).collect();
        self.eval_with(ts, &result, &mut NoQuery)
    }

    /// `eval`, with annotations of each series' own (a forecast rule's crossing) added to the rule's.
    pub fn eval_annotated(&mut self, ts: Timestamp, result: &[Annotated]) -> Result<Vec<(Labels, f64)>, TemplateError> {
        self.eval_with(ts, result, &mut NoQuery)
    }

    /// `eval_annotated`, with `query` answering the templates' queries.
    pub fn eval_with(
        &mut self,
        ts: Timestamp,
        result: &[Annotated],
        query: &mut dyn QueryFn,
    ) -> Result<Vec<(Labels, f64)>, TemplateError> {
        let mut seen = std::collections::HashSet::with_capacity(result.len());
        for (series, value, own) in result {
            let labels = self.alert_labels(series, *value, query);
            let data = self.data(series, *value);
            let mut annotations = Vec::with_capacity(self.annotations.len() + own.len());
            for (k, t) in &self.annotations {
                annotations.push((k.clone(), expand_for_alert(&self.rule.name, t, &data, query)));
            }
            annotations.extend(own.iter().cloned());
            let annotations = Labels::from_pairs(annotations);
            seen.insert(series.clone());
            match self.active.get_mut(series) {
                Some(a) if a.state != State::Inactive => {
                    a.value = *value;
                    a.annotations = annotations;
                }
                _ => {
                    let a = ActiveAlert {
                        labels,
                        annotations,
                        value: *value,
                        state: State::Pending,
                        active_at: ts,
                        fired_at: None,
                        resolved_at: None,
                        last_sent_at: None,
                        keep_firing_since: None,
                    };
                    self.active.insert(series.clone(), a);
                }
            }
        }
        let mut out = Vec::new();
        let hold = self.rule.hold;
        let keep_for = self.rule.keep_firing_for;
        self.active.retain(|series, a| {
            if !seen.contains(series) {
                let mut keep_firing = false;
                if a.state == State::Firing && !keep_for.is_zero() {
                    let since = *a.keep_firing_since.get_or_insert(ts);
                    keep_firing = ts - since < keep_for;
                }
                if a.state == State::Pending || a.resolved_at.is_some_and(|r| ts - r > RESOLVED_RETENTION) {
                    return false;
                }
                if !keep_firing {
                    if a.state != State::Inactive {
                        a.state = State::Inactive;
                        a.resolved_at = Some(ts);
                    }
                    return true;
                }
            } else {
                a.keep_firing_since = None;
            }
            if a.state == State::Pending && ts - a.active_at >= hold {
                a.state = State::Firing;
                a.fired_at = Some(ts);
            }
            true
        });
        if self.restored {
            for a in self.alerts() {
                if a.state == State::Inactive {
                    continue;
                }
                let mut l = a.labels.clone();
                l.set(METRIC_NAME, ALERTS);
                l.set("alertstate", a.state.as_str());
                out.push((l, 1.0));
                let mut l = a.labels.clone();
                l.set(METRIC_NAME, ALERTS_FOR_STATE);
                out.push((l, a.active_at.0 as f64 / 1000.0));
            }
        }
        Ok(out)
    }

    /// The series' labels without `__name__`, with the rule's (templated) labels and `alertname`.
    fn alert_labels(&self, series: &Labels, value: f64, query: &mut dyn QueryFn) -> Labels {
        let mut labels = series.without_name();
        let data = self.data(series, value);
        for (k, t) in &self.labels {
            labels.set(k, &expand_for_alert(&self.rule.name, t, &data, query));
        }
        labels.set("alertname", &self.rule.name);
        labels
    }

    /// The alerts to send at `ts`: firing ones not sent for `resend_delay` and ones resolved since
    /// they were last sent. A firing alert ends at `ts + 4 × max(interval, resend_delay)`, so two
    /// missed evaluations or sends do not resolve it; a resolved one at its resolve time.
    pub fn to_send(&mut self, ts: Timestamp, resend_delay: Duration, interval: Duration) -> Vec<PostableAlert> {
        let valid_until = ts + 4 * interval.max(resend_delay);
        let mut out = Vec::new();
        for a in self.active.values_mut() {
            let needs = match a.state {
                State::Pending => false,
                _ if a.resolved_at.is_some_and(|r| a.last_sent_at.is_none_or(|s| r > s)) => true,
                _ => a.last_sent_at.is_none_or(|s| s + resend_delay < ts),
            };
            if !needs {
                continue;
            }
            a.last_sent_at = Some(ts);
            out.push(PostableAlert {
                labels: a.labels.iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
                annotations: a.annotations.iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
                starts_at: Some(a.fired_at.unwrap_or(a.active_at)),
                ends_at: Some(a.resolved_at.unwrap_or(valid_until)),
                generator_url: String::new(),
            });
        }
        out.sort_by(|a, b| a.labels.cmp(&b.labels));
        out
    }

    /// Prometheus' `RestoreForState` for one rule, run once after the first evaluation: each active
    /// alert takes its `activeAt` back from the last `ALERTS_FOR_STATE` sample of its labels
    /// (`for_state`: labels without `__name__`, last sample time and value). An outage while pending is
    /// not counted, and at least `grace` is left before it fires. Rules with `for` under `grace` are
    /// not restored.
    pub fn restore(&mut self, ts: Timestamp, for_state: &[(Labels, i64, f64)], grace: Duration) {
        self.restored = true;
        // Prometheus restores no rule whose `for` is shorter than the grace period: it would fire
        // within the grace period anyway.
        if self.rule.hold < grace {
            return;
        }
        for a in self.active.values_mut() {
            let Some((_, down_at, value)) = for_state.iter().find(|(l, _, _)| *l == a.labels) else {
                continue;
            };
            if !value.is_finite() {
                continue;
            }
            let down_at = Timestamp(*down_at);
            let mut restored = Timestamp((value * 1000.0) as i64);
            let spent = down_at - restored;
            let remaining = self.rule.hold.saturating_sub(spent);
            if remaining.is_zero() {
                // It had already been pending long enough: it fires now.
            } else if remaining < grace {
                restored = ts + grace - self.rule.hold;
            } else {
                restored = restored + (ts - down_at);
            }
            a.active_at = restored;
        }
    }
}

#[cfg(test)]
mod tests;
