use super::*;
use crate::query::{self, QueryLimits, Value};
use crate::wal::WalSync;
use crate::{Db, Options};
use argus_model::{Labels, Sample};
use std::time::Duration;

const T0: i64 = 1_700_000_000_000;
const MIB: u64 = 1 << 20;

/// Ten series `m{i}` of 360 samples, one every 10 s from T0: a range query over them at 10 s holds
/// 10 × (200 + 360 × 16) = 59,600 bytes.
fn db(dir: &std::path::Path) -> Db {
    let mut o = Options::new(dir);
    o.retention = Duration::from_secs(200 * 365 * 86_400);
    o.wal_sync = WalSync::Never;
    let db = Db::open(o).expect("open db");
    let series: Vec<(Labels, Vec<Sample>)> = (0..10)
        .map(|i| {
            let l = Labels::from_pairs([("__name__", "m".to_string()), ("i", format!("{i}"))]);
            (l, (0..360).map(|k| Sample::new(T0 + k * 10_000, (i * k) as f64)).collect())
        })
        .collect();
    db.write_series(&series).expect("write");
    db
}

const QUERY_BYTES: u64 = 10 * (SERIES_BYTES + 360 * SAMPLE_BYTES);

fn limits(budget: &Arc<MemoryBudget>, caller: Caller) -> QueryLimits {
    QueryLimits { memory: QueryMemory::new(budget.clone(), caller), ..QueryLimits::default() }
}

fn range(db: &Db, q: &str, limits: &QueryLimits) -> Result<Value, QueryError> {
    query::range(db, q, T0, T0 + 359 * 10_000, 10_000, limits)
}

fn points(v: &Value) -> usize {
    match v {
        Value::Matrix(m) => m.iter().map(|(_, s)| s.len()).sum(),
        other => panic!("not a matrix: {other:?}"),
    }
}

#[test]
fn sizes_read_as_operators_write_them() {
    let cases = [(0, "0 B"), (1023, "1023 B"), (1536, "1.5 KiB"), (312 * MIB, "312 MiB"), (1 << 30, "1 GiB")];
    for (bytes, want) in cases {
        assert_eq!(Size(bytes).to_string(), want, "{bytes}");
    }
    assert_eq!(Size(890 * MIB + 300 * 1024).to_string(), "890 MiB", "over 100 in the unit: no fraction");
}

#[test]
fn a_query_past_the_budget_is_told_what_it_needs_and_what_others_hold() {
    let budget = MemoryBudget::new(1 << 30);
    let rules = QueryMemory::new(budget.clone(), Caller::Rules);
    let (a, b) = (rules.reserve(), rules.reserve());
    a.grow(500 * MIB).unwrap();
    b.grow(390 * MIB).unwrap();
    let c = rules.reserve();
    c.grow(100 * MIB).unwrap();
    let e = c.grow(212 * MIB).unwrap_err();
    assert_eq!(
        e.to_string(),
        "query needs 312 MiB of the 1 GiB shared query memory (max_query_memory); 890 MiB in use by 2 other queries"
    );
    assert!(matches!(e, QueryError::Execution(_)));
    assert_eq!((c.held(), budget.in_use()), (100 * MIB, 990 * MIB), "a refused step takes nothing");
    let http = QueryMemory::new(budget.clone(), Caller::Http).reserve();
    let e = http.grow(MIB).unwrap_err().to_string();
    assert_eq!(
        e,
        "query needs 1 MiB of the 1 GiB shared query memory (max_query_memory); 990 MiB in use by 3 other queries, \
         256 MiB kept for rule evaluation"
    );
    drop((a, b, c, http));
    assert_eq!(budget.in_use(), 0);
    assert_eq!((budget.refusals(Caller::Rules), budget.refusals(Caller::Http)), (1, 1));
}

#[test]
fn rules_keep_their_share_while_other_queries_hold_the_rest() {
    let d = tempfile::tempdir().unwrap();
    let db = db(d.path());
    // Room for the query twice over, of which other queries may use three quarters.
    let budget = MemoryBudget::new(2 * QUERY_BYTES);
    let dashboards = QueryMemory::new(budget.clone(), Caller::Http).reserve();
    dashboards.grow(budget.limit() * 3 / 4).unwrap();
    let e = range(&db, "m", &limits(&budget, Caller::Http)).unwrap_err();
    assert!(e.to_string().contains("shared query memory (max_query_memory)"), "{e}");
    let e = range(&db, "m", &limits(&budget, Caller::Internal)).unwrap_err();
    assert!(e.to_string().contains("kept for rule evaluation"), "{e}");
    // A rule over half the series fits in the rules' quarter.
    let v = range(&db, "m{i=~\"[0-4]\"}", &limits(&budget, Caller::Rules)).unwrap();
    assert_eq!(points(&v), 5 * 360);
    assert_eq!(budget.in_use(), budget.limit() * 3 / 4, "the rule gave back what it took");
    assert_eq!(
        [Caller::Http, Caller::Rules, Caller::Internal].map(|c| budget.refusals(c)),
        [1, 0, 1],
        "refusals by caller"
    );
}

