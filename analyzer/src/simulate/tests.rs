use super::trace::{parse_nodes, parse_pods};
use super::*;
use expect_test::{Expect, expect};

const POD_HEADER: &str =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";

/// `name gpus milli qos arrival run [cpu]` per line -> trace CSV (1 core and 1 GiB unless `cpu` is given).
fn pods_csv(spec: &str) -> String {
    let mut csv = POD_HEADER.to_string();
    for line in spec.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (arrival, run): (i64, i64) = (f[4].parse().unwrap(), f[5].parse().unwrap());
        let cpu = f.get(6).unwrap_or(&"1000");
        csv +=
            &format!("{},{cpu},1024,{},{},,{},Running,{arrival},{},{arrival}\n", f[0], f[1], f[2], f[3], arrival + run);
    }
    csv
}

/// `name gpus [cpu]` per line -> inventory CSV.
fn nodes_csv(spec: &str) -> String {
    let mut csv = "sn,cpu_milli,memory_mib,gpu,model\n".to_string();
    for line in spec.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        csv += &format!("{},{},262144,{},T4\n", f[0], f.get(2).unwrap_or(&"64000"), f[1]);
    }
    csv
}

fn simulate(config: &SimConfig, nodes: &str, pods: &str) -> (Report, Vec<String>) {
    let pods = parse_pods("pods.csv", pods_csv(pods).as_bytes()).unwrap();
    let nodes = parse_nodes("nodes.csv", nodes_csv(nodes).as_bytes()).unwrap();
    run_with_log(&pods, &nodes, config, &mut || default_forecaster(config.horizon_steps)).unwrap()
}

fn check(config: SimConfig, nodes: &str, pods: &str, expect: Expect) {
    let (_, log) = simulate(&config, nodes, pods);
    expect.assert_eq(&(log.join("\n") + "\n"));
}

fn policy(policy: Policy) -> SimConfig {
    SimConfig { policy, ..SimConfig::default() }
}

