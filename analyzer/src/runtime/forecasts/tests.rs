use super::*;

fn s(t: i64, v: f64) -> Sample {
    Sample { t, v }
}

#[test]
fn regular_fills_gaps_with_the_previous_value_and_starts_at_the_first() {
    let samples = [s(20, 1.0), s(30, 2.0), s(60, 3.0)];
    assert_eq!(regular(&samples, 0, 10, None), [(20, 1.0), (30, 2.0), (40, 2.0), (50, 2.0), (60, 3.0)]);
    // Resuming after a known value: the steps before the first new sample carry it.
    assert_eq!(regular(&samples[2..], 40, 10, Some(2.5)), [(40, 2.5), (50, 2.5), (60, 3.0)]);
    assert_eq!(regular(&[], 0, 10, Some(1.0)), []);
    assert!(regular(&[s(0, f64::NAN), s(10, 4.0)], 0, 10, None) == [(10, 4.0)]);
}

#[test]
fn a_short_history_is_forecast_by_the_naive_model_and_a_long_one_chosen_for() {
    let target = config::validate_targets(&[config::TargetConfig {
        name: "t".into(),
        query: "up".into(),
        horizon: Some("5m".into()),
        history: Some("6h".into()),
        ..Default::default()
    }])
    .unwrap()
    .remove(0);
    let config = ModelConfig { horizon: 5, step_ms: 60_000 };
    let values: Vec<f64> = (0..400).map(|i| 10.0 + (i as f64 / 30.0).sin()).collect();
    let short = fit(&target, config, Regular { start_ms: 0, step_ms: 60_000, values: &values[..60] }).unwrap();
    assert!(matches!(short, Model::Fallback(_)));
    assert_eq!(short.model_name(), "naive");
    let long = fit(&target, config, Regular { start_ms: 0, step_ms: 60_000, values: &values }).unwrap();
    let Model::Selected(sel) = &long else { panic!("not chosen for") };
    assert!(sel.selection().candidates.len() >= 2, "{:?}", sel.selection());
    // Saved and loaded, it forecasts the same.
    let back = Selected::load(sel.save().unwrap()).unwrap();
    assert_eq!(back.forecast(5).unwrap(), sel.forecast(5).unwrap());
    assert_eq!(back.selection(), sel.selection());
}
