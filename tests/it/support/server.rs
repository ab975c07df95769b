//! The harness of the whole-stack tests: the real `argus serve` binary on a free loopback port with a
//! temporary data directory, a blocking HTTP client, and helpers that read the Prometheus API back.
//!
//! Include it with `#[path = "support/server.rs"] mod server;`. The child is killed when the `Server`
//! is dropped, so a failing test leaves no process behind.

use reqwest::blocking::{Body, Client};
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tempfile::TempDir;

/// How long a start (store recovery included) may take before the test fails.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a SIGTERM shutdown (final flush included) may take.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// An `[auth]` section with three tokens, by the SHA-256 of their text: "reader-token" (`grafana`, read),
/// "writer-token" (`collectors`, write) and "admin-token" (`ops`, admin).
pub const THREE_TOKENS: &str = r#"
[[auth.tokens]]
name = "grafana"
scopes = ["read"]
sha256 = "ba5005a40cf5212e4ac0190104cc127edab013294bb71279a975b27a80982d45"

[[auth.tokens]]
name = "collectors"
scopes = ["write"]
sha256 = "3590c0a59f72ce02700194a05f228a725c1f135a6dcb3ded9b2d86ab6a6f52cb"

[[auth.tokens]]
name = "ops"
scopes = ["admin"]
sha256 = "10a4c7c9fc5206d6f36dc6944a81bb6f4a3cb0e25014ae3b12e6c3e52712292a"
"#;

/// The wall clock in milliseconds, as the store measures retention and `max_future`.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_millis() as i64
}

/// A running `argus serve`.
pub struct Server {
    child: Option<Child>,
    base: String,
    data_dir: TempDir,
    /// Holds the config file and one log file per start.
    scratch: TempDir,
    config: Option<PathBuf>,
    extra_args: Vec<String>,
    starts: usize,
    http: Client,
    /// For a server on HTTPS: the CA its certificate chains to (the base URL is then
    /// `https://localhost:PORT`).
    tls_ca: Option<reqwest::Certificate>,
}

/// An answer: status, headers and the body as text.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: String,
}

/// One series of a matrix or vector result: labels, then `(ms, value as the API formats it)` pairs.
pub type SeriesPoints = (BTreeMap<String, String>, Vec<(i64, String)>);

// === impl Server ===

impl Server {
    /// A server with the default configuration.
    pub fn start() -> Server {
        Server::start_with(None, &[])
    }

    /// A server reading `toml` as its `--config` file.
    pub fn with_config(toml: &str) -> Server {
        Server::start_with(Some(toml), &[])
    }

    /// A server with an optional config file and extra `serve` arguments (e.g. `--retention 1h`).
    pub fn start_with(toml: Option<&str>, extra_args: &[&str]) -> Server {
        Server::start_inner(toml, extra_args, None)
    }

    /// A server whose `toml` turns on TLS with a certificate issued by the CA in `ca_pem`, for
    /// `localhost`; the harness's client trusts that CA.
    pub fn start_tls(toml: &str, ca_pem: &str) -> Server {
        let ca = reqwest::Certificate::from_pem(ca_pem.as_bytes()).expect("CA PEM");
        Server::start_inner(Some(toml), &[], Some(ca))
    }

    fn client(&self, timeout: Duration) -> Client {
        let mut b = Client::builder().no_proxy().timeout(timeout);
        if let Some(ca) = &self.tls_ca {
            b = b.tls_certs_merge([ca.clone()]);
        }
        b.build().expect("http client")
    }

    fn start_inner(toml: Option<&str>, extra_args: &[&str], tls_ca: Option<reqwest::Certificate>) -> Server {
        let scratch = tempfile::tempdir().expect("scratch dir");
        // The tests count series and label values exactly, and Argus' own metrics, stored by default
        // under job="argus", would be counted with them: a server under test stores them only when
        // its configuration names `[self_monitoring]` (tests/it/self_monitoring.rs does).
        let toml = match toml {
            Some(t) if t.contains("[self_monitoring]") => t.to_string(),
            Some(t) => format!("{t}\n[self_monitoring]\nenabled = false\n"),
            None => "[self_monitoring]\nenabled = false\n".to_string(),
        };
        let config = {
            let p = scratch.path().join("argus.toml");
            std::fs::write(&p, toml).expect("write config");
            Some(p)
        };
        let mut s = Server {
            child: None,
            base: String::new(),
            data_dir: tempfile::tempdir().expect("data dir"),
            scratch,
            config,
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            starts: 0,
            http: Client::new(),
            tls_ca,
        };
        s.http = s.client(Duration::from_secs(300));
        s.spawn();
        s
    }

