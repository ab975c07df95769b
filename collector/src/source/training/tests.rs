use super::*;
use crate::batch::FieldValue;
use crate::source::golden;
use std::path::Path;

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn log(path: &Path, job: &str) -> TrainingLog {
    TrainingLog { path: path.to_path_buf(), job: job.into(), rank: "0".into() }
}

/// The three fixture logs written after the collector started, read in one round each.
pub(crate) fn logs_batch() -> Batch {
    let dir = tempfile::tempdir().unwrap();
    let files = ["hf-trainer", "lightning", "kv"].map(|n| dir.path().join(format!("{n}.log")));
    std::fs::write(&files[0], "history before the start is not read {'loss': 9.9, 'epoch': 0.0}\n").unwrap();
    let mut set =
        LogSet::new(&files.iter().map(|f| log(f, f.file_stem().unwrap().to_str().unwrap())).collect::<Vec<_>>());
    let mut jobs = Jobs::default();
    let mut b = Batch::new();
    assert!(set.read(&mut jobs, 1_000, &mut b));
    assert!(b.is_empty(), "nothing new yet");
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        append(f, &std::fs::read_to_string(golden::fixture(&format!("logs/{name}"))).unwrap());
    }
    assert!(set.read(&mut jobs, 10_000, &mut b));
    b
}

#[test]
fn golden_progress_from_trainer_logs() {
    let mut b = logs_batch();
    b.stamp(&[]);
    golden::check("training-logs", &b);
}