#[test]
fn shared_pods_pack_onto_shared_gpus_first() {
    // a needs more CPU than n1 has. b goes onto a's GPU on n2 rather than an empty GPU of n1; d fits no
    // shared GPU (0.8 + 0.4) and takes the first empty one; e could share d's GPU but n1's CPU is gone, so
    // it takes n2's empty GPU; f, a whole GPU, waits until b leaves a's GPU empty.
    check(
        SimConfig { reserve: 0.0, ..policy(Policy::Static) },
        "n1 2 2000
         n2 2",
        "a 1 500 LS 0 100 4000
         b 1 300 LS 10 100
         c 1 1000 LS 20 100
         d 1 400 LS 30 100
         e 1 600 LS 40 100
         f 1 1000 LS 50 100",
        expect![[r#"
            0 start a on n2 gpus [0] after 0s
            10 start b on n2 gpus [0] after 0s
            20 start c on n1 gpus [0] after 0s
            30 start d on n1 gpus [1] after 0s
            40 start e on n2 gpus [1] after 0s
            100 done a
            110 done b
            110 start f on n2 gpus [0] after 60s
            120 done c
            130 done d
            140 done e
            210 done f
        "#]],
    );
}

#[test]
fn low_priority_pods_leave_the_reserve_to_high_priority_ones() {
    // 20 % of 5 GPUs reserved: low-priority pods may hold 4. The fifth low pod waits although a GPU is
    // free; a high-priority pod takes that GPU at once; the fifth low pod starts when a low one ends.
    check(
        policy(Policy::Static),
        "n1 5",
        "l1 1 1000 BE 0 100
         l2 1 1000 BE 0 100
         l3 1 1000 BE 0 100
         l4 1 1000 BE 0 200
         l5 1 1000 BE 0 100
         h1 1 1000 LS 10 100",
        expect![[r#"
            0 start l1 on n1 gpus [0] after 0s
            0 start l2 on n1 gpus [1] after 0s
            0 start l3 on n1 gpus [2] after 0s
            0 start l4 on n1 gpus [3] after 0s
            10 start h1 on n1 gpus [4] after 0s
            100 done l1
            100 done l2
            100 done l3
            100 start l5 on n1 gpus [0] after 100s
            110 done h1
            200 done l4
            200 done l5
        "#]],
    );
}

#[test]
fn high_priority_pods_preempt_the_latest_low_priority_pod() {
    // Both GPUs taken by low pods: h preempts l2 (started last), h2 then l1. h3 finds only high pods and
    // waits, and goes first when a GPU frees. The preempted pods resume in queue order for the time they
    // had left (l2: 70 s, l1: 950 s).
    check(
        SimConfig { reserve: 0.0, ..policy(Policy::Static) },
        "n1 2",
        "l1 1 1000 BE 0 1000
         l2 1 1000 Burstable 10 100
         h 1 1000 LS 40 50
         h2 1 1000 LS 50 10
         h3 1 1000 LS 55 10",
        expect![[r#"
            0 start l1 on n1 gpus [0] after 0s
            10 start l2 on n1 gpus [1] after 0s
            40 preempt l2
            40 start h on n1 gpus [1] after 0s
            50 preempt l1
            50 start h2 on n1 gpus [0] after 0s
            60 done h2
            60 start h3 on n1 gpus [0] after 5s
            70 done h3
            70 start l2 on n1 gpus [0] after 30s
            90 done h
            90 start l1 on n1 gpus [1] after 40s
            140 done l2
            1040 done l1
        "#]],
    );
}

#[test]
fn reactive_powers_up_for_pending_pods_and_down_after_ten_idle_minutes() {
    // Nothing is on: a waits the 5-minute power-up. b arrives 5 minutes after the node emptied and starts
    // at once; the node goes down 10 minutes after b. c needs 4 GPUs: the 4-GPU node is started for it,
    // not a 2-GPU one. f arrives as n4's 10 idle minutes end and takes it. Two pods pending together
    // share one power-up.
    check(
        policy(Policy::Reactive),
        "n2 2
         n4 4",
        "a 1 1000 LS 0 100
         b 1 1000 BE 700 100
         c 4 1000 LS 2000 100
         f 1 1000 BE 3000 60
         d 1 1000 LS 3700 100
         e 1 500 LS 3700 100",
        expect![[r#"
            0 power up n2
            300 ready n2
            300 start a on n2 gpus [0] after 300s
            400 done a
            700 start b on n2 gpus [0] after 0s
            800 done b
            1400 off n2
            2000 power up n4
            2300 ready n4
            2300 start c on n4 gpus [0, 1, 2, 3] after 300s
            2400 done c
            3000 start f on n4 gpus [0] after 0s
            3060 done f
            3660 off n4
            3700 power up n2
            4000 ready n2
            4000 start d on n2 gpus [0] after 300s
            4000 start e on n2 gpus [1] after 300s
            4100 done d
            4100 done e
        "#]],
    );
}

#[test]
fn pods_a_node_cannot_hold_cpu_wise_power_up_a_bigger_one() {
    // p asks for 8 cores: the 1-GPU node has 4, so a 2-GPU node with the CPU starts instead.
    check(
        policy(Policy::Reactive),
        "small 1 4000
         big 2 16000",
        "p 1 1000 LS 0 10 8000",
        expect![[r#"
            0 power up big
            300 ready big
            300 start p on big gpus [0] after 300s
            310 done p
        "#]],
    );
}

/// A ramp: one 1-GPU pod a minute for 3 hours, each running 3 hours, on 2-GPU nodes.
fn ramp() -> (String, String) {
    let nodes: String = (0..120).map(|i| format!("n{i:03} 2\n")).collect();
    let pods: String = (0..180).map(|i| format!("p{i:03} 1 1000 LS {} 10800\n", i * 60)).collect();
    (nodes, pods)
}

#[test]
fn forecast_powers_up_ahead_of_a_ramp() {
    // Reactive starts a node when a pod arrives to none, so about every other pod waits the power-up.
    // The planner, fed the ramp's 15-minute upper band, has nodes ready before the pods come.
    let (nodes, pods) = ramp();
    let (reactive, _) = simulate(&policy(Policy::Reactive), &nodes, &pods);
    let (forecast, _) = simulate(&policy(Policy::Forecast), &nodes, &pods);
    assert!(reactive.pending_p50_seconds >= 240.0, "{reactive:?}");
    assert!(reactive.pods_waited >= 90, "{reactive:?}");
    assert_eq!(forecast.forecaster.as_deref(), Some("empirical_naive"));
    // Until the forecaster has 17 minutes of history, and the nodes it then starts are up 5 minutes later,
    // the first pods wait like under reactive; none after.
    assert!(forecast.pods_waited <= 23, "{forecast:?}");
    assert_eq!(forecast.pending_p50_seconds, 0.0, "{forecast:?}");
    assert!(forecast.pending_mean_seconds < reactive.pending_mean_seconds / 5.0, "{forecast:?}");
    // The head start costs powered GPUs, within reason.
    assert!(forecast.powered_gpu_hours < reactive.powered_gpu_hours * 1.5, "{forecast:?} {reactive:?}");
}

#[test]
fn figures_of_a_hand_checked_run() {
    // One 2-GPU node on from 0: a holds 1 GPU for 100 s, b half a GPU for 50 s; 200 s in all.
    let (r, _) = simulate(&policy(Policy::Static), "n1 2", "a 1 1000 LS 0 100\nb 1 500 BE 100 100");
    assert_eq!(r.span_seconds, 200);
    assert!((r.mean_allocation - (0.5 * 100.0 + 0.25 * 100.0) / 200.0).abs() < 1e-9, "{r:?}");
    assert!((r.powered_gpu_hours - 2.0 * 200.0 / 3600.0).abs() < 1e-9, "{r:?}");
    assert!((r.allocated_gpu_hours - 150.0 / 3600.0).abs() < 1e-9, "{r:?}");
    assert_eq!((r.pending_p50_seconds, r.pending_p95_seconds, r.pods, r.pods_waited), (0.0, 0.0, 2, 0));
    expect![[r#"
        {
          "policy": "static",
          "mean_allocation": 0.375,
          "gpu_hour_allocation": 0.375,
          "mean_gpus_in_use": 0.5,
          "pending_p50_seconds": 0.0,
          "pending_p95_seconds": 0.0,
          "pending_p99_seconds": 0.0,
          "pending_mean_seconds": 0.0,
          "powered_gpu_hours": 0.1111111111111111,
          "allocated_gpu_hours": 0.041666666666666664,
          "pods": 2,
          "pods_waited": 0,
          "preemptions": 0,
          "power_ups": 0,
          "skipped_cpu_only": 0,
          "skipped_unschedulable": 0,
          "span_seconds": 200
        }
    "#]]
    .assert_eq(&r.to_json());
}

#[test]
fn malformed_traces_name_file_line_and_column() {
    let err = |csv: &str| parse_pods("pods.csv", csv.as_bytes()).unwrap_err().to_string();
    let row = "p,1000,1024,1,1000,,LS,Running,0,10,0";
    let with = |bad: &str| format!("{POD_HEADER}{row}\n{bad}\n");
    assert_eq!(
        err(&with("q,1000,1024,x,1000,,LS,Running,0,10,0")),
        "pods.csv:3: column `num_gpu`: `x` is not an integer in range"
    );
    assert_eq!(
        err(&with("q,1000,1024,1,1500,,LS,Running,0,10,0")),
        "pods.csv:3: column `gpu_milli`: `1500` is not a share of a GPU in 1..=1000"
    );
    assert_eq!(
        err(&with("q,1000,1024,2,500,,LS,Running,0,10,0")),
        "pods.csv:3: column `gpu_milli`: `500`: a GPU share below 1000 needs num_gpu 1"
    );
    assert_eq!(
        err(&with("q,1000,1024,1,1000,,LS,Running,20,10,")),
        "pods.csv:3: column `deletion_time`: `10` is before the pod started (20)"
    );
    assert_eq!(
        err(&with("q,1000,1024,1,1000,,LS,Running,20,30,5")),
        "pods.csv:3: column `scheduled_time`: `5` is before creation_time 20"
    );
    assert_eq!(err(&with("q,1000,1024,1,1000,,LS,Running")), "pods.csv:3: column `creation_time`: empty");
    assert_eq!(err("name,cpu_milli\np,1\n"), "pods.csv:1: missing column `memory_mib`");
    assert_eq!(err(POD_HEADER), "pods.csv: no rows");
    let nodes = parse_nodes("nodes.csv", "sn,cpu_milli,memory_mib,gpu,model\nn,1,1,-2,T4\n".as_bytes());
    assert_eq!(nodes.unwrap_err().to_string(), "nodes.csv:2: column `gpu`: `-2` is not an integer in range");
}

#[test]
fn trace_columns_are_read_by_name() {
    // Real rows of the v2023 trace (openb_pod_list_default.csv), columns shuffled; a never-scheduled pod
    // runs for the time it was kept; CPU-only and unplaceable pods are skipped and counted.
    let csv =
        "qos,name,creation_time,deletion_time,scheduled_time,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,pod_phase
LS,openb-pod-0001,427061,12902960,427061,6000,12288,1,460,,Running
BE,openb-pod-0061,10001278,10001403,,11908,47104,1,1000,,Pending
LS,openb-pod-0035,9967058,9968575,9967063,16000,32768,1,1000,V100M16|V100M32,Running
BE,cpu-only,0,10,0,1000,1024,0,0,,Succeeded
LS,too-big,0,10,0,1000,1024,8,1000,,Succeeded
";
    let pods = parse_pods("pods.csv", csv.as_bytes()).unwrap();
    let p = &pods[0];
    assert_eq!(
        (p.name.as_str(), p.line, p.gpu_milli, p.high_priority, p.run_s),
        ("openb-pod-0001", 2, 460, true, 12475899)
    );
    assert_eq!((pods[1].high_priority, pods[1].run_s), (false, 125));
    assert_eq!(pods[2].gpu_spec, vec!["V100M16".to_string(), "V100M32".to_string()]);
    let nodes = parse_nodes("n.csv", nodes_csv("n1 2\nn2 4 64000").as_bytes()).unwrap();
    let (r, _) = run_with_log(&pods, &nodes, &policy(Policy::Static), &mut || default_forecaster(15)).unwrap();
    // pod-0035 may run only on V100s: no node of this inventory has one.
    assert_eq!((r.pods, r.skipped_cpu_only, r.skipped_unschedulable), (2, 1, 2));
}

#[test]
fn forecast_powers_idle_nodes_down_once_the_scale_down_window_has_passed() {
    // Eleven 1-GPU pods from 0 (ten for an hour, one for three): six nodes start at once for them, and a
    // seventh at the first tick, as the planner keeps ceil(11 / 0.9) = 13 GPUs. When the ten end (300 +
    // 3600 s), demand is 1 GPU; the planner holds its plan through the 10-minute window (counted from the
    // first minute whose peak is 1), then goes down to 2 GPUs and every idle node is powered off.
    let nodes: String = (0..10).map(|i| format!("n{i} 2\n")).collect();
    let mut pods: String = (0..10).map(|i| format!("p{i} 1 1000 LS 0 3600\n")).collect();
    pods += "long 1 1000 LS 0 10800\n";
    let (_, log) = simulate(&policy(Policy::Forecast), &nodes, &pods);
    let offs: Vec<(i64, &str)> = log
        .iter()
        .filter(|l| l.contains(" off "))
        .map(|l| (l.split(' ').next().unwrap().parse().unwrap(), l.as_str()))
        .collect();
    assert!(offs.len() >= 5, "{log:#?}");
    assert!(offs.iter().all(|&(t, _)| t == 3900 + 60 + 600), "{offs:#?}");
    assert!(offs.iter().all(|(_, l)| l.ends_with("(planned 2)")), "{offs:#?}");
}