    /// Starts the binary on a free port and waits until `/-/healthy` answers 200. Retries on another
    /// port if the one picked was taken in between.
    fn spawn(&mut self) {
        for _ in 0..5 {
            match self.spawn_on(free_port()) {
                Ok(()) => return,
                Err(log) if log.contains("Address already in use") => continue,
                Err(log) => panic!("argus did not become healthy; its log:\n{log}"),
            }
        }
        panic!("argus could not bind a free port in 5 tries");
    }

    fn spawn_on(&mut self, port: u16) -> Result<(), String> {
        self.starts += 1;
        let log_path = self.scratch.path().join(format!("argus-{}.log", self.starts));
        let log = File::create(&log_path).expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_argus"));
        cmd.arg("serve")
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(self.data_dir.path())
            .arg("--no-collector");
        if let Some(c) = &self.config {
            cmd.arg("--config").arg(c);
        }
        cmd.args(&self.extra_args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log);
        self.child = Some(cmd.spawn().expect("spawn argus"));
        self.base = match self.tls_ca {
            Some(_) => format!("https://localhost:{port}"),
            None => format!("http://127.0.0.1:{port}"),
        };
        self.wait_healthy()
    }

    /// Starts again on the same port and data directory (killing the running one first, if any), for
    /// clients that must find the server where it was. Waits while the port is still held.
    pub fn restart_same_port(&mut self) {
        self.kill9();
        let port: u16 = self.base.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port of the last start");
        for _ in 0..50 {
            match self.spawn_on(port) {
                Ok(()) => return,
                Err(log) if log.contains("Address already in use") => std::thread::sleep(Duration::from_millis(100)),
                Err(log) => panic!("argus did not become healthy; its log:\n{log}"),
            }
        }
        panic!("port {port} stayed busy");
    }

    fn wait_healthy(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        let probe = self.client(Duration::from_secs(2));
        while Instant::now() < deadline {
            let child = self.child.as_mut().expect("child");
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return Err(format!("exited with {status}\n{}", self.log()));
            }
            if let Ok(r) = probe.get(self.url("/-/healthy")).send()
                && r.status().as_u16() == 200
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill9();
        Err(format!("not healthy after {START_TIMEOUT:?}\n{}", self.log()))
    }

    /// `http://127.0.0.1:PORT` (or `https://localhost:PORT`)
    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn url(&self, path_and_query: &str) -> String {
        format!("{}{}", self.base, path_and_query)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server is running").id()
    }

    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// The log of the current (latest) start.
    pub fn log(&self) -> String {
        let p = self.scratch.path().join(format!("argus-{}.log", self.starts));
        std::fs::read_to_string(p).unwrap_or_default()
    }

