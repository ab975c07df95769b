//! The backend on a thread of its own. An NVML call can hang for minutes on a GPU that is failing
//! (fallen off the bus, in recovery); run on the collection's thread it would hold the whole source,
//! kernel log included, until it returned. Here a collection waits for a reading only until its
//! deadline, then gives up on it and goes on: the call keeps its thread, and later collections do not
//! ask again until it has returned.

use super::backend::{BackendError, Device, GpuBackend, XidEvent};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

/// Why a collection has no devices.
#[derive(Debug)]
pub enum Failure {
    Backend(BackendError),
    /// The call asked for this long ago has not returned.
    Hung(Duration),
    /// The thread is gone (the backend panicked).
    Stopped,
}

/// What one call of the backend read.
struct Reading {
    devices: Result<Vec<Device>, BackendError>,
    xids: Vec<XidEvent>,
}

pub struct Worker {
    requests: Sender<()>,
    replies: Receiver<Reading>,
    /// When the call in flight was asked for; `None` when the thread is idle.
    asked: Option<Instant>,
}

impl Worker {
    /// Starts the thread; it ends when the worker is dropped and its call in flight, if any, returns.
    pub fn spawn(mut backend: Box<dyn GpuBackend>) -> std::io::Result<Worker> {
        let (requests, asks) = mpsc::channel::<()>();
        let (answers, replies) = mpsc::channel();
        std::thread::Builder::new().name("argus-gpu-backend".into()).spawn(move || {
            while asks.recv().is_ok() {
                let devices = backend.devices();
                let xids = backend.xid_events();
                if answers.send(Reading { devices, xids }).is_err() {
                    return;
                }
            }
        })?;
        Ok(Worker { requests, replies, asked: None })
    }

    /// Reads the devices, waiting at most `wait`, and the backend's Xid events. The Xids of a call that
    /// returned late are kept for the next reading (its devices are stale and dropped).
    pub fn read(&mut self, wait: Duration) -> (Result<Vec<Device>, Failure>, Vec<XidEvent>) {
        let mut xids = Vec::new();
        if let Some(asked) = self.asked {
            match self.replies.try_recv() {
                Ok(late) => {
                    self.asked = None;
                    xids = late.xids;
                }
                Err(TryRecvError::Empty) => return (Err(Failure::Hung(asked.elapsed())), xids),
                Err(TryRecvError::Disconnected) => return (Err(Failure::Stopped), xids),
            }
        }
        if self.requests.send(()).is_err() {
            return (Err(Failure::Stopped), xids);
        }
        let asked = Instant::now();
        self.asked = Some(asked);
        match self.replies.recv_timeout(wait) {
            Ok(r) => {
                self.asked = None;
                xids.extend(r.xids);
                (r.devices.map_err(Failure::Backend), xids)
            }
            Err(RecvTimeoutError::Timeout) => (Err(Failure::Hung(asked.elapsed())), xids),
            Err(RecvTimeoutError::Disconnected) => (Err(Failure::Stopped), xids),
        }
    }
}
