use super::*;
use expect_test::{Expect, expect};

/// Parses and validates; the error message, or a summary of what came out.
fn check(toml: &str, expected: Expect) {
    let got = match Config::parse(toml, "argus.toml").and_then(|c| c.validate("argus.toml")) {
        Err(e) => e.to_string(),
        Ok(v) => {
            let mut s = format!(
                "labels={:?} gpu={:?} host={:?} disk={} net={}",
                v.labels,
                v.gpu.as_ref().map(|g| (g.interval, &g.settings.backend, g.settings.dcgm_names)),
                v.host.as_ref().map(|h| (h.interval, h.timeout)),
                v.disk.is_some(),
                v.net.is_some()
            );
            for k in &v.sinks {
                s.push_str(&format!(
                    "\nsink {} {:?} {} events={:?} max_samples={} spool={}",
                    k.name, k.format, k.url, k.events_url, k.max_samples, k.spool_max_bytes
                ));
            }
            s
        }
    };
    expected.assert_eq(&got);
}

#[test]
fn defaults_and_overrides() {
    check(
        "",
        expect![[r#"
            labels={} gpu=Some((10s, Nvml, false)) host=Some((10s, 10s)) disk=true net=true
            sink default RemoteWrite http://127.0.0.1:9700/api/v1/write events=Some("http://127.0.0.1:9700/api/v2/write?precision=ms") max_samples=10000 spool=1073741824"#]],
    );
    check(
        "[server]\nlisten = \"x\"\n[collector]\ninterval = \"30s\"\n[collector.labels]\ncluster = \"a\"\n[collector.host]\ntimeout = \"2s\"\n[collector.gpu]\nenabled = false\n[collector.disk]\nenabled = false",
        expect![[r#"
            labels={"cluster": "a"} gpu=None host=Some((30s, 2s)) disk=false net=true
            sink default RemoteWrite http://127.0.0.1:9700/api/v1/write events=Some("http://127.0.0.1:9700/api/v2/write?precision=ms") max_samples=10000 spool=1073741824"#]],
    );
    check(
        "[[collector.sink]]\nurl = \"http://vm:8428/api/v2/write\"\nformat = \"line_protocol\"\nspool_max_bytes = \"64MiB\"\n[[collector.sink]]\nname = \"b\"\nurl = \"https://x/push\"",
        expect![[r#"
            labels={} gpu=Some((10s, Nvml, false)) host=Some((10s, 10s)) disk=true net=true
            sink default LineProtocol http://vm:8428/api/v2/write?precision=ms events=None max_samples=10000 spool=67108864
            sink b RemoteWrite https://x/push events=None max_samples=10000 spool=1073741824"#]],
    );
}

#[test]
fn errors_name_file_line_and_field() {
    check(
        "[collector]\nbogus = 1\n",
        expect![
            "argus.toml:2:1: unknown field `bogus`, expected one of `interval`, `labels`, `procfs_root`, `sysfs_root`, `data_dir`, `listen`, `gpu`, `host`, `disk`, `net`, `events`, `training`, `scrape`, `replay`, `sink`"
        ],
    );
    check(
        "[collector.host]\ninterval = \"soon\"\n",
        expect![[r#"argus.toml: collector.host.interval: "soon" is not a duration (e.g. 500ms, 10s, 5m, 35d)"#]],
    );
    check(
        "[collector.net]\ninterfaces_exclude = \"(\"\n",
        expect![
            "argus.toml: collector.net.interfaces_exclude: bad regex: regex parse error:\n    (\n    ^\nerror: unclosed group"
        ],
    );
    check(
        "[collector.gpu]\nbackend = \"fake\"\n",
        expect![[r#"argus.toml: collector.gpu.fake_fixture: required by backend = "fake""#]],
    );
    check(
        "[[collector.sink]]\nurl = \"vm:8428\"\n",
        expect![[r#"argus.toml: collector.sink[0].url: "vm:8428" is not an http:// or https:// URL"#]],
    );
    check(
        "[[collector.sink]]\nspool_max_bytes = \"1 parsec\"\n",
        expect![[
            r#"argus.toml: collector.sink[0].spool_max_bytes: unknown unit "parsec" (use B, KiB, MiB, GiB, TiB, KB, MB, GB or TB)"#
        ]],
    );
    check(
        "[collector.labels]\n\"bad-name\" = \"x\"\n",
        expect!["argus.toml: collector.labels.bad-name: not a valid label name"],
    );
    check(
        "[collector.disk]\nenabled = \"yes\"\n",
        expect!["argus.toml:2:11: invalid type: string \"yes\", expected a boolean"],
    );
}

#[test]
fn shipped_example_loads() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/collector.toml");
    let c = Config::load(&p).unwrap();
    let v = c.validate(&p.display().to_string()).unwrap();
    assert_eq!(v.labels.get("cluster").map(String::as_str), Some("train-a"));
    assert!(v.gpu.is_some() && v.host.is_some() && v.disk.is_some() && v.net.is_some());
    assert!(v.training.is_some() && v.scrape.is_none() && v.replay.is_none());
}

#[test]
fn training_scrape_and_replay_are_off_until_their_section_appears() {
    let v = Config::default().validate("-").unwrap();
    assert!(v.training.is_none() && v.scrape.is_none() && v.replay.is_none());
    let v = Config::parse(
        "[collector.training]\nstall_after = \"5m\"\n[[collector.training.logs]]\npath = \"/var/log/llama-rank3.log\"\nrank = \"3\"\n\
         [collector.scrape]\n[[collector.scrape.targets]]\nurl = \"http://10.0.0.5:8000/metrics\"\nlabels = { model = \"llama\", job = \"mine\" }\n\
         [collector.replay]\nduty_cycle = \"trace.csv\"\n",
        "-",
    )
    .unwrap()
    .validate("-")
    .unwrap();
    let t = v.training.unwrap().settings;
    assert_eq!(t.listen, Some("127.0.0.1:9702".parse().unwrap()));
    assert_eq!(t.stall_after, Duration::from_secs(300));
    assert_eq!(t.logs[0].job, "llama-rank3", "job defaults to the file stem");
    let s = v.scrape.unwrap().settings;
    let labels: Vec<String> = s.targets[0].labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    assert_eq!(labels, ["instance=10.0.0.5:8000", "job=mine", "model=llama"]);
    assert_eq!(v.replay.unwrap().settings.gpus, 8);
}

#[test]
fn training_scrape_and_replay_errors_name_the_field() {
    let err = |toml: &str| Config::parse(toml, "argus.toml").unwrap().validate("argus.toml").unwrap_err().to_string();
    expect![[r#"argus.toml: collector.training.listen: "9702" is not an address"#]]
        .assert_eq(&err("[collector.training]\nlisten = \"9702\"\n"));
    expect!["argus.toml: collector.scrape.targets: no targets: add [[collector.scrape.targets]] url = …, or [collector.scrape.kubernetes]"]
        .assert_eq(&err("[collector.scrape]\n"));
    expect![[r#"argus.toml: collector.scrape.targets[0].url: "vllm:8000/metrics" is not an http:// or https:// URL"#]]
        .assert_eq(&err("[collector.scrape]\n[[collector.scrape.targets]]\nurl = \"vllm:8000/metrics\"\n"));
    expect!["argus.toml: collector.replay.duty_cycle: required: the trace's GPU duty-cycle file"]
        .assert_eq(&err("[collector.replay]\ngpus = 2\n"));
}

#[test]
fn a_sink_token_is_read_from_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("token");
    std::fs::write(&file, "argus_secret\n").unwrap();
    let sink = |body: &str| format!("[[collector.sink]]\n{body}\n");
    let token = |toml: &str| Config::parse(toml, "-").and_then(|c| c.validate("-")).map(|v| v.sinks[0].token.clone());
    let path = file.display();
    assert_eq!(token(&sink(&format!("token_file = \"{path}\""))).unwrap().as_deref(), Some("argus_secret"));
    assert_eq!(token(&sink("token = \"inline\"")).unwrap().as_deref(), Some("inline"));
    let err = |toml: &str| token(toml).unwrap_err().to_string().replace(&dir.path().display().to_string(), "DIR");
    expect!["-: collector.sink[0].token_file: set either token or token_file, not both"]
        .assert_eq(&err(&sink(&format!("token = \"x\"\ntoken_file = \"{path}\""))));
    expect!["-: collector.sink[0].token_file: DIR/missing: No such file or directory (os error 2)"]
        .assert_eq(&err(&sink(&format!("token_file = \"{}\"", dir.path().join("missing").display()))));
    std::fs::write(&file, " \n").unwrap();
    expect!["-: collector.sink[0].token_file: DIR/token: empty"]
        .assert_eq(&err(&sink(&format!("token_file = \"{path}\""))));
}

#[test]
fn the_training_token_is_inline_or_read_from_token_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("push-token");
    std::fs::write(&file, "argus_push\n").unwrap();
    let training = |body: &str| format!("[collector.training]\n{body}\n");
    let token = |toml: &str| {
        Config::parse(toml, "-")
            .and_then(|c| c.validate("-"))
            .map(|v| v.training.and_then(|t| t.settings.token).map(|t| t.expose().to_string()))
    };
    let path = file.display();
    assert_eq!(token(&training("")).unwrap(), None);
    assert_eq!(token(&training(&format!("token_file = \"{path}\""))).unwrap().as_deref(), Some("argus_push"));
    assert_eq!(token(&training("token = \"inline\"")).unwrap().as_deref(), Some("inline"));
    let err = |toml: &str| token(toml).unwrap_err().to_string().replace(&dir.path().display().to_string(), "DIR");
    expect!["-: collector.training.token_file: set either token or token_file, not both"]
        .assert_eq(&err(&training(&format!("token = \"x\"\ntoken_file = \"{path}\""))));
    expect!["-: collector.training.token_file: DIR/missing: No such file or directory (os error 2)"]
        .assert_eq(&err(&training(&format!("token_file = \"{}\"", dir.path().join("missing").display()))));
    expect!["-: collector.training.token: empty"].assert_eq(&err(&training("token = \" \"")));
}