    /// SIGKILL: no flush, no goodbye; only the WAL keeps what was acknowledged.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then waits for the exit (the final flush included) and returns its status.
    pub fn terminate(&mut self) -> ExitStatus {
        let mut c = self.child.take().expect("server is running");
        let ok = Command::new("kill").args(["-TERM", &c.id().to_string()]).status().expect("run kill");
        assert!(ok.success(), "kill -TERM failed");
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            if let Some(status) = c.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = c.kill();
                let _ = c.wait();
                panic!("argus did not exit within {STOP_TIMEOUT:?} of SIGTERM; its log:\n{}", self.log());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts again on the same data directory and config (killing the running one first, if any).
    pub fn restart(&mut self) {
        self.kill9();
        self.spawn();
    }

    // --- requests ---

    pub fn get(&self, path_and_query: &str) -> Reply {
        Reply::from(self.http.get(self.url(path_and_query)).send().expect("GET"))
    }

    /// A GET with extra headers (e.g. `Authorization`).
    pub fn get_with(&self, path_and_query: &str, headers: &[(&str, &str)]) -> Reply {
        let mut req = self.http.get(self.url(path_and_query));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Reply::from(req.send().expect("GET"))
    }

    pub fn post(&self, path_and_query: &str, headers: &[(&str, &str)], body: impl Into<Body>) -> Reply {
        let mut req = self.http.post(self.url(path_and_query)).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        Reply::from(req.send().expect("POST"))
    }

    /// A request with any method and no body (e.g. DELETE, to see a 405).
    pub fn send(&self, method: reqwest::Method, path_and_query: &str) -> Reply {
        Reply::from(self.http.request(method, self.url(path_and_query)).send().expect("request"))
    }

    /// A v2 line-protocol write with millisecond timestamps.
    pub fn write_ms(&self, lines: &str) -> Reply {
        self.post("/api/v2/write?org=o&bucket=b&precision=ms", &[], lines.to_string())
    }

    /// Asserts `/-/healthy` answers 200 and a small write is stored (204 and readable back).
    pub fn assert_healthy_and_writable(&self, headers: &[(&str, &str)]) {
        let h = self.get("/-/healthy");
        assert_eq!(h.status, 200, "healthy: {}", h.body);
        let t = now_ms();
        let v = (t % 1000) as f64 + 0.5;
        let r = self.post(
            "/api/v2/write?org=o&bucket=b&precision=ms",
            headers,
            format!("canary,probe=after value={v} {t}"),
        );
        assert_eq!(r.status, 204, "canary write: {}", r.body);
        let got = self.raw_samples("canary_value", t, "1m");
        assert!(got.iter().any(|(_, pts)| pts.contains(&(t, format_f64(v)))), "canary not readable: {got:?}");
    }

    // --- reads ---

    /// `GET /api/v1/query` at `t_ms`; asserts success and returns `data`.
    pub fn query(&self, q: &str, t_ms: i64) -> Value {
        let r = self.get(&format!("/api/v1/query?query={}&time={}", enc(q), secs(t_ms)));
        r.success_data()
    }

    /// `GET /api/v1/query_range`; asserts success and returns the series with their points.
    pub fn query_range(&self, q: &str, start_ms: i64, end_ms: i64, step: &str) -> Vec<SeriesPoints> {
        let r = self.get(&format!(
            "/api/v1/query_range?query={}&start={}&end={}&step={step}",
            enc(q),
            secs(start_ms),
            secs(end_ms)
        ));
        let data = r.success_data();
        assert_eq!(data["resultType"], "matrix", "{data}");
        matrix(&data)
    }

    /// The raw samples of `selector[range]` ending at `t_ms` (an instant query of a range selector).
    pub fn raw_samples(&self, selector: &str, t_ms: i64, range: &str) -> Vec<SeriesPoints> {
        let data = self.query(&format!("{selector}[{range}]"), t_ms);
        assert_eq!(data["resultType"], "matrix", "{data}");
        matrix(&data)
    }

    /// `GET /api/v1/series?match[]=…` over all time; the label sets.
    pub fn series(&self, selector: &str) -> Vec<BTreeMap<String, String>> {
        let data = self.get(&format!("/api/v1/series?match[]={}", enc(selector))).success_data();
        data.as_array().expect("series array").iter().map(labels).collect()
    }

    /// The value of one sample of `/metrics`, e.g. `argus_store_samples_dropped_total{reason="retention"}`.
    pub fn metric(&self, series: &str) -> Option<f64> {
        let r = self.get("/metrics");
        assert_eq!(r.status, 200, "{}", r.body);
        let prefix = format!("{series} ");
        r.body.lines().find_map(|l| l.strip_prefix(&prefix)).map(|v| v.trim().parse().expect("metric value"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// A loopback port free at the time of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind :0").local_addr().expect("local addr").port()
}

// === impl Reply ===

impl Reply {
    fn from(r: reqwest::blocking::Response) -> Reply {
        let status = r.status().as_u16();
        let headers = r.headers().clone();
        let body = r.text().expect("body");
        Reply { status, headers, body }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts a Prometheus success envelope and returns `data`.
    pub fn success_data(&self) -> Value {
        assert_eq!(self.status, 200, "{}", self.body);
        let j = self.json();
        assert_eq!(j["status"], "success", "{j}");
        j["data"].clone()
    }
}

// === helpers ===

/// A value as the Prometheus API formats it (Go's `FormatFloat(v, 'f', -1, 64)` for ordinary numbers).
pub fn format_f64(v: f64) -> String {
    format!("{v}")
}

/// Milliseconds as the API's Unix seconds with a fraction.
pub fn secs(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// RFC 3339 in UTC for Unix seconds (days from the civil-from-days algorithm).
pub fn rfc3339(secs: i64) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem / 60 % 60, rem % 60)
}

/// The `sha256` an `[[auth.tokens]]` entry holds for `token`: lowercase hex of its SHA-256.
pub fn token_digest(token: &str) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(token.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Percent-encodes a query parameter value.
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn labels(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .expect("label object")
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().expect("label value").to_string()))
        .collect()
}

fn point(p: &Value) -> (i64, String) {
    let t = (p[0].as_f64().expect("point time") * 1000.0).round() as i64;
    (t, p[1].as_str().expect("point value").to_string())
}

/// A matrix or vector result as series with points, in the order the server gave them.
pub fn matrix(data: &Value) -> Vec<SeriesPoints> {
    data["result"]
        .as_array()
        .expect("result array")
        .iter()
        .map(|s| {
            let pts = match (s.get("values"), s.get("value")) {
                (Some(vs), _) => vs.as_array().expect("values").iter().map(point).collect(),
                (None, Some(v)) => vec![point(v)],
                (None, None) => panic!("no values in {s}"),
            };
            (labels(&s["metric"]), pts)
        })
        .collect()
}

/// Labels from `[("k", "v")…]`, for comparisons.
pub fn lbl(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}
