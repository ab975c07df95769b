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
    expect![[r#"{"status":"success","data":[{"pool":"a100","timestamp_ms":1700000000000,"current":8,"demand":7.5,"forecast_upper":9.0,"base":10,"reservation":0,"desired":10,"recommended":10,"action":"scale_up","explanation":{"rule":"scale_up","sentence":"Recommend 10, up from 8: peak demand 9 at 90% target utilisation needs 10","arithmetic":"peak = max(now 7.5, forecast upper 9) = 9; ceil(9 / 0.9) = 10 for the peak; low-priority peak max(now 2, forecast upper 3) = 3 (critical 6) within 1 - 0.2: ceil(3 / (0.9 × 0.8)) = 5 → reservation 0; wanted 10 + 0 = 10; 10 > standing 8, no change yet → 10","demand_now":7.5,"forecast":null,"peak":9.0,"target_utilization":0.9,"reserve_fraction":0.2,"low_priority_split":true,"low_priority_peak":3.0,"critical_peak":6.0,"low_priority_forecast":null,"low_priority_capacity":5,"wanted":10,"min_capacity":0,"max_capacity":null,"clamped":null,"previous":8,"window_max":10,"scale_down_below":7.2,"scale_down_margin":0.1,"scale_up_cooldown_seconds":60.0,"scale_down_cooldown_seconds":600.0,"last_change_ms":1700000000000,"next_scale_up_ms":1700000060000,"next_scale_down_ms":1700000600000}}]}"#]]
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

/// One step of a planner holding `state`, at minute `minute` with the pool at `current`: the rule, the
/// recommendation, the sentence and the arithmetic, one per line.
fn explain(
    config: PlannerConfig,
    state: PlannerState,
    (minute, current): (f64, u64),
    demand: Outlook,
    low_priority: Option<Outlook>,
    expect: Expect,
) -> Recommendation {
    let mut planner = CapacityPlanner::new("p", config).unwrap();
    planner.restore(state);
    let input = PlanInput { timestamp_ms: (minute * 60_000.0) as i64, current, demand, low_priority };
    let r = planner.plan(&input);
    let e = r.explanation.clone().expect("the planner explains every recommendation");
    let rule = serde_json::to_value(e.rule).unwrap();
    let held = r.held_by.map(|h| format!(" held_by {h:?}")).unwrap_or_default();
    let out = format!(
        "{} -> {} {:?}{held}\n{}\n{}\n",
        rule.as_str().unwrap(),
        r.recommended,
        r.action,
        e.sentence,
        e.arithmetic
    );
    expect.assert_eq(&out);
    r
}

/// A standing recommendation `standing` that last changed at minute `at`, and `(minute, wanted)` seen
/// over the scale-down window.
fn standing(standing: u64, at: f64, recent: &[(f64, u64)]) -> PlannerState {
    let ms = |m: f64| (m * 60_000.0) as i64;
    PlannerState { standing: Some((standing, ms(at))), recent: recent.iter().map(|&(m, d)| (ms(m), d)).collect() }
}

fn level(v: f64) -> Outlook {
    Outlook { now: v, upper: v }
}

#[test]
fn explains_scale_up_with_the_reserve_taken_from_all_demand() {
    // The demo's case: a forecast peaking at 64.4 in a pool of 80 with the default settings and no
    // low-priority split wants 90, not 72: 20 % is kept free of the (all low-priority) demand.
    let f = Forecast { mean: vec![58.0, 60.0, 59.0], lower: vec![50.0, 52.5, 51.0], upper: vec![62.0, 64.4, 63.0] };
    let r = explain(
        PlannerConfig::default(),
        PlannerState::default(),
        (0.0, 80),
        Outlook::from_forecast(60.1, &f),
        None,
        expect![[r#"
            scale_up -> 90 ScaleUp
            Recommend 90, up from 80: peak demand 64.4 at 90% target utilisation needs 72, and 18 more keep 20% of it free for critical work (no low-priority split: all demand counts as low priority)
            peak = max(now 60.1, forecast upper 64.4) = 64.4; ceil(64.4 / 0.9) = 72 for the peak; no low-priority split, all 64.4 low priority within 1 - 0.2: ceil(64.4 / (0.9 × 0.8)) = 90 → reservation 18; wanted 72 + 18 = 90; 90 > standing 80, no change yet → 90
        "#]],
    );
    let e = r.explanation.unwrap();
    assert_eq!((e.peak, e.low_priority_peak, e.low_priority_capacity, e.wanted), (64.4, 64.4, 90, 90));
    assert_eq!((e.previous, e.clamped, e.critical_peak, e.low_priority_split), (80, None, None, false));
    // The change is the last one: the next scale-up a minute after it, the next scale-down ten.
    assert_eq!((e.last_change_ms, e.next_scale_up_ms, e.next_scale_down_ms), (Some(0), Some(60_000), Some(600_000)));
    assert_eq!((e.scale_up_cooldown_seconds, e.scale_down_cooldown_seconds, e.scale_down_margin), (60.0, 600.0, 0.1));
}

#[test]
fn explains_scale_up_held_by_cooldown() {
    let r = explain(
        plain(),
        standing(10, 0.0, &[]),
        (0.5, 10),
        level(12.0),
        None,
        expect![[r#"
            scale_up_held_by_cooldown -> 10 Hold held_by Cooldown
            Hold 10: 12 wanted (peak demand 12 at 100% target utilisation needs 12), but the last change was less than scale_up_cooldown 1m ago (30s left)
            peak = max(now 12, forecast upper 12) = 12; ceil(12 / 1) = 12 for the peak; no low-priority split, all 12 low priority within 1 - 0: ceil(12 / (1 × 1)) = 12 → reservation 0; wanted 12 + 0 = 12; 12 > standing 10, but last change 30s ago < scale_up_cooldown 1m → 10
        "#]],
    );
    assert_eq!(r.explanation.unwrap().next_scale_up_ms, Some(60_000));
}

#[test]
fn explains_scale_down() {
    explain(
        plain(),
        standing(20, 0.0, &[]),
        (30.0, 20),
        level(10.0),
        None,
        expect![[r#"
            scale_down -> 10 ScaleDown
            Recommend 10, down from 20: peak demand 10 at 100% target utilisation needs 10
            peak = max(now 10, forecast upper 10) = 10; ceil(10 / 1) = 10 for the peak; no low-priority split, all 10 low priority within 1 - 0: ceil(10 / (1 × 1)) = 10 → reservation 0; wanted 10 + 0 = 10; 10 < 20 × (1 - 0.1) = 18, last change 30m ago ≥ scale_down_cooldown 10m, most wanted over the last 10m 10 → 10
        "#]],
    );
}

#[test]
fn explains_scale_down_to_window_max() {
    // 16 was wanted 7 minutes ago: the scale-down stops there, though 12 is wanted now.
    let r = explain(
        plain(),
        standing(20, 0.0, &[(5.0, 16)]),
        (12.0, 20),
        level(12.0),
        None,
        expect![[r#"
            scale_down_to_window_max -> 16 ScaleDown
            Recommend 16, down from 20 only as far as the most wanted over the last 10m (scale-down window); 12 wanted now
            peak = max(now 12, forecast upper 12) = 12; ceil(12 / 1) = 12 for the peak; no low-priority split, all 12 low priority within 1 - 0: ceil(12 / (1 × 1)) = 12 → reservation 0; wanted 12 + 0 = 12; 12 < 20 × (1 - 0.1) = 18, last change 12m ago ≥ scale_down_cooldown 10m, most wanted over the last 10m 16 → 16
        "#]],
    );
    assert_eq!(r.explanation.unwrap().window_max, 16);
}

#[test]
fn explains_scale_down_within_margin() {
    explain(
        plain(),
        standing(20, 0.0, &[]),
        (30.0, 20),
        level(19.0),
        None,
        expect![[r#"
            scale_down_within_margin -> 20 Hold held_by Hysteresis
            Hold 20: 19 wanted is within scale_down_margin 10% of 20 (a scale-down needs less than 18)
            peak = max(now 19, forecast upper 19) = 19; ceil(19 / 1) = 19 for the peak; no low-priority split, all 19 low priority within 1 - 0: ceil(19 / (1 × 1)) = 19 → reservation 0; wanted 19 + 0 = 19; 19 ≥ 20 × (1 - 0.1) = 18 → 20
        "#]],
    );
}

#[test]
fn explains_scale_down_held_by_cooldown() {
    let r = explain(
        plain(),
        standing(20, 0.0, &[]),
        (5.0, 20),
        level(10.0),
        None,
        expect![[r#"
            scale_down_held_by_cooldown -> 20 Hold held_by Cooldown
            Hold 20: 10 wanted, but the last change was less than scale_down_cooldown 10m ago (5m left)
            peak = max(now 10, forecast upper 10) = 10; ceil(10 / 1) = 10 for the peak; no low-priority split, all 10 low priority within 1 - 0: ceil(10 / (1 × 1)) = 10 → reservation 0; wanted 10 + 0 = 10; 10 < 20 × (1 - 0.1) = 18, but last change 5m ago < scale_down_cooldown 10m → 20
        "#]],
    );
    let e = r.explanation.unwrap();
    assert_eq!((e.last_change_ms, e.next_scale_down_ms), (Some(0), Some(600_000)));
}

#[test]
fn explains_scale_down_held_by_window() {
    // 19 was wanted 5 minutes ago, within the margin of 20.
    explain(
        plain(),
        standing(20, 0.0, &[(25.0, 19)]),
        (30.0, 20),
        level(10.0),
        None,
        expect![[r#"
            scale_down_held_by_window -> 20 Hold held_by Window
            Hold 20: 10 wanted now, but 19 was wanted within the last 10m (scale-down window), within scale_down_margin 10% of 20
            peak = max(now 10, forecast upper 10) = 10; ceil(10 / 1) = 10 for the peak; no low-priority split, all 10 low priority within 1 - 0: ceil(10 / (1 × 1)) = 10 → reservation 0; wanted 10 + 0 = 10; 10 < 20 × (1 - 0.1) = 18, but the most wanted over the last 10m is 19 ≥ 18 → 20
        "#]],
    );
}

#[test]
fn explains_clamped_min() {
    let r = explain(
        PlannerConfig { min_capacity: 4, ..plain() },
        PlannerState::default(),
        (0.0, 6),
        level(1.0),
        None,
        expect![[r#"
            clamped_min -> 4 ScaleDown
            Recommend 4, min_capacity: the demand wants only 1 (peak demand 1 at 100% target utilisation needs 1)
            peak = max(now 1, forecast upper 1) = 1; ceil(1 / 1) = 1 for the peak; no low-priority split, all 1 low priority within 1 - 0: ceil(1 / (1 × 1)) = 1 → reservation 0; wanted 1 + 0 = 1; raised to min_capacity 4; 4 < 6 × (1 - 0.1) = 5.4, no change yet, most wanted over the last 10m 4 → 4
        "#]],
    );
    let e = r.explanation.unwrap();
    assert_eq!((e.wanted, r.desired, e.clamped, e.min_capacity), (1, 4, Some(Bound::Min), 4));
}

#[test]
fn explains_clamped_max() {
    let r = explain(
        PlannerConfig { max_capacity: Some(8), ..plain() },
        PlannerState::default(),
        (0.0, 4),
        level(100.0),
        None,
        expect![[r#"
            clamped_max -> 8 ScaleUp
            Recommend 8, max_capacity: the demand wants 100 (peak demand 100 at 100% target utilisation needs 100)
            peak = max(now 100, forecast upper 100) = 100; ceil(100 / 1) = 100 for the peak; no low-priority split, all 100 low priority within 1 - 0: ceil(100 / (1 × 1)) = 100 → reservation 0; wanted 100 + 0 = 100; cut to max_capacity 8; 8 > standing 4, no change yet → 8
        "#]],
    );
    let e = r.explanation.unwrap();
    assert_eq!((e.wanted, r.desired, e.clamped, e.max_capacity), (100, 8, Some(Bound::Max), Some(8)));
}

#[test]
fn explains_unchanged_with_a_low_priority_split() {
    // Low-priority peak 58 must fit within 80 % of the capacity at 90 %: 58 / 0.72 = 80.6 → 81, 9 above
    // the 72 the whole peak needs; the critical 6.4 may use the reserve.
    let r = explain(
        PlannerConfig::default(),
        standing(81, 0.0, &[]),
        (30.0, 81),
        Outlook { now: 60.0, upper: 64.4 },
        Some(Outlook { now: 50.0, upper: 58.0 }),
        expect![[r#"
            unchanged -> 81 Hold
            Keep 81: peak demand 64.4 at 90% target utilisation needs 72, and 9 more keep 20% of it from the low-priority peak 58 for critical work
            peak = max(now 60, forecast upper 64.4) = 64.4; ceil(64.4 / 0.9) = 72 for the peak; low-priority peak max(now 50, forecast upper 58) = 58 (critical 6.4) within 1 - 0.2: ceil(58 / (0.9 × 0.8)) = 81 → reservation 9; wanted 72 + 9 = 81; 81 = standing 81 → 81
        "#]],
    );
    let e = r.explanation.unwrap();
    assert!(e.low_priority_split);
    assert_eq!((e.low_priority_peak, e.low_priority_capacity), (58.0, 81));
    assert!((e.critical_peak.unwrap() - 6.4).abs() < 1e-9, "{:?}", e.critical_peak);
}

#[test]
fn forecast_peak_is_the_step_where_the_upper_band_is_highest() {
    let f = Forecast { mean: vec![5.0, 6.0, 5.5], lower: vec![4.0, 5.0, 4.0], upper: vec![7.0, 8.0, f64::NAN] };
    let p = ForecastPeak::from_forecast(&f, 600_000, 60_000, "ets").unwrap();
    assert_eq!(
        p,
        ForecastPeak { model: "ets".into(), horizon_seconds: 180.0, at_ms: 720_000, mean: 6.0, lower: 5.0, upper: 8.0 }
    );
    assert_eq!(p.upper, Outlook::from_forecast(0.0, &f).upper, "the peak the planner sized for");
    assert_eq!(ForecastPeak::from_forecast(&Forecast::default(), 0, 60_000, "naive"), None);
    let mut planner = CapacityPlanner::new("p", plain()).unwrap();
    let mut r = planner.plan(&PlanInput { timestamp_ms: 0, current: 0, demand: level(1.0), low_priority: None });
    r.explain_forecast(Some(p.clone()), Some(p.clone()));
    let e = r.explanation.unwrap();
    assert_eq!((e.forecast, e.low_priority_forecast), (Some(p), None), "no split, no low-priority forecast");
}

#[test]
fn a_recommendation_without_an_explanation_still_reads() {
    // Saved or sent by an earlier version.
    let old = r#"{"pool":"a100","timestamp_ms":1,"current":8,"demand":7.5,"forecast_upper":9.0,"base":10,"reservation":0,"desired":10,"recommended":10,"action":"scale_up"}"#;
    let r: Recommendation = serde_json::from_str(old).unwrap();
    assert_eq!((r.recommended, &r.explanation), (10, &None));
    assert_eq!(serde_json::to_string(&r).unwrap(), old, "and is written back as it was");
}
