use super::*;
use crate::{Db, Options};
use argus_model::Sample;

fn params(pairs: &[(&str, &str)]) -> Params {
    Params(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

/// A store holding six known series: three `gpu_util` (two hosts, one of them with two GPUs), two
/// `up`, one written 26 hours ago only.
fn store(now: i64) -> (tempfile::TempDir, Arc<State>) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = Options::new(dir.path());
    opts.retention = std::time::Duration::from_secs(7 * 86_400);
    let db = Arc::new(Db::open(opts).unwrap());
    let s = |pairs: &[(&str, &str)], t: i64| (Labels::from_pairs(pairs.iter().copied()), vec![Sample::new(t, 1.0)]);
    db.write_series(&[
        s(&[("__name__", "gpu_util"), ("host", "a"), ("gpu", "0")], now - 60_000),
        s(&[("__name__", "gpu_util"), ("host", "a"), ("gpu", "1")], now - 60_000),
        s(&[("__name__", "gpu_util"), ("host", "bb"), ("gpu", "0")], now - 60_000),
        s(&[("__name__", "up"), ("job", "argus"), ("instance", "x:9700")], now - 30_000),
        s(&[("__name__", "up"), ("job", "node"), ("instance", "a:9100")], now - 30_000),
        s(&[("__name__", "old"), ("host", "a")], now - 26 * 3_600_000),
    ])
    .unwrap();
    (dir, State::new(db, Default::default(), Default::default()))
}

async fn answer(state: &Arc<State>, p: &[(&str, &str)]) -> (u16, J) {
    let r = tsdb(S(state.clone()), None, params(p)).await;
    let status = r.status().as_u16();
    let body = axum::body::to_bytes(r.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn counts_the_recent_series_as_prometheus_and_victoriametrics_name_them() {
    let now = crate::now_ms();
    let (_dir, state) = store(now);
    let (status, mut body) = answer(&state, &[("limit", "3")]).await;
    assert_eq!(status, 200, "{body}");
    // Everything is in the head, the old series too: its span is the head's, and its six open
    // chunks (one sample each) count whole.
    let head = body["data"]["headStats"].as_object_mut().unwrap();
    assert_eq!(head.remove("minTime"), Some(json!(now - 26 * 3_600_000)));
    assert_eq!(head.remove("maxTime"), Some(json!(now - 30_000)));
    expect_test::expect![[r#"
        {
          "headStats": {
            "chunkCount": 6,
            "numLabelPairs": 10,
            "numSeries": 5
          },
          "labelValueCountByLabelName": [
            {
              "name": "__name__",
              "value": 2
            },
            {
              "name": "gpu",
              "value": 2
            },
            {
              "name": "host",
              "value": 2
            }
          ],
          "memoryInBytesByLabelName": [
            {
              "name": "instance",
              "value": 12
            },
            {
              "name": "__name__",
              "value": 10
            },
            {
              "name": "job",
              "value": 9
            }
          ],
          "seriesCountByLabelName": [
            {
              "name": "__name__",
              "value": 5
            },
            {
              "name": "gpu",
              "value": 3
            },
            {
              "name": "host",
              "value": 3
            }
          ],
          "seriesCountByLabelValuePair": [
            {
              "name": "__name__=gpu_util",
              "value": 3
            },
            {
              "name": "__name__=up",
              "value": 2
            },
            {
              "name": "gpu=0",
              "value": 2
            }
          ],
          "seriesCountByMetricName": [
            {
              "name": "gpu_util",
              "value": 3
            },
            {
              "name": "up",
              "value": 2
            }
          ],
          "totalLabelValuePairs": 15,
          "totalSeries": 5
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&body["data"]).unwrap());
}

#[tokio::test]
async fn match_date_top_n_and_focus_label_narrow_the_count() {
    let now = crate::now_ms();
    let (_dir, state) = store(now);
    let (_, b) = answer(&state, &[("match[]", "gpu_util"), ("focusLabel", "host"), ("topN", "1")]).await;
    assert_eq!(b["data"]["totalSeries"], 3, "{b}");
    assert_eq!(b["data"]["seriesCountByFocusLabelValue"], json!([{ "name": "a", "value": 2 }]), "{b}");
    assert_eq!(b["data"]["seriesCountByMetricName"], json!([{ "name": "gpu_util", "value": 3 }]), "{b}");
    // Two selectors: their union.
    let (_, b) = answer(&state, &[("match[]", "{host=\"a\"}"), ("match[]", "up{job=\"node\"}")]).await;
    assert_eq!(b["data"]["headStats"]["numSeries"], 3, "{b}");
    // The day of the old series: it alone, unless it shares the day with the others.
    let day = |t: i64| humantime::format_rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_millis(t as u64));
    let old_day = day(now - 26 * 3_600_000).to_string()[..10].to_string();
    let (_, b) = answer(&state, &[("date", &old_day)]).await;
    let names: Vec<&str> =
        b["data"]["seriesCountByMetricName"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"old"), "{b}");
    let same_day = day(now - 60_000).to_string()[..10] == old_day;
    assert_eq!(names.len(), if same_day { 3 } else { 1 }, "{b}");
}

#[tokio::test]
async fn bad_parameters_are_bad_data() {
    let (_dir, state) = store(crate::now_ms());
    for (p, want) in [
        (("limit", "0"), "invalid parameter \"limit\": \"0\" is not a positive number"),
        (("topN", "x"), "invalid parameter \"topN\": \"x\" is not a positive number"),
        (("date", "2026-13-01"), "invalid parameter \"date\": \"2026-13-01\" is not a YYYY-MM-DD date"),
        (("date", "20261201"), "invalid parameter \"date\": \"20261201\" is not a YYYY-MM-DD date"),
        (("match[]", "{"), "invalid parameter \"match[]\""),
    ] {
        let (status, b) = answer(&state, &[p]).await;
        assert_eq!((status, b["errorType"].as_str()), (400, Some("bad_data")), "{p:?}: {b}");
        assert!(b["error"].as_str().unwrap().starts_with(want), "{p:?}: {b}");
    }
}

#[tokio::test]
async fn head_stats_count_the_chunks_and_times_of_the_blocks_and_the_head() {
    let now = crate::now_ms();
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(Options::new(dir.path())).unwrap());
    let at = |host: &str, ts: &[i64]| {
        let l = Labels::from_pairs([("__name__", "gpu_util"), ("host", host)]);
        (l, ts.iter().map(|&t| Sample::new(t, 1.0)).collect::<Vec<_>>())
    };
    // Three series of one chunk each, in one block (one sample time, so no block boundary between).
    db.write_series(&[at("a", &[now - 90_000]), at("b", &[now - 90_000]), at("c", &[now - 90_000])]).unwrap();
    db.flush().unwrap();
    // Then in the head two samples of a (one open chunk) and 250 of b, one a second (chunks of 120,
    // 120 and 10): four head chunks.
    let b_times: Vec<i64> = (0..250).map(|i| now - 300_000 + i * 1000).collect();
    db.write_series(&[at("a", &[now - 20_000, now - 10_000]), at("b", &b_times)]).unwrap();
    let state = State::new(db, Default::default(), Default::default());
    let (status, b) = answer(&state, &[]).await;
    assert_eq!(status, 200, "{b}");
    assert_eq!(
        b["data"]["headStats"],
        json!({ "numSeries": 3, "numLabelPairs": 4, "chunkCount": 3 + 4, "minTime": now - 300_000, "maxTime": now - 10_000 })
    );
    // A day without data: nothing, and no times.
    let (_, b) = answer(&state, &[("date", "2001-01-01")]).await;
    assert_eq!(
        b["data"]["headStats"],
        json!({ "numSeries": 0, "numLabelPairs": 0, "chunkCount": 0, "minTime": null, "maxTime": null })
    );
}
