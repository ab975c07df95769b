use super::*;
use expect_test::{Expect, expect};

/// Runs the planner over `steps` of `minute current demand upper [low_now low_upper]` and prints one line
/// per step: `minute: base+reservation=desired -> recommended action [held_by]`.
fn check(config: PlannerConfig, steps: &str, expect: Expect) {
    let mut planner = CapacityPlanner::new("p", config).unwrap();
    let mut out = String::new();
    for line in steps.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let f: Vec<f64> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
        let input = PlanInput {
            timestamp_ms: (f[0] * 60_000.0) as i64,
            current: f[1] as u64,
            demand: Outlook { now: f[2], upper: f[3] },
            low_priority: (f.len() == 6).then(|| Outlook { now: f[4], upper: f[5] }),
        };
        let r = planner.plan(&input);
        let held = r.held_by.map(|h| format!(" {h:?}")).unwrap_or_default();
        out += &format!(
            "{}: {}+{}={} -> {} {:?}{held}\n",
            f[0], r.base, r.reservation, r.desired, r.recommended, r.action
        );
    }
    expect.assert_eq(&out);
}

fn plain() -> PlannerConfig {
    PlannerConfig { target_utilization: 1.0, reserve_fraction: 0.0, ..PlannerConfig::default() }
}

#[test]
fn sizing_target_and_reservation() {
    // 9 units at 90 % -> 10; all low priority: 9 / (0.9 * 0.8) = 12.5 -> 13, so 3 reserved.
    // Critical demand filling the reserve costs nothing: low 6 / 0.72 = 8.3 -> 9 < 10.
    // The upper band counts when above demand now; demand now counts when above the band.
    check(
        PlannerConfig {
            scale_up_cooldown: Duration::ZERO,
            scale_down_cooldown: Duration::ZERO,
            scale_down_margin: 0.0,
            ..PlannerConfig::default()
        },
        "0 0 9 9
         1 0 9 9 6 6
         2 0 4 9 0 0
         3 0 12 9 0 0",
        expect![[r#"
            0: 10+3=13 -> 13 ScaleUp
            1: 10+0=10 -> 10 ScaleUp
            2: 10+0=10 -> 10 ScaleUp
            3: 14+0=14 -> 14 ScaleUp
        "#]],
    );
}

#[test]
fn hysteresis_holds_small_drops() {
    // Margin 10 % of 20: 18 is held; 17 is below the margin but 19 was wanted within the window; at 40
    // the window holds only 17 and the planner goes down to it.
    check(
        plain(),
        "0 20 20 20
         20 20 19 19
         21 20 18 18
         22 20 17 17
         40 20 17 17",
        expect![[r#"
            0: 20+0=20 -> 20 Hold
            20: 19+0=19 -> 20 Hold Hysteresis
            21: 18+0=18 -> 20 Hold Hysteresis
            22: 17+0=17 -> 20 Hold Window
            40: 17+0=17 -> 17 ScaleDown
        "#]],
    );
}

#[test]
fn cooldowns_are_separate_for_up_and_down() {
    // Up 1 min after a change, down 10 min after any change, down to the highest want of the last 10 min.
    // The spike at 0 is followed at once; the drop at 1 waits for the cooldown, and at 10 for the window
    // (20 was wanted at 0) until 10.5; the rise at 11 waits for 11.5, one minute after the drop; the drop
    // at 13 waits for the cooldown, the one at 30 goes through.
    check(
        plain(),
        "0 10 20 20
         1 20 10 10
         10 20 10 10
         10.5 20 10 10
         11 10 15 15
         11.5 10 15 15
         13 15 5 5
         30 15 5 5",
        expect![[r#"
            0: 20+0=20 -> 20 ScaleUp
            1: 10+0=10 -> 20 Hold Cooldown
            10: 10+0=10 -> 20 Hold Window
            10.5: 10+0=10 -> 10 ScaleDown
            11: 15+0=15 -> 10 Hold Cooldown
            11.5: 15+0=15 -> 15 ScaleUp
            13: 5+0=5 -> 15 Hold Cooldown
            30: 5+0=5 -> 5 ScaleDown
        "#]],
    );
}

#[test]
fn oscillating_demand_does_not_flap() {
    // Demand alternating every minute between 10 and 14 for half an hour: one scale-up, no scale-down.
    let steps: String = (0..30).map(|m| format!("{m} 10 {d} {d}\n", d = if m % 2 == 0 { 10 } else { 14 })).collect();
    let mut planner = CapacityPlanner::new("p", plain()).unwrap();
    let mut changes = 0;
    let mut last = 10;
    for line in steps.lines() {
        let f: Vec<f64> = line.split_whitespace().map(|x| x.parse().unwrap()).collect();
        let input = PlanInput {
            timestamp_ms: (f[0] * 60_000.0) as i64,
            current: last,
            demand: Outlook { now: f[2], upper: f[3] },
            low_priority: None,
        };
        let r = planner.plan(&input);
        changes += usize::from(r.recommended != last);
        last = r.recommended;
    }
    assert_eq!((changes, last), (1, 14));
}

#[test]
fn bounds_and_bad_config() {
    let config = PlannerConfig { min_capacity: 4, max_capacity: Some(8), ..plain() };
    check(
        config,
        "0 0 0 0
         1 4 100 100",
        expect![[r#"
            0: 0+0=4 -> 4 ScaleUp
            1: 100+0=8 -> 8 ScaleUp
        "#]],
    );
    let bad = |c: PlannerConfig| CapacityPlanner::new("p", c).unwrap_err().to_string();
    assert_eq!(
        bad(PlannerConfig { target_utilization: 0.0, ..plain() }),
        "target_utilization must be in (0, 1], got 0"
    );
    assert_eq!(bad(PlannerConfig { reserve_fraction: 1.0, ..plain() }), "reserve_fraction must be in [0, 1), got 1");
    assert_eq!(
        bad(PlannerConfig { min_capacity: 5, max_capacity: Some(2), ..plain() }),
        "max_capacity 2 is below min_capacity 5"
    );
}

#[test]
fn json_shapes() {
    let mut planner = CapacityPlanner::new("a100", PlannerConfig::default()).unwrap();
    let input = PlanInput {
        timestamp_ms: 1_700_000_000_000,
        current: 8,
        demand: Outlook { now: 7.5, upper: 9.0 },
        low_priority: Some(Outlook { now: 2.0, upper: 3.0 }),
    };
    let r = planner.plan(&input);
    expect![[r#"{"status":"success","data":[{"pool":"a100","timestamp_ms":1700000000000,"current":8,"demand":7.5,"forecast_upper":9.0,"base":10,"reservation":0,"desired":10,"recommended":10,"action":"scale_up"}]}"#]]
    .assert_eq(&serde_json::to_string(&CapacityReport::new(vec![r.clone()])).unwrap());
    expect![[r#"{"pools":{"a100":{"recommended":10,"desired":10,"current":8}}}"#]]
        .assert_eq(&serde_json::to_string(&KedaMetrics::from_recommendations([&r])).unwrap());
}

#[test]
fn outlook_takes_the_top_of_the_band() {
    let f = Forecast { mean: vec![1.0, 2.0], lower: vec![0.0, 1.0], upper: vec![3.0, f64::NAN] };
    assert_eq!(Outlook::from_forecast(2.0, &f), Outlook { now: 2.0, upper: 3.0 });
    assert_eq!(Outlook::from_forecast(2.0, &Forecast::default()), Outlook { now: 2.0, upper: 2.0 });
}
