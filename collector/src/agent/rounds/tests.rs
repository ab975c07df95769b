use super::*;
use crate::batch::{FieldValue, Point};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// A source that writes `t_v{src=NAME}` = 1; while `hang` is set it waits for it to clear and then
/// writes 99 (a reading that came too late); with `panic_on` it panics on that collection.
struct Test {
    name: &'static str,
    hang: Arc<AtomicBool>,
    calls: Arc<AtomicU32>,
    panic_on: Option<u32>,
    unavailable: bool,
}

impl Test {
    fn new(name: &'static str) -> Test {
        Test { name, hang: Arc::default(), calls: Arc::default(), panic_on: None, unavailable: false }
    }
}

impl Source for Test {
    fn name(&self) -> &'static str {
        self.name
    }

    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.panic_on == Some(call) {
            panic!("source {} fails on purpose", self.name);
        }
        if self.unavailable {
            return Err(SourceError::Unavailable("not on this machine".into()));
        }
        let mut v = 1.0;
        while self.hang.load(Ordering::SeqCst) {
            v = 99.0;
            std::thread::sleep(Duration::from_millis(5));
        }
        batch.push(Point::new("t", now).tag("src", self.name).field("v", v));
        Ok(())
    }
}

struct Release(Arc<AtomicBool>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

fn scheduled(source: Test, timeout_ms: u64) -> Scheduled {
    Scheduled {
        source: Box::new(source),
        interval: Duration::from_millis(100),
        timeout: Duration::from_millis(timeout_ms),
    }
}

/// What the rounds sent in `for_ms`: (source, value) of each data point, and (source, success) of
/// each self point, in order.
async fn gather(rx: &mut mpsc::Receiver<Batch>, for_ms: u64) -> (Vec<(String, f64)>, Vec<(String, f64)>) {
    let (mut data, mut selfs) = (Vec::new(), Vec::new());
    let end = tokio::time::Instant::now() + Duration::from_millis(for_ms);
    while let Ok(Some(b)) = tokio::time::timeout_at(end, rx.recv()).await {
        for p in b.points {
            let tag = |k: &str| p.tags.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
            let field = |k: &str| {
                p.fields.iter().find(|(n, _)| n == k).and_then(|(_, v)| match v {
                    FieldValue::Num(x) => Some(*x),
                    FieldValue::Text(_) => None,
                })
            };
            match p.measurement.as_ref() {
                "t" => data.push((tag("src"), field("v").unwrap())),
                _ => selfs.push((tag("source"), field("source_success").unwrap())),
            }
        }
    }
    (data, selfs)
}

fn count(pairs: &[(String, f64)], name: &str, v: f64) -> usize {
    pairs.iter().filter(|(n, x)| n == name && *x == v).count()
}

fn start(sources: Vec<Scheduled>) -> (mpsc::Receiver<Batch>, watch::Sender<bool>) {
    let (emit, rx) = Emit::channel(Vec::new(), 1024);
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(emit.run_rounds(sources, Duration::from_millis(100), stop_rx));
    (rx, stop_tx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn every_source_of_an_interval_is_read_each_round_on_one_thread() {
    let (a, b, c) = (Test::new("a"), Test::new("b"), Test::new("c"));
    let calls = [a.calls.clone(), b.calls.clone(), c.calls.clone()];
    let (mut rx, _stop) = start(vec![scheduled(a, 1000), scheduled(b, 1000), scheduled(c, 1000)]);
    let (data, selfs) = gather(&mut rx, 750).await;
    for name in ["a", "b", "c"] {
        assert!(count(&data, name, 1.0) >= 3, "{name}: {data:?}");
        assert_eq!(count(&data, name, 1.0), count(&selfs, name, 1.0), "{selfs:?}");
    }
    // In order within a round: the three sources share its thread.
    let names: Vec<&str> = data.iter().take(3).map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let n: Vec<u32> = calls.iter().map(|c| c.load(Ordering::SeqCst)).collect();
    assert!(n.iter().all(|&x| x == n[0] || x + 1 == n[0]), "{n:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_hung_source_holds_back_neither_the_others_nor_later_rounds() {
    let (a, b, c) = (Test::new("a"), Test::new("b"), Test::new("c"));
    let hang = b.hang.clone();
    hang.store(true, Ordering::SeqCst);
    // Lets the hung source go if an assertion fails, so the runtime can shut down.
    let _release = Release(hang.clone());
    // b comes between a and c on the round's thread, and hangs past its 150 ms.
    let (mut rx, _stop) = start(vec![scheduled(a, 1000), scheduled(b, 150), scheduled(c, 1000)]);
    let (data, selfs) = gather(&mut rx, 900).await;
    assert!(count(&data, "a", 1.0) >= 3 && count(&data, "c", 1.0) >= 3, "{data:?}");
    assert_eq!(count(&data, "b", 1.0) + count(&data, "b", 99.0), 0, "{data:?}");
    // Reported failed once, at its deadline; then it sits out the ticks while it still runs.
    assert_eq!(count(&selfs, "b", 0.0), 1, "{selfs:?}");
    hang.store(false, Ordering::SeqCst);
    let (data, selfs) = gather(&mut rx, 700).await;
    // Back: what it read late (99) is dropped, its next readings are written.
    assert_eq!(count(&data, "b", 99.0), 0, "{data:?}");
    assert!(count(&data, "b", 1.0) >= 2, "{data:?}");
    assert!(count(&selfs, "b", 1.0) >= 2, "{selfs:?}");
    assert!(count(&data, "a", 1.0) >= 3 && count(&data, "c", 1.0) >= 3, "{data:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_source_that_panics_is_gone_and_one_unavailable_is_read_once() {
    let mut a = Test::new("a");
    a.panic_on = Some(2);
    let mut b = Test::new("b");
    b.unavailable = true;
    let b_calls = b.calls.clone();
    let c = Test::new("c");
    let (mut rx, _stop) = start(vec![scheduled(a, 1000), scheduled(b, 1000), scheduled(c, 1000)]);
    let (data, selfs) = gather(&mut rx, 750).await;
    assert_eq!(count(&data, "a", 1.0), 1, "{data:?}");
    assert_eq!(b_calls.load(Ordering::SeqCst), 1);
    assert_eq!(count(&selfs, "b", 0.0), 1, "{selfs:?}");
    assert!(count(&data, "c", 1.0) >= 3, "{data:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn the_rounds_end_when_every_source_is_gone() {
    let mut a = Test::new("a");
    a.unavailable = true;
    let (emit, _rx) = Emit::channel(Vec::new(), 16);
    let (_stop_tx, stop_rx) = watch::channel(false);
    let run = emit.run_rounds(vec![scheduled(a, 1000)], Duration::from_millis(50), stop_rx);
    tokio::time::timeout(Duration::from_secs(5), run).await.expect("the loop returns once no source is left");
}