#[test]
fn a_query_that_does_not_fit_beside_another_is_refused_whole_and_gives_back_its_share() {
    let d = tempfile::tempdir().unwrap();
    let db = db(d.path());
    // Each fits alone (the rules' quarter aside), two do not.
    let budget = MemoryBudget::new(QUERY_BYTES * 4 / 3 + 4 * SERIES_BYTES);
    let l = limits(&budget, Caller::Http);
    let first = l.memory.reserve();
    first.grow(QUERY_BYTES / 2).unwrap();
    let e = range(&db, "m", &l).unwrap_err();
    assert!(matches!(e, QueryError::Execution(_)), "{e:?}");
    assert!(e.to_string().starts_with("query needs "), "{e}");
    assert!(e.to_string().contains("in use by 1 other query"), "{e}");
    assert_eq!(budget.in_use(), QUERY_BYTES / 2, "the refused query gave back its part");
    // An evaluated expression over the same series, refused the same way.
    let e = range(&db, "m * 2", &l).unwrap_err();
    assert!(e.to_string().contains("max_query_memory"), "{e}");
    drop(first);
    assert_eq!(budget.in_use(), 0);
    // Alone it is answered in full, and gives everything back.
    let v = range(&db, "m", &l).unwrap();
    assert_eq!(points(&v), 3600);
    assert_eq!(budget.in_use(), 0);
}

#[test]
fn operands_and_results_are_counted_while_they_live_together() {
    let d = tempfile::tempdir().unwrap();
    let db = db(d.path());
    // `m * 2` holds the selector's rows, the scalar's steps and the product's rows for a moment.
    let fits = |limit: u64, q: &str| {
        let budget = MemoryBudget::new(limit);
        let r = range(&db, q, &limits(&budget, Caller::Rules)).map(|v| points(&v));
        assert_eq!(budget.in_use(), 0, "{q}: everything given back");
        r.is_ok()
    };
    assert!(fits(QUERY_BYTES, "m"));
    assert!(!fits(QUERY_BYTES - 1, "m"));
    let product = 2 * QUERY_BYTES + 360 * 8;
    assert!(fits(product, "m * 2"));
    assert!(!fits(product - 1, "m * 2"));
    // An aggregation lets each window of series go once folded, before its own rows are counted.
    assert!(fits(QUERY_BYTES, "sum(m)"));
    assert!(!fits(QUERY_BYTES - 1, "sum(m)"));
}

#[test]
fn a_panicking_query_gives_its_share_back() {
    let budget = MemoryBudget::new(MIB);
    let memory = QueryMemory::new(budget.clone(), Caller::Http);
    // As a query on a blocking thread of the server panics.
    let on_thread = memory.clone();
    let r = std::thread::spawn(move || {
        let q = on_thread.reserve();
        q.grow(MIB / 2).unwrap();
        panic!("evaluation failed");
    })
    .join();
    assert!(r.is_err());
    assert_eq!(budget.in_use(), 0);
    memory.reserve().grow(budget.limit() * 3 / 4).unwrap();
}

#[test]
fn the_budget_is_exported_as_metrics() {
    let budget = MemoryBudget::new(64 * MIB);
    let mut registry = Registry::default();
    budget.register(&mut registry);
    let q = QueryMemory::new(budget.clone(), Caller::Internal).reserve();
    q.grow(3 * MIB).unwrap();
    assert!(q.grow(60 * MIB).is_err());
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "argus_query_memory_bytes 3145728",
            "argus_query_memory_limit_bytes 67108864",
            r#"argus_query_memory_refusals_total{caller="http"} 0"#,
            r#"argus_query_memory_refusals_total{caller="internal"} 1"#,
            r#"argus_query_memory_refusals_total{caller="rules"} 0"#,
        ]
    );
}

#[test]
fn a_query_refused_on_several_threads_at_once_is_one_refusal() {
    let budget = MemoryBudget::new(4 * MIB);
    let memory = QueryMemory::new(budget.clone(), Caller::Http);
    let other = memory.reserve();
    other.grow(3 * MIB).unwrap();
    // A read split among threads: each grows the query's one reservation, and each is refused
    // before any of them has stopped the others.
    let query = memory.reserve();
    let threads = 4;
    let start = std::sync::Barrier::new(threads);
    let refused: usize = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    start.wait();
                    (0..10).filter(|_| query.grow(MIB / 8).is_err()).count()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(refused, threads * 10, "every step refused");
    assert_eq!(budget.refusals(Caller::Http), 1, "one query, one refusal");
    assert_eq!((query.held(), budget.in_use()), (0, 3 * MIB));
    // The next query refused is the second.
    assert!(memory.reserve().grow(MIB).is_err());
    assert_eq!(budget.refusals(Caller::Http), 2);
}

#[test]
fn a_parallel_read_past_the_budget_is_one_refusal() {
    let d = tempfile::tempdir().unwrap();
    let db = db(d.path());
    // The ten series again, under 64 other ones: enough chunks that the read is split among threads
    // where the machine has several cores.
    let more: Vec<(Labels, Vec<Sample>)> = (0..64)
        .map(|i| {
            let l = Labels::from_pairs([("__name__", "m".to_string()), ("i", format!("x{i}"))]);
            (l, (0..360).map(|k| Sample::new(T0 + k * 10_000, k as f64)).collect())
        })
        .collect();
    db.write_series(&more).unwrap();
    let budget = MemoryBudget::new(QUERY_BYTES);
    let l = limits(&budget, Caller::Http);
    for (i, q) in ["m", "rate(m[1m])", "m * 2"].into_iter().enumerate() {
        assert!(range(&db, q, &l).is_err(), "{q}");
        assert_eq!(budget.refusals(Caller::Http), i as u64 + 1, "{q}");
        assert_eq!(budget.in_use(), 0, "{q}");
    }
}
