//! `argus simulate`: replays a GPU pod trace under a node power policy and reports allocation, pending
//! time and powered GPU-hours (`--trace`), or scores node power decisions against a demand series as
//! Helios' CES does (`--demand`, [`demand`]); argus_analyzer::simulate does the work.

mod demand;

use anyhow::{Context, Result};
use argus_analyzer::capacity::PlannerConfig;
use argus_analyzer::simulate::{self, Policy, SimConfig, trace};
use std::path::PathBuf;
use std::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Pod trace CSV with Alibaba cluster-trace-gpu-v2023 columns (openb_pod_list_*.csv).
    #[arg(long, required_unless_present = "demand", conflicts_with = "demand")]
    trace: Option<PathBuf>,
    /// Demand series CSV (`timestamp,value` nodes in use, or GPUs with --gpus-per-node; or Helios'
    /// `time,active,total`): scores power decisions over its last 14 whole days.
    #[arg(long)]
    demand: Option<PathBuf>,
    /// --demand: the series counts GPUs, this many to a node (8 when given without a number).
    #[arg(long, num_args = 0..=1, default_missing_value = "8")]
    gpus_per_node: Option<u32>,
    /// --demand: the fleet, in nodes (default the `total` column, else the series' highest demand).
    #[arg(long)]
    total: Option<u64>,
    /// --demand: CES' settings, `philly` or `earth` (default philly for a `time,active,total` file, else
    /// earth).
    #[arg(long)]
    ces_settings: Option<String>,
    /// Node inventory CSV (`sn,cpu_milli,memory_mib,gpu,model`); default: openb_node_list_gpu_node.csv
    /// beside the trace.
    #[arg(long)]
    nodes: Option<PathBuf>,
    /// --trace: static: every node on; reactive: power up for pending pods, down after --idle-off;
    /// forecast: the capacity planner on a 15-minute demand forecast. --demand: reactive, ces (Helios'
    /// policy) or forecast (the capacity planner).
    #[arg(long)]
    policy: String,
    /// Also write the figures as JSON to FILE.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Share of running GPUs reserved for high-priority (qos LS) pods.
    #[arg(long, default_value_t = 0.2)]
    reserve: f64,
    /// Time a node takes to power up (default 5m with --trace, 0s with --demand).
    #[arg(long, value_parser = humantime::parse_duration)]
    boot: Option<Duration>,
    /// reactive: power a node down after this long without pods.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    idle_off: Duration,
    /// forecast: forecast horizon (default 15m with --trace, 1h with --demand).
    #[arg(long, value_parser = humantime::parse_duration)]
    horizon: Option<Duration>,
    /// forecast: the share of powered GPUs the forecast's upper band may fill.
    #[arg(long, default_value_t = PlannerConfig::default().target_utilization)]
    target_utilization: f64,
    /// forecast: scale down only when the plan is below the powered GPUs by more than this share.
    #[arg(long, default_value_t = PlannerConfig::default().scale_down_margin)]
    scale_down_margin: f64,
    /// forecast: least time between the planner's last change and a scale-up.
    #[arg(long, default_value = "1m", value_parser = humantime::parse_duration)]
    scale_up_cooldown: Duration,
    /// forecast: least time between the planner's last change and a scale-down (also the window whose
    /// highest plan a scale-down goes to).
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    scale_down_cooldown: Duration,
}

pub fn run(args: Args) -> Result<()> {
    let trace_path = match (&args.trace, &args.demand) {
        (_, Some(series)) => return demand::run(series, &args),
        (Some(t), None) => t.clone(),
        (None, None) => anyhow::bail!("give --trace or --demand"),
    };
    let policy: Policy = args.policy.parse().map_err(anyhow::Error::msg)?;
    let nodes_path = match &args.nodes {
        Some(p) => p.clone(),
        None => trace_path.with_file_name("openb_node_list_gpu_node.csv"),
    };
    let pods = trace::read_pods(&trace_path)?;
    let nodes = trace::read_nodes(&nodes_path)?;
    let tick = Duration::from_secs(60);
    let horizon = args.horizon.unwrap_or(Duration::from_secs(900));
    let horizon_steps = (horizon.as_secs() / tick.as_secs()).max(1) as usize;
    let config = SimConfig {
        policy,
        reserve: args.reserve,
        boot: args.boot.unwrap_or(Duration::from_secs(300)),
        idle_off: args.idle_off,
        tick,
        horizon_steps,
        planner: PlannerConfig {
            target_utilization: args.target_utilization,
            reserve_fraction: args.reserve,
            scale_down_margin: args.scale_down_margin,
            scale_up_cooldown: args.scale_up_cooldown,
            scale_down_cooldown: args.scale_down_cooldown,
            ..PlannerConfig::default()
        },
        ..SimConfig::default()
    };
    let started = std::time::Instant::now();
    let report = simulate::run(&pods, &nodes, &config, &mut || simulate::default_forecaster(horizon_steps))?;
    let r = &report;
    println!("policy                       {}", r.policy);
    if let Some(f) = &r.forecaster {
        println!("forecaster                   {f}");
    }
    println!(
        "pods simulated               {} ({} waited; {} CPU-only and {} unplaceable skipped)",
        r.pods, r.pods_waited, r.skipped_cpu_only, r.skipped_unschedulable
    );
    println!(
        "mean GPU allocation          {:.1} % (GPU-hours: {:.1} %; GPUs in use {:.1} %)",
        r.mean_allocation * 100.0,
        r.gpu_hour_allocation * 100.0,
        r.mean_gpus_in_use * 100.0
    );
    println!(
        "pending p50 / p95 / p99      {:.0} s / {:.0} s / {:.0} s (mean {:.0} s)",
        r.pending_p50_seconds, r.pending_p95_seconds, r.pending_p99_seconds, r.pending_mean_seconds
    );
    println!("powered GPU-hours            {:.0} (allocated {:.0})", r.powered_gpu_hours, r.allocated_gpu_hours);
    println!("power-ups / preemptions      {} / {}", r.power_ups, r.preemptions);
    println!(
        "span                         {:.1} days, simulated in {:.2} s",
        r.span_seconds as f64 / 86400.0,
        started.elapsed().as_secs_f64()
    );
    if let Some(path) = &args.json {
        std::fs::write(path, report.to_json()).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
