//! Group commit: one thread owns WAL writes. Requests queue their entries; the thread writes every
//! queued entry, fsyncs once (per the sync policy), applies the group to the head in WAL order, and
//! then acknowledges each request. Under load many requests share one fsync.
//!
//! Series records are written lazily, here: before the first entry since the last flush that uses a
//! series. A flush then leaves a WAL that names only the series written since, and the commit thread
//! being the only writer makes "a series record precedes every entry using it" hold by construction.

use super::{DbError, Shared};
use crate::head::Frozen;
use crate::wal::{RefSample, WalError, WalSync, encode_series};
use argus_model::Event;
use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where a request waits for its acknowledgement: every request of a refused group gets the one
/// WAL error that refused it.
type Ack = mpsc::SyncSender<Result<(), Arc<WalError>>>;
/// An entry written but not yet applied and acknowledged.
type Written = (Vec<RefSample>, Vec<Event>, Ack);

pub(crate) enum Job {
    Append {
        payload: Vec<u8>,
        samples: Vec<RefSample>,
        events: Vec<Event>,
        done: Ack,
    },
    /// Freezes the head and starts a new WAL segment holding every live series.
    Cut {
        done: mpsc::SyncSender<Result<(Arc<Frozen>, u64), WalError>>,
    },
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    stopping: bool,
}

pub(crate) struct Committer {
    queue: Arc<(Mutex<Queue>, Condvar)>,
    thread: Option<JoinHandle<()>>,
}

impl Committer {
    pub fn start(shared: Arc<Shared>) -> Committer {
        let queue: Arc<(Mutex<Queue>, Condvar)> = Arc::default();
        let q = queue.clone();
        let thread = std::thread::Builder::new().name("wal-commit".into()).spawn(move || run(&shared, &q)).ok();
        if thread.is_none() {
            tracing::error!("Could not start the WAL commit thread; writes will fail");
        }
        Committer { queue, thread }
    }

    pub fn submit(&self, job: Job) -> Result<(), DbError> {
        let (lock, cv) = &*self.queue;
        let mut q = lock.lock().map_err(|_| DbError::Closed)?;
        if q.stopping || self.thread.is_none() {
            return Err(DbError::Closed);
        }
        q.jobs.push_back(job);
        cv.notify_one();
        Ok(())
    }

    pub fn stop(mut self) {
        self.stop_inner();
    }

    fn stop_inner(&mut self) {
        if let Ok(mut q) = self.queue.0.lock() {
            q.stopping = true;
        }
        self.queue.1.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.stop_inner();
    }
}

fn run(shared: &Shared, queue: &(Mutex<Queue>, Condvar)) {
    let (lock, cv) = queue;
    let mut last_sync = Instant::now();
    let mut dirty = false;
    // Per series reference: the flush epoch in which its series record was last written.
    let mut logged: Vec<u64> = Vec::new();
    let mut epoch = 1u64;
    loop {
        let jobs: Vec<Job> = {
            let Ok(mut q) = lock.lock() else { return };
            while q.jobs.is_empty() && !q.stopping {
                let wait = match shared.opts.wal_sync {
                    WalSync::Interval(d) if dirty => d,
                    _ => Duration::from_secs(3600),
                };
                let Ok((g, _)) = cv.wait_timeout(q, wait) else { return };
                q = g;
                if dirty && q.jobs.is_empty() {
                    break;
                }
            }
            if q.jobs.is_empty() && q.stopping {
                let _ = shared.wal.lock().sync();
                return;
            }
            q.jobs.drain(..).collect()
        };
        if jobs.is_empty() {
            // Interval policy: the timer ran out with unsynced writes.
            if let Err(e) = sync(shared, &mut last_sync, &mut dirty, true) {
                tracing::error!(error = %e, "Periodic WAL sync failed");
            }
            continue;
        }
        let mut group: Vec<Written> = Vec::new();
        // A full segment is closed before the group, not in its middle: a refused group is then
        // rolled back out of the one segment it is in.
        let mut failed: Option<Arc<WalError>> = shared.wal.lock().cut_if_full().err().map(Arc::new);
        for job in jobs {
            match job {
                Job::Append { payload, samples, events, done } => {
                    let series = unlogged_series(shared, &samples, &mut logged, epoch);
                    let mut wal = shared.wal.lock();
                    if let Err(e) = series.map_or(Ok(()), |p| wal.append(&p)).and_then(|()| wal.append(&payload)) {
                        failed.get_or_insert(Arc::new(e));
                    }
                    drop(wal);
                    group.push((samples, events, done));
                    dirty = true;
                }
                Job::Cut { done } => {
                    if finish_group(shared, &mut group, &mut failed, &mut last_sync, &mut dirty) {
                        epoch += 1;
                    }
                    let _ = done.send(cut(shared));
                    // Older segments go once the frozen head is in blocks: every series must be
                    // named again in the new one before it is used.
                    epoch += 1;
                }
            }
        }
        if finish_group(shared, &mut group, &mut failed, &mut last_sync, &mut dirty) {
            // The series records of the refused entries are gone with them: name every series again.
            epoch += 1;
        }
    }
}

