//! Polled sources collected in rounds: the sources that share an interval are read one after another
//! on one blocking thread at each tick, rather than each on a thread of its own.
//!
//! Why: a source's reading is short (host, disk and net read a few /proc files in well under a
//! millisecond), so on a profile most of the agent's CPU went to handing each one to a thread and
//! back: three sources cost about ten context switches a tick. One thread per round costs about three.
//!
//! A source still never holds back the others (a `statvfs` on a dead NFS mount, an InfiniBand
//! counter read that waits on the HCA's firmware). Each source has its own deadline, its `timeout`
//! counted from when it started. When one overruns it, the round stops waiting for it: it is reported
//! failed (`collection took longer than …`), the sources not yet read go on on a new thread, and the
//! late one keeps its thread until it returns. It then sits out the ticks that come while it is still
//! running, and what it read so late is dropped. A source that panics is gone; the others go on.

use crate::batch::Batch;
use crate::emit::{Emit, now_ms};
use crate::metrics::SourceLabel;
use crate::source::{Scheduled, Source, SourceError, Ticker};
use std::collections::{BTreeSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// One source's reading, as a round's thread hands it back.
struct Read {
    slot: usize,
    round: u64,
    /// None when the source panicked.
    source: Option<Box<dyn Source>>,
    batch: Batch,
    result: Result<(), SourceError>,
    now: i64,
    elapsed: Duration,
}

/// What a round's threads share with the loop: the sources still to read, when each read began, and
/// the readings not yet handed over. A thread hands over what it has read when its queue is empty or
/// a source overran (one wake-up of the loop per round); the loop takes them itself when a deadline
/// passes, so a hung source's thread never holds back the readings before it.
#[derive(Default)]
struct Queue {
    todo: Mutex<VecDeque<(usize, Box<dyn Source>)>>,
    started: Mutex<Vec<(usize, Instant)>>,
    done: Mutex<Vec<Read>>,
}

impl Queue {
    fn take_done(&self) -> Vec<Read> {
        std::mem::take(&mut *self.done.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

struct Slot {
    name: &'static str,
    timeout: Duration,
    /// None while a thread holds it, or once it is gone (unavailable, panicked).
    source: Option<Box<dyn Source>>,
    gone: bool,
}

/// Reads sources from `queue` until it is empty, or until one overruns its deadline (the loop has
/// moved on without this thread: it hands back what it read and stops).
fn read_queue(queue: &Queue, timeouts: &[Duration], round: u64, out: &mpsc::UnboundedSender<Vec<Read>>) {
    loop {
        let next = queue.todo.lock().unwrap_or_else(PoisonError::into_inner).pop_front();
        let Some((slot, mut source)) = next else { break };
        let started = Instant::now();
        queue.started.lock().unwrap_or_else(PoisonError::into_inner).push((slot, started));
        let now = now_ms();
        let mut batch = Batch::new();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| source.collect(now, &mut batch)));
        let elapsed = started.elapsed();
        let (source, result) = match outcome {
            Ok(result) => (Some(source), result),
            // What it left behind is not trusted: the source is dropped with its batch.
            Err(_) => (None, Err(SourceError::Backend("source panicked".into()))),
        };
        queue.done.lock().unwrap_or_else(PoisonError::into_inner).push(Read {
            slot,
            round,
            source,
            batch,
            result,
            now,
            elapsed,
        });
        if elapsed > timeouts[slot] {
            break;
        }
    }
    let reads = queue.take_done();
    if !reads.is_empty() {
        let _ = out.send(reads);
    }
}

// The rounds' loop: it needs `source`'s scheduling, so it lives in `agent`, not in `emit`.
impl Emit {
    /// Collects `sources` (all of one interval) on each tick until `stop`.
    pub(super) async fn run_rounds(self, sources: Vec<Scheduled>, interval: Duration, stop: watch::Receiver<bool>) {
        let timeouts: Arc<Vec<Duration>> = Arc::new(sources.iter().map(|s| s.timeout).collect());
        let mut slots: Vec<Slot> = sources
            .into_iter()
            .map(|s| Slot { name: s.source.name(), timeout: s.timeout, source: Some(s.source), gone: false })
            .collect();
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<Read>>();
        let mut ticker = Ticker::new(interval, stop);
        let mut round = 0u64;
        while ticker.next().await {
            round += 1;
            // Late sources that came back since the last round: read again from now on.
            while let Ok(reads) = rx.try_recv() {
                for r in reads {
                    self.late(&mut slots, r);
                }
            }
            let queue = Arc::new(Queue::default());
            let mut waiting = BTreeSet::new();
            {
                let mut todo = queue.todo.lock().unwrap_or_else(PoisonError::into_inner);
                for (i, slot) in slots.iter_mut().enumerate() {
                    if let Some(source) = slot.source.take() {
                        todo.push_back((i, source));
                        waiting.insert(i);
                    }
                }
            }
            if waiting.is_empty() {
                if slots.iter().all(|s| s.gone) {
                    return;
                }
                continue;
            }
            self.spawn_reader(&queue, &timeouts, round, &tx);
            while !waiting.is_empty() {
                let deadline = next_deadline(&queue, &slots, &waiting);
                tokio::select! {
                    got = rx.recv() => {
                        let Some(reads) = got else { return };
                        if !self.take(&mut slots, &mut waiting, round, reads).await {
                            return;
                        }
                    }
                    _ = tokio::time::sleep_until(deadline.into()) => {
                        // What was read before the source that holds its thread.
                        if !self.take(&mut slots, &mut waiting, round, queue.take_done()).await {
                            return;
                        }
                        let late = overdue(&queue, &slots, &waiting);
                        for i in late {
                            waiting.remove(&i);
                            let slot = &slots[i];
                            let error = SourceError::Backend(format!("collection took longer than {:?}", slot.timeout));
                            tracing::warn!(source = slot.name, %error, "Collection failed");
                            let mut batch = Batch::new();
                            self.report(slot.name, now_ms(), slot.timeout, false, &mut batch);
                            if !self.send(batch).await {
                                return;
                            }
                        }
                        let more = !queue.todo.lock().unwrap_or_else(PoisonError::into_inner).is_empty();
                        if more {
                            self.spawn_reader(&queue, &timeouts, round, &tx);
                        }
                    }
                }
            }
        }
    }

    fn spawn_reader(
        &self,
        queue: &Arc<Queue>,
        timeouts: &Arc<Vec<Duration>>,
        round: u64,
        tx: &mpsc::UnboundedSender<Vec<Read>>,
    ) {
        let (queue, timeouts, tx) = (queue.clone(), timeouts.clone(), tx.clone());
        tokio::task::spawn_blocking(move || read_queue(&queue, &timeouts, round, &tx));
    }

    /// Readings handed over: this round's that are awaited are reported and sent, the others are
    /// late. False once the sinks are gone.
    async fn take(&self, slots: &mut [Slot], waiting: &mut BTreeSet<usize>, round: u64, reads: Vec<Read>) -> bool {
        for r in reads {
            if r.round == round && waiting.remove(&r.slot) {
                if !self.on_time(slots, r).await {
                    return false;
                }
            } else {
                self.late(slots, r);
            }
        }
        true
    }

    /// A reading within its deadline: reported and sent. False once the sinks are gone.
    async fn on_time(&self, slots: &mut [Slot], r: Read) -> bool {
        let slot = &mut slots[r.slot];
        let Read { source, mut batch, result, now, elapsed, .. } = r;
        let ok = result.is_ok();
        let unavailable = matches!(result, Err(SourceError::Unavailable(_)));
        let panicked = source.is_none();
        if let Err(error) = &result {
            if unavailable {
                tracing::warn!(source = slot.name, %error, "Source unavailable on this machine; not polled again");
            } else if panicked {
                tracing::error!(source = slot.name, %error, "Source panicked, stopped");
            } else {
                tracing::warn!(source = slot.name, %error, "Collection failed");
            }
        }
        if panicked {
            let label = SourceLabel { source: slot.name.to_string() };
            self.metrics.source_success.get_or_create(&label).set(0);
            slot.gone = true;
            return true;
        }
        self.report(slot.name, now, elapsed, ok, &mut batch);
        if unavailable {
            slot.gone = true;
        } else {
            slot.source = source;
        }
        self.send(batch).await
    }

    /// A reading that came after its deadline: the source is back for the next round, what it read
    /// is dropped (it is late).
    fn late(&self, slots: &mut [Slot], r: Read) {
        let slot = &mut slots[r.slot];
        match r.source {
            Some(source) if !matches!(r.result, Err(SourceError::Unavailable(_))) => slot.source = Some(source),
            _ => slot.gone = true,
        }
        tracing::debug!(source = slot.name, elapsed = ?r.elapsed, "A late collection came back; its points are dropped");
    }
}

/// When the next of the `waiting` sources overruns: the earliest start plus timeout among those
/// started; while none has started (the blocking pool has not yet run the thread), a tenth of a second
/// from now, to look again.
fn next_deadline(queue: &Queue, slots: &[Slot], waiting: &BTreeSet<usize>) -> Instant {
    let started = queue.started.lock().unwrap_or_else(PoisonError::into_inner);
    started
        .iter()
        .filter(|(i, _)| waiting.contains(i))
        .map(|(i, at)| *at + slots[*i].timeout)
        .min()
        .unwrap_or_else(|| Instant::now() + Duration::from_millis(100))
}

/// The `waiting` sources past their deadline.
fn overdue(queue: &Queue, slots: &[Slot], waiting: &BTreeSet<usize>) -> Vec<usize> {
    let now = Instant::now();
    let started = queue.started.lock().unwrap_or_else(PoisonError::into_inner);
    started.iter().filter(|(i, at)| waiting.contains(i) && *at + slots[*i].timeout <= now).map(|(i, _)| *i).collect()
}

#[cfg(test)]
mod tests;
