use super::*;
use crate::source::golden;

/// A local server on loopback: `/metrics` serves the vLLM fixture, `/broken` a malformed body,
/// anything else 404.
async fn server() -> String {
    let vllm = std::fs::read_to_string(golden::fixture("scrape/vllm-metrics.txt")).unwrap();
    let app = axum::Router::new()
        .route(
            "/metrics",
            axum::routing::get(move || {
                let body = vllm.clone();
                async move { ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body) }
            }),
        )
        .route("/broken", axum::routing::get(|| async { "vllm:num_requests_running{engine=\"0\" 3\n" }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(axum::serve(listener, app).into_future());
    format!("http://{addr}")
}

fn target(url: String) -> ScrapeTarget {
    let settings = crate::config::Config::parse(
        &format!("[collector.scrape]\n[[collector.scrape.targets]]\nurl = \"{url}\"\njob = \"vllm\"\nlabels = {{ model = \"llama-8b\" }}\n"),
        "-",
    )
    .unwrap()
    .validate("-")
    .unwrap();
    settings.scrape.unwrap().settings.targets.remove(0)
}

/// The exposition with the scrape duration (which varies) blanked.
fn shown(b: &Batch) -> String {
    let text = b.to_exposition();
    let port = text.find("127.0.0.1:").map(|i| &text[i..i + text[i..].find('"').unwrap()]).unwrap_or("").to_string();
    text.lines()
        .map(|l| {
            if l.starts_with("scrape_duration_seconds") {
                format!("{} <elapsed>", &l[..l.rfind(' ').unwrap()])
            } else {
                l.into()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        .replace(&port, "127.0.0.1:PORT")
        + "\n"
}

#[tokio::test]
async fn golden_vllm_scrape_keeps_names_and_adds_target_labels() {
    let base = server().await;
    let (b, up) = scrape(&reqwest::Client::new(), &target(format!("{base}/metrics")), 1_000).await;
    assert!(up);
    let lines = std::fs::read_to_string(golden::fixture("scrape/vllm-metrics.txt")).unwrap();
    let sample_lines = lines.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(b.samples(), sample_lines + 3, "every sample line, plus up, duration and samples");
    golden::check_text("scrape-vllm", "txt", &shown(&b));
}

#[tokio::test]
async fn a_failed_scrape_is_up_zero_and_nothing_else() {
    let base = server().await;
    for path in ["/broken", "/missing"] {
        let (b, up) = scrape(&reqwest::Client::new(), &target(format!("{base}{path}")), 1_000).await;
        assert!(!up, "{path}");
        let text = shown(&b);
        assert!(text.contains(r#"scrape_up{instance="127.0.0.1:PORT", job="vllm", model="llama-8b"} 0"#), "{text}");
        assert!(
            text.contains(r#"scrape_samples{instance="127.0.0.1:PORT", job="vllm", model="llama-8b"} 0"#),
            "{text}"
        );
        assert_eq!(b.len(), 1, "{path}: {text}");
    }
}

#[tokio::test]
async fn the_task_scrapes_every_target_each_round() {
    let base = server().await;
    let mut settings = ScrapeSettings {
        targets: vec![target(format!("{base}/metrics")), target(format!("{base}/missing"))],
        kubernetes: None,
    };
    settings.targets[1].labels.retain(|(k, _)| k != "model");
    let task: Box<dyn Task> = Box::new(Scrape::new(Duration::from_millis(50), Duration::from_secs(5), settings));
    let (emit, mut rx) = Emit::channel(vec![("host".into(), "node-7".into())], 4);
    let (stop_tx, stop_rx) = watch::channel(false);
    let run = tokio::spawn(task.run(emit, stop_rx));
    let b = rx.recv().await.unwrap();
    let _ = stop_tx.send(true);
    run.await.unwrap();
    let text = b.to_exposition();
    assert!(text.contains(r#"vllm:num_requests_running{engine="0", host="node-7", instance="#), "{text}");
    assert!(
        text.contains(r#"argus_collector_source_success{host="node-7", source="scrape"} 0"#),
        "one target is down: {text}"
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("scrape_up")).count(), 2);
}
