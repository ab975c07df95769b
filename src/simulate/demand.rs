//! `argus simulate --demand SERIES --policy reactive|ces|forecast`: node power decisions over the last 14
//! days of a demand series, scored as Helios' CES scores them (docs/simulate.md).

use super::Args;
use anyhow::{Context, Result, bail};
use argus_analyzer::capacity::PlannerConfig;
use argus_analyzer::forecast::select::{MODELS, ModelConfig, Selected};
use argus_analyzer::simulate::ces::{Ces, CesParams};
use argus_analyzer::simulate::demand::{self, DAY_STEPS, DemandSeries, ReadOptions, STEP_MS};
use argus_analyzer::simulate::power::{self, PlannerPolicy, PowerPolicy, PowerReport};
use argus_analyzer::simulate::power_gbdt;
use std::path::Path;
use std::time::Duration;

/// `forecast`: the model choice is refitted daily on the last 14 days (the weekly seasonal models need
/// 7 days and the backtest a fifth of the window).
const REFIT_EVERY_STEPS: usize = DAY_STEPS;
const FIT_WINDOW_STEPS: usize = 14 * DAY_STEPS;

pub fn run(path: &Path, args: &Args) -> Result<()> {
    let series = demand::read(path, ReadOptions { gpus_per_node: args.gpus_per_node, total: args.total })?;
    let settings = match args.ces_settings.as_deref() {
        Some(s) => s.to_string(),
        None if is_helios_file(path)? => "philly".into(),
        None => "earth".into(),
    };
    let ces = match settings.as_str() {
        "philly" => CesParams::PHILLY,
        "earth" => CesParams::EARTH,
        other => bail!("--ces-settings: unknown `{other}`, expected philly or earth"),
    };
    let started = std::time::Instant::now();
    let boot = args.boot.unwrap_or(Duration::ZERO);
    let report = simulate(&series, &args.policy, ces, &planner_config(args), args.horizon, boot)?;
    print(&report, &settings, started.elapsed());
    if let Some(out) = &args.json {
        std::fs::write(out, report.to_json()).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(())
}

/// The planner's settings from the command line: its defaults unless given, capped at the fleet by the
/// simulator.
fn planner_config(args: &Args) -> PlannerConfig {
    PlannerConfig {
        target_utilization: args.target_utilization,
        reserve_fraction: args.reserve,
        scale_down_margin: args.scale_down_margin,
        scale_up_cooldown: args.scale_up_cooldown,
        scale_down_cooldown: args.scale_down_cooldown,
        ..PlannerConfig::default()
    }
}

/// Runs one policy over the series' test window.
pub fn simulate(
    series: &DemandSeries,
    policy: &str,
    ces: CesParams,
    planner: &PlannerConfig,
    horizon: Option<Duration>,
    boot: Duration,
) -> Result<PowerReport> {
    let window = series.test_window().context("the series needs 14 whole days to test on and a day before them")?;
    let mut policy: Box<dyn PowerPolicy> = match policy {
        "reactive" => Box::new(Ces::new(ces, None)),
        "ces" => {
            let t0 = series.start_ms + window.start as i64 * STEP_MS;
            let prediction = power_gbdt::fit_predict(
                series.start_ms,
                &series.demand[..window.start],
                t0,
                &series.demand[window.clone()],
            )?;
            Box::new(Ces::new(ces, Some(prediction)))
        }
        "forecast" => {
            let horizon = horizon.unwrap_or(Duration::from_secs(3600));
            let steps = (horizon.as_millis() as u64).div_ceil(STEP_MS as u64).max(1) as usize;
            let max = series.total.iter().copied().fold(0.0, f64::max) as u64;
            let config = PlannerConfig { max_capacity: Some(max), ..planner.clone() };
            // Every model but the LSTM, whose training per refit would take the simulation from seconds to
            // hours on a CPU.
            let models = MODELS.iter().map(|(n, _)| n.to_string()).filter(|n| n != "lstm").collect();
            let model = Selected::with_models(ModelConfig { horizon: steps, step_ms: STEP_MS }, models);
            Box::new(PlannerPolicy::new(config, Box::new(model), steps, REFIT_EVERY_STEPS, FIT_WINDOW_STEPS)?)
        }
        other => bail!("--policy: unknown `{other}` with --demand, expected reactive, ces or forecast"),
    };
    power::run(series, policy.as_mut(), boot).map_err(anyhow::Error::from)
}

fn is_helios_file(path: &Path) -> Result<bool> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.lines().next().is_some_and(|h| h.trim() == "time,active,total"))
}