#[test]
fn a_bar_drawn_over_several_rounds_is_read_as_it_grows() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("run.log");
    let mut set = LogSet::new(&[log(&f, "run")]);
    let mut jobs = Jobs::default();
    let steps = |b: &Batch| -> Vec<String> {
        b.to_exposition().lines().filter(|l| l.starts_with("train_step{")).map(String::from).collect()
    };
    append(
        &f,
        "\r  1%|          | 10/1000 [00:27<44:33,  2.70s/it]\r  1%|          | 11/1000 [00:29<44:30,  2.70s/it]",
    );
    let mut b = Batch::new();
    set.read(&mut jobs, 1_000, &mut b);
    assert_eq!(steps(&b), vec![r#"train_step{job="run", rank="0"} 10"#], "the drawing in progress waits for the next");
    append(&f, "\r  1%|          | 12/1000 [00:32<44:28,  2.70s/it]\r");
    let mut b = Batch::new();
    set.read(&mut jobs, 2_000, &mut b);
    assert_eq!(steps(&b), vec![r#"train_step{job="run", rank="0"} 12"#], "of two drawings only the last counts");
}

#[test]
fn a_job_without_step_progress_is_stalled() {
    let mut jobs = Jobs::default();
    let p = |step: f64| Progress { step: Some(step), total_steps: Some(1000.0), ..Default::default() };
    let stall = Duration::from_secs(600);
    let forget = Duration::from_secs(3600);
    jobs.observe("llama", "0", &p(10.0), None, 0);
    jobs.observe("llama", "1", &p(10.0), None, 0);
    // Rank 1 keeps reporting, but the same step: heard from, yet not progressing.
    let later = jobs.observe("llama", "0", &p(20.0), None, 100_000);
    assert!(later.fields.iter().any(|(k, v)| k == "eta_seconds" && *v == FieldValue::Num(9_800.0)), "{later:?}");
    jobs.observe("llama", "1", &p(10.0), None, 650_000);
    let mut b = Batch::new();
    jobs.stall_points(700_000, stall, forget, &mut b);
    expect_test::expect![[r#"
        train_checkpoints_total{job="llama", rank="0"} 0
        train_checkpoints_total{job="llama", rank="1"} 0
        train_seconds_since_progress{job="llama", rank="0"} 600
        train_seconds_since_progress{job="llama", rank="1"} 700
        train_stalled{job="llama", rank="0"} 1
        train_stalled{job="llama", rank="1"} 1
    "#]]
    .assert_eq(&b.to_exposition());
    let mut b = Batch::new();
    jobs.stall_points(600_000 + 3_600_000, stall, forget, &mut b);
    assert!(
        b.to_exposition().contains(r#"rank="1""#) && !b.to_exposition().contains(r#"rank="0""#),
        "rank 0 forgotten"
    );
}

#[test]
fn checkpoints_have_a_duration_and_a_count() {
    let mut jobs = Jobs::default();
    let none = Progress::default();
    let mut b = Batch::new();
    b.push(jobs.observe("j", "0", &none, Some(Checkpoint::Start), 1_000));
    b.push(jobs.observe("j", "0", &none, Some(Checkpoint::End), 43_500));
    b.push(jobs.observe("j", "0", &none, Some(Checkpoint::End), 50_000));
    let lines: Vec<String> = b.points.iter().map(|p| format!("{} {:?}", p.t, p.fields)).collect();
    expect_test::expect![[r#"
        1000 [("checkpoint_in_progress", Num(1.0))]
        43500 [("checkpoint_duration_seconds", Num(42.5)), ("checkpoint_in_progress", Num(0.0)), ("checkpoints_total", Num(1.0))]
        50000 [("checkpoint_in_progress", Num(0.0)), ("checkpoints_total", Num(2.0))]"#]]
    .assert_eq(&lines.join("\n"));
}

async fn post(url: &str, body: &str) -> (u16, String) {
    post_with(url, None, body).await
}

async fn post_with(url: &str, authorization: Option<&str>, body: &str) -> (u16, String) {
    let mut req = reqwest::Client::new().post(url).header("content-type", "application/json").body(body.to_string());
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    let r = req.send().await.unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn with_a_token_pushes_without_it_are_refused() {
    let (emit, mut rx) = Emit::channel(vec![], 16);
    let jobs = Arc::new(Mutex::new(Jobs::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/progress", listener.local_addr().unwrap());
    let app = router(jobs.clone(), emit, Some(argus_model::Secret::new("argus_t0k")));
    tokio::spawn(axum::serve(listener, app).into_future());
    let body = r#"{"job": "j", "step": 1}"#;
    for auth in [None, Some("Bearer wrong"), Some("Bearer argus_t0"), Some("Basic argus_t0k"), Some("argus_t0k")] {
        let (status, text) = post_with(&url, auth, body).await;
        assert_eq!(status, 401, "{auth:?}");
        assert!(text.contains("Authorization: Bearer <token>"), "{text}");
    }
    assert!(rx.try_recv().is_err() && jobs.lock().unwrap().jobs.is_empty(), "a refused push writes nothing");
    assert_eq!(post_with(&url, Some("Bearer argus_t0k"), body).await.0, 204);
    assert_eq!(post_with(&url, Some("bearer  argus_t0k"), body).await.0, 204, "the scheme is case-insensitive");
    assert!(rx.recv().await.unwrap().to_exposition().contains(r#"train_step{job="j", rank="0"} 1"#));
}

#[tokio::test]
async fn the_endpoint_turns_pushes_into_points() {
    let (emit, mut rx) = Emit::channel(vec![("host".into(), "node-7".into())], 16);
    let jobs = Arc::new(Mutex::new(Jobs::default()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/progress", listener.local_addr().unwrap());
    tokio::spawn(axum::serve(listener, router(jobs.clone(), emit, None)).into_future());

    let (status, _) = post(
        &url,
        r#"{"job": "llama-70b", "rank": 3, "time": 1764468000.5, "step": 1200, "epoch": 0.4, "loss": 2.31,
            "learning_rate": 3e-4, "samples_per_second": 12.5, "tokens_per_second": 51234, "mfu": 0.41, "eta_seconds": 5400}"#,
    )
    .await;
    assert_eq!(status, 204);
    let b = rx.recv().await.unwrap();
    assert_eq!(b.points[0].t, 1_764_468_000_500);
    expect_test::expect![[r#"
        train_epoch{host="node-7", job="llama-70b", rank="3"} 0.4
        train_eta_seconds{host="node-7", job="llama-70b", rank="3"} 5400
        train_learning_rate{host="node-7", job="llama-70b", rank="3"} 0.0003
        train_loss{host="node-7", job="llama-70b", rank="3"} 2.31
        train_mfu_ratio{host="node-7", job="llama-70b", rank="3"} 0.41
        train_samples_per_second{host="node-7", job="llama-70b", rank="3"} 12.5
        train_step{host="node-7", job="llama-70b", rank="3"} 1200
        train_tokens_per_second{host="node-7", job="llama-70b", rank="3"} 51234
    "#]]
    .assert_eq(&b.to_exposition());

    let (status, _) = post(&url, r#"[{"job": "sd-xl", "rank": "worker-1", "checkpoint": "start"}, {"job": "sd-xl", "rank": "worker-1", "checkpoint": "end"}]"#).await;
    assert_eq!(status, 204);
    let b = rx.recv().await.unwrap();
    assert!(b.to_exposition().contains(r#"train_checkpoints_total{host="node-7", job="sd-xl", rank="worker-1"} 1"#));
    assert_eq!(jobs.lock().unwrap().jobs.len(), 2);

    let (status, _) = post(&url, r#"{"job": "sd-xl", "rank": "worker-1", "done": true}"#).await;
    assert_eq!(status, 204);
    assert_eq!(jobs.lock().unwrap().jobs.len(), 1, "a finished job is forgotten");

    for (body, want) in [
        (r#"{"job": "x", "los": 1.0}"#, "progress body: unknown field `los`"),
        (r#"{"step": 1}"#, "progress body: missing field `job`"),
        (r#"[{"job": "x"}, {"job": "x", "checkpoint": "middle"}]"#, "progress body: unknown variant `middle`"),
        (r#"{"job": "", "step": 1}"#, "progress body: empty job (rank 0)"),
        ("step=1", "progress body: expected value"),
        (r#"{"job": "x", "time": 1764468000500}"#, "progress body: job x: time 1764468000500 is in the future"),
    ] {
        let (status, text) = post(&url, body).await;
        assert_eq!(status, 400, "{body}");
        assert!(text.starts_with(want), "{body}: {text}");
    }
    assert!(rx.try_recv().is_err(), "refused bodies write nothing");
}

#[tokio::test]
async fn the_task_serves_pushes_and_reports_stalls_each_interval() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let settings = TrainingSettings {
        listen: Some(([127, 0, 0, 1], port).into()),
        token: None,
        stall_after: Duration::from_millis(1),
        forget_after: Duration::from_secs(60),
        logs: vec![log(&dir.path().join("later.log"), "later")],
    };
    let task: Box<dyn super::Task> = Box::new(Training::new(Duration::from_millis(50), settings));
    let (emit, mut rx) = Emit::channel(vec![], 64);
    let (stop_tx, stop_rx) = watch::channel(false);
    let run = tokio::spawn(task.run(emit, stop_rx));
    let url = format!("http://127.0.0.1:{port}/progress");
    let mut status = 0;
    for _ in 0..100 {
        if let Ok(r) = reqwest::Client::new().post(&url).body(r#"{"job": "push", "step": 5}"#).send().await {
            status = r.status().as_u16();
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, 204);
    // The log appears after the start: read from its beginning.
    append(&dir.path().join("later.log"), "step=7 loss=1.5\n");
    let mut seen = String::new();
    for _ in 0..100 {
        let b = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await.unwrap().unwrap();
        seen.push_str(&b.to_exposition());
        if seen.contains(r#"train_stalled{job="push", rank="0"} 1"#)
            && seen.contains(r#"train_loss{job="later", rank="0"} 1.5"#)
        {
            break;
        }
    }
    assert!(seen.contains(r#"train_step{job="push", rank="0"} 5"#), "{seen}");
    assert!(seen.contains(r#"train_stalled{job="push", rank="0"} 1"#), "{seen}");
    assert!(seen.contains(r#"train_loss{job="later", rank="0"} 1.5"#), "{seen}");
    assert!(seen.contains(r#"argus_collector_source_success{source="training"} 1"#), "{seen}");
    let _ = stop_tx.send(true);
    run.await.unwrap();
}
