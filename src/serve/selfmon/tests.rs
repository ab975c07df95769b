use super::*;
use argus_store::backend::{Embedded, QueryValue};
use argus_store::{Db, Options};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

/// Counters by label pairs.
type Counters = Family<Vec<(String, String)>, Counter>;

/// A registry with one plain counter and one whose labels clash with the target's.
fn registry() -> (Registry, Counter, Counters) {
    let mut r = Registry::default();
    let plain = Counter::default();
    r.register("argus_test_things", "Things", plain.clone());
    let fam = Counters::default();
    r.register("argus_test_jobs", "Jobs", fam.clone());
    (r, plain, fam)
}

fn scrape(registry: Registry, backend: Arc<dyn StoreBackend>) -> SelfScrape {
    let encode: Encode = Arc::new(move || {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).map_err(|e| e.to_string())?;
        Ok(out)
    });
    SelfScrape { encode, backend, instance: "127.0.0.1:9700".into(), every: Duration::from_secs(15) }
}

async fn instant(b: &dyn StoreBackend, q: &str, t: i64) -> Vec<(String, f64)> {
    match b.query_instant(q, t).await.unwrap() {
        QueryValue::Vector(v) => {
            let mut out: Vec<(String, f64)> = v
                .into_iter()
                .map(|(l, s)| (l.iter().map(|l| format!("{}={}", l.name, l.value)).collect::<Vec<_>>().join(","), s.v))
                .collect();
            out.sort_by(|a, b| a.0.cmp(&b.0));
            out
        }
        other => panic!("{q}: not a vector: {other:?}"),
    }
}

#[tokio::test]
async fn a_round_lands_under_job_argus_and_reads_back_through_promql() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path())).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, Default::default()));
    let (r, plain, fam) = registry();
    plain.inc_by(7);
    fam.get_or_create(&vec![("job".into(), "trainer".into()), ("instance".into(), "gpu-1".into())]).inc_by(3);
    let s = scrape(r, backend.clone());
    let t = argus_store::now_ms();
    let mut last = HashSet::new();
    backend.write(s.round(t, &mut last)).await.unwrap();
    expect_test::expect![[r#"
        [
            (
                "__name__=argus_test_things_total,instance=127.0.0.1:9700,job=argus",
                7.0,
            ),
        ]
    "#]]
    .assert_debug_eq(&instant(&*backend, r#"argus_test_things_total{job="argus"}"#, t).await);
    expect_test::expect![[r#"
        [
            (
                "__name__=argus_test_jobs_total,exported_instance=gpu-1,exported_job=trainer,instance=127.0.0.1:9700,job=argus",
                3.0,
            ),
        ]
    "#]]
    .assert_debug_eq(&instant(&*backend, "argus_test_jobs_total", t).await);
    // up, and the scrape's sample count: the two counters (the clashing one once).
    assert_eq!(instant(&*backend, r#"up{job="argus"}"#, t).await.first().map(|x| x.1), Some(1.0));
    assert_eq!(instant(&*backend, "scrape_samples_scraped", t).await.first().map(|x| x.1), Some(2.0));
    assert_eq!(last.len(), 5, "{last:?}");
}

#[tokio::test]
async fn a_series_gone_from_the_metrics_is_marked_stale() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path())).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, Default::default()));
    let (r, _plain, fam) = registry();
    fam.get_or_create(&vec![("kind".into(), "a".into())]).inc();
    let s = scrape(r, backend.clone());
    let t = argus_store::now_ms() - 20_000;
    let mut last = HashSet::new();
    backend.write(s.round(t, &mut last)).await.unwrap();
    assert_eq!(instant(&*backend, "argus_test_jobs_total", t + 10_000).await.len(), 1);
    fam.clear();
    fam.get_or_create(&vec![("kind".into(), "b".into())]).inc();
    backend.write(s.round(t + 15_000, &mut last)).await.unwrap();
    // Without the stale marker, kind="a" would stay visible for the five-minute lookback.
    let now = instant(&*backend, "argus_test_jobs_total", t + 16_000).await;
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(now[0].0.contains("kind=b"), "{now:?}");
}

#[tokio::test]
async fn unreadable_metrics_store_up_0() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path())).unwrap());
    let backend: Arc<dyn StoreBackend> = Arc::new(Embedded::new(db, Default::default()));
    let encode: Encode = Arc::new(|| Ok("argus_broken{ 1\n".to_string()));
    let s = SelfScrape { encode, backend: backend.clone(), instance: "a:1".into(), every: Duration::from_secs(1) };
    let t = argus_store::now_ms();
    backend.write(s.round(t, &mut HashSet::new())).await.unwrap();
    assert_eq!(instant(&*backend, "up", t).await, vec![("__name__=up,instance=a:1,job=argus".to_string(), 0.0)]);
}
