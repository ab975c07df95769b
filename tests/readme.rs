//! The README's "Using it" commands, run as written (with `sh` and curl) against a fresh server: the
//! only change is the server's address, a free port instead of 9700 so tests can run side by side. A
//! newcomer following the README must get the value and the event back, on any date.

#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;

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
    if Command::new("curl").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "curl is not installed (scripts/install-peers.sh installs it)");
        eprintln!("skipped: curl is not installed");
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