/// Syncs (per policy), applies and acknowledges the group; on a WAL error (a full disk) nothing is
/// applied, the group's entries are rolled back out of the WAL, and every request in the group gets
/// the error. Returns whether it failed.
fn finish_group(
    shared: &Shared,
    group: &mut Vec<Written>,
    failed: &mut Option<Arc<WalError>>,
    last_sync: &mut Instant,
    dirty: &mut bool,
) -> bool {
    if group.is_empty() && failed.is_none() {
        return false;
    }
    if failed.is_none()
        && let Err(e) = sync(shared, last_sync, dirty, false)
    {
        *failed = Some(Arc::new(e));
    }
    if let Some(e) = failed.take() {
        tracing::error!(error = %e, requests = group.len(), "WAL write failed; batches refused");
        if let Err(error) = shared.wal.lock().rollback() {
            tracing::error!(%error, "WAL rollback after a failed write failed");
        }
        for (_, _, done) in group.drain(..) {
            let _ = done.send(Err(e.clone()));
        }
        return true;
    }
    let mut stored = 0u64;
    let mut nevents = 0u64;
    {
        let mut head = shared.head.write();
        for (samples, events, _) in group.iter_mut() {
            head.append(samples);
            stored += samples.len() as u64;
            nevents += events.len() as u64;
            if !events.is_empty() {
                head.append_events(std::mem::take(events));
            }
        }
        shared.metrics.head_samples.set(head.sample_count() as i64);
        shared.metrics.head_series.set(head.series_count() as i64);
        shared.metrics.head_bytes.set(head.bytes() as i64);
        shared.metrics.head_chunk_file_bytes.set(head.chunk_file_bytes() as i64);
    }
    shared.metrics.samples_ingested.inc_by(stored);
    shared.metrics.events_ingested.inc_by(nevents);
    for (_, _, done) in group.drain(..) {
        let _ = done.send(Ok(()));
    }
    false
}

fn sync(shared: &Shared, last_sync: &mut Instant, dirty: &mut bool, timer: bool) -> Result<(), WalError> {
    let mut wal = shared.wal.lock();
    let due = match shared.opts.wal_sync {
        WalSync::Always => true,
        WalSync::Interval(d) => timer || last_sync.elapsed() >= d,
        WalSync::Never => false,
    };
    if due {
        let t = Instant::now();
        wal.sync()?;
        shared.metrics.wal_fsyncs.inc();
        shared.metrics.wal_fsync_seconds.inc_by(t.elapsed().as_secs_f64());
        *last_sync = Instant::now();
        *dirty = false;
    } else {
        wal.flush()?;
    }
    Ok(())
}

/// The series record payload for the references in `samples` not yet logged in this epoch, if any.
fn unlogged_series(shared: &Shared, samples: &[RefSample], logged: &mut Vec<u64>, epoch: u64) -> Option<Vec<u8>> {
    let mut refs = Vec::new();
    for s in samples {
        let i = s.r as usize;
        if i >= logged.len() {
            logged.resize(i + 1, 0);
        }
        if logged[i] != epoch {
            logged[i] = epoch;
            refs.push(s.r);
        }
    }
    if refs.is_empty() {
        return None;
    }
    let head = shared.head.read();
    let series: Vec<(u32, Arc<argus_model::Labels>)> =
        refs.into_iter().filter_map(|r| head.labels(r).map(|l| (r, l.clone()))).collect();
    drop(head);
    let mut payload = Vec::new();
    encode_series(&mut payload, series.iter().map(|(r, l)| (*r, &**l)));
    Some(payload)
}

/// Runs on the commit thread, so no entry can slip between the freeze and the new segment.
/// The WAL is cut first: when that fails (a full disk) the head is left as it was.
fn cut(shared: &Shared) -> Result<(Arc<Frozen>, u64), WalError> {
    let mut head = shared.head.write();
    let mut wal = shared.wal.lock();
    let segment = wal.cut()?;
    let frozen = head.freeze();
    Ok((frozen, segment))
}