fn print(r: &PowerReport, settings: &str, took: Duration) {
    println!("policy                       {}", r.policy);
    if let Some(f) = &r.forecaster {
        println!("forecaster                   {f}");
    }
    println!("ces settings                 {settings}");
    println!(
        "test window                  {} steps of 10 min from {} (boot {} s)",
        r.steps,
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(r.test_start_ms).unwrap_or(0))
        ),
        r.boot_seconds
    );
    println!(
        "powered-off node-hours       {:.0} ({:.1} of {:.1} nodes off on average; demand {:.1})",
        r.powered_off_node_hours, r.powered_off_mean, r.total_mean, r.demand_mean
    );
    println!("shortfall node-minutes       {:.0}", r.shortfall_node_minutes);
    println!("power-ups                    {}", r.power_ups);
    println!("utilisation of powered       {:.1} %", r.utilisation_of_powered * 100.0);
    println!("simulated in                 {:.2} s", took.as_secs_f64());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Helios' Philly file at 10-minute steps (its README says how it was made).
    const PHILLY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ces/philly_node_sequence_10m.csv");

    fn philly() -> DemandSeries {
        demand::read(Path::new(PHILLY), ReadOptions::default()).unwrap()
    }

    #[test]
    fn ces_on_philly_is_deterministic_and_boot_only_adds_shortfall() {
        let s = philly();
        let p = PlannerConfig::default();
        let ces = simulate(&s, "ces", CesParams::PHILLY, &p, None, Duration::ZERO).unwrap();
        let again = simulate(&s, "ces", CesParams::PHILLY, &p, None, Duration::ZERO).unwrap();
        assert_eq!(ces, again);
        let reactive = simulate(&s, "reactive", CesParams::PHILLY, &p, None, Duration::ZERO).unwrap();
        assert_eq!(ces.steps, 14 * DAY_STEPS);
        // The same test window as Helios: 2017-12-01 to 2017-12-14.
        assert_eq!(ces.test_start_ms, 1_512_086_400_000);
        assert!(reactive.powered_off_node_hours > 0.0 && ces.powered_off_node_hours > 0.0);
        let boot = simulate(&s, "ces", CesParams::PHILLY, &p, None, Duration::from_secs(300)).unwrap();
        assert!(boot.shortfall_node_minutes >= ces.shortfall_node_minutes);
    }

    /// Helios' rule fed Helios' own forecast gives Helios' figures exactly.
    #[test]
    fn ces_rule_on_peer_forecast_reproduces_peer_figures() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ces/peer_prediction.csv");
        let text = std::fs::read_to_string(path).unwrap();
        let prediction: Vec<f64> =
            text.lines().skip(1).map(|l| l.split(',').nth(1).unwrap().parse().unwrap()).collect();
        assert_eq!(prediction.len(), 14 * DAY_STEPS);
        let mut ces = Ces::new(CesParams::PHILLY, Some(prediction));
        let r = power::run(&philly(), &mut ces, Duration::ZERO).unwrap();
        assert_eq!(r.powered_off_node_hours.round(), 33_634.0);
        assert_eq!(r.shortfall_node_minutes, 500.0);
        assert_eq!(r.power_ups, 7);
        assert_eq!(format!("{:.3}", r.utilisation_of_powered), "0.906");
        assert_eq!(format!("{:.2}", r.powered_off_mean), "100.10");
    }

    #[test]
    fn unknown_policy_is_named() {
        let e = simulate(&philly(), "static", CesParams::PHILLY, &PlannerConfig::default(), None, Duration::ZERO);
        assert_eq!(
            e.unwrap_err().to_string(),
            "--policy: unknown `static` with --demand, expected reactive, ces or forecast"
        );
    }
}
