//! Replay: a recorded alert stream through the real pipeline in virtual time. Input lines are
//! `{"at": RFC3339, "alerts": [v2 alerts]}` in time order; each notification becomes an output line
//! `{"at", "receiver", "payload"}` with the webhook v4 body as payload.

use crate::alert::PostableAlert;
use crate::clock::{Clock, VirtualClock};
use crate::config::Config;
use crate::engine::Engine;
use crate::nflog::MemLog;
use crate::notify::{Notification, Recorder};
use crate::silence::MemSilences;
use crate::time::Timestamp;
use crate::webhook::Message;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputLine {
    at: Timestamp,
    alerts: Vec<PostableAlert>,
}

#[derive(Debug, Serialize)]
struct OutputLine<'a> {
    at: Timestamp,
    receiver: &'a str,
    payload: &'a Message,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("input line {line}: {reason}")]
    Input { line: usize, reason: String },
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

/// What a replay did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Summary {
    pub lines: usize,
    pub alerts: usize,
    pub notifications: usize,
}

/// After the last input, timers run on for at most this long (resolutions and last updates).
const DRAIN: Duration = Duration::from_secs(24 * 3600);

pub fn replay(cfg: Config, input: impl BufRead, mut output: impl Write) -> Result<Summary, ReplayError> {
    let recorder = Arc::new(Recorder::default());
    let mut engine = Engine::new(cfg, Arc::new(MemSilences::default()), Arc::new(MemLog::default()), recorder.clone());
    let clock = VirtualClock::default();
    let mut summary = Summary::default();
    let mut last: Option<Timestamp> = None;
    let write = |out: &mut dyn Write, ns: Vec<Notification>, s: &mut Summary| -> Result<(), ReplayError> {
        for n in ns {
            let line = OutputLine { at: n.at, receiver: &n.receiver, payload: &n.message };
            serde_json::to_writer(&mut *out, &line).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
            s.notifications += 1;
        }
        Ok(())
    };
    for (i, line) in input.lines().enumerate() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |reason: String| ReplayError::Input { line: i + 1, reason };
        let rec: InputLine = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        if last.is_some_and(|l| rec.at < l) {
            return Err(bad(format!("time goes backwards to {}", rec.at)));
        }
        last = Some(rec.at);
        clock.set(rec.at);
        summary.lines += 1;
        summary.alerts += rec.alerts.len();
        engine.advance(clock.now());
        engine.post(clock.now(), rec.alerts).map_err(|e| bad(e.to_string()))?;
        engine.advance(clock.now());
        write(&mut output, recorder.take(), &mut summary)?;
    }
    if let Some(end) = last {
        let stop = end + DRAIN;
        while let Some(t) = engine.next_deadline().filter(|&t| t <= stop) {
            clock.set(t);
            engine.advance(clock.now());
            write(&mut output, recorder.take(), &mut summary)?;
        }
    }
    output.flush()?;
    Ok(summary)
}
