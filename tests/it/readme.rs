//! The README's "Using it" commands, run as written (with `sh` and curl) against a fresh server: the
//! only change is the server's address, a free port instead of 9700 so tests can run side by side. A
//! newcomer following the README must get the value and the event back, on any date. The quick
//! start's checks likewise, against a server started as it says.

use crate::support::server;

use server::Server;
use std::process::Command;

/// The shell commands of the first `sh` block after `heading`, continuation lines joined, comments
/// and blank lines left out.
fn commands(readme: &str, heading: &str) -> Vec<String> {
    let section = &readme[readme.find(heading).unwrap_or_else(|| panic!("README has no {heading:?}"))..];
    let block = section.split("```sh\n").nth(1).expect("an sh block").split("\n```").next().expect("its end");
    let mut out = Vec::new();
    let mut current = String::new();
    for line in block.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.strip_suffix('\\') {
            Some(start) => current.push_str(start),
            None => {
                current.push_str(line);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

#[test]
fn the_readme_commands_write_a_point_and_read_it_back() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).expect("README.md");
    if !crate::support::peers::installed("curl", "--version") {
        return;
    }
    let setup = commands(&readme, "## Set-up");
    assert!(
        setup[0].contains("serve") && setup[0].contains("127.0.0.1:9700"),
        "Set-up starts with the server: {setup:?}"
    );
    let srv = Server::start();
    let addr = srv.base().trim_start_matches("http://").to_string();
    let mut outputs = Vec::new();
    for cmd in commands(&readme, "## Using it") {
        assert!(cmd.contains("127.0.0.1:9700"), "{cmd}");
        let cmd = cmd.replace("127.0.0.1:9700", &addr);
        let out = Command::new("sh").arg("-c").arg(&cmd).output().expect("sh");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{cmd}: {}{}", text, String::from_utf8_lossy(&out.stderr));
        outputs.push((cmd, text));
    }
    let answered = |what: &str, want: &str| {
        let hit = outputs.iter().find(|(c, _)| c.contains(what)).unwrap_or_else(|| panic!("no command for {what}"));
        assert!(hit.1.contains(want), "{}: {}", hit.0, hit.1);
    };
    answered("/api/v1/query", r#""87.5""#);
    answered("/api/v1/events", "Xid 79: GPU has fallen off the bus");
    for (cmd, text) in outputs.iter().filter(|(c, _)| c.contains("/write")) {
        assert!(text.is_empty(), "a write answered something (an error?): {cmd}: {text}");
    }
}

/// The quick start's "Check it" commands, run as written against `argus serve` started as the quick
/// start starts it (no flags but a free port, in an empty working directory, the node collector on):
/// the server answers ready and the collector's first host series is there to query.
#[test]
fn the_quick_start_check_commands_answer_with_this_machines_series() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/quickstart.md")).expect("quickstart");
    if !crate::support::peers::installed("curl", "--version") {
        return;
    }
    let cwd = tempfile::tempdir().expect("working directory");
    let addr = format!("127.0.0.1:{}", crate::support::server::free_port());
    let log = std::fs::File::create(cwd.path().join("argus.log")).expect("log");
    let mut child = crate::support::peers::Killed(
        Command::new(env!("CARGO_BIN_EXE_argus"))
            .args(["serve", "--listen", &addr])
            .current_dir(cwd.path())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn argus"),
    );
    let run = |cmd: &str| {
        let cmd = cmd.replace("127.0.0.1:9700", &addr);
        let out = Command::new("sh").arg("-c").arg(&cmd).output().expect("sh");
        (cmd, out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let checks = commands(&doc, "Check it:");
    assert!(checks.iter().any(|c| c.contains("host_cpu_busy_ratio")), "{checks:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        let outputs: Vec<_> = checks.iter().map(|c| run(c)).collect();
        let ready = outputs.iter().all(|(_, ok, _)| *ok);
        let host = outputs.iter().find(|(c, _, _)| c.contains("host_cpu_busy_ratio")).expect("host query");
        if ready && host.2.contains(r#""__name__":"host_cpu_busy_ratio""#) {
            assert!(outputs[0].2.contains("Ready"), "{}: {}", outputs[0].0, outputs[0].2);
            break;
        }
        if let Some(status) = child.0.try_wait().expect("try_wait") {
            panic!("argus serve exited ({status}): {}", std::fs::read_to_string(cwd.path().join("argus.log")).unwrap());
        }
        assert!(std::time::Instant::now() < deadline, "no host series after 90 s: {outputs:?}");
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    assert!(cwd.path().join("data").is_dir(), "the data went to ./data");
}
