//! The univariate detectors a rule may name, by name: how to make one from the rule's parameters,
//! and how to bring one back from its saved state.

use crate::detect::Direction;
use crate::detect::StreamDetector;
use crate::detect::ewma::{Ewma, EwmaParams};
use crate::detect::univariate::{Univariate as Seasonal, UnivariateParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// A streaming detector whose state can be saved.
pub trait Univariate: StreamDetector {
    fn save(&self) -> serde_json::Value;
}

impl<T: StreamDetector + Serialize> Univariate for T {
    fn save(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

type Make = fn(Option<&toml::Value>, Direction, f64) -> Result<Box<dyn Univariate>, String>;

/// One registered detector.
pub struct Entry {
    pub name: &'static str,
    /// From the rule's `[analyzer.rule.params.<name>]` (if any), its direction and minimum deviation.
    make: Make,
    load: fn(serde_json::Value) -> Result<Box<dyn Univariate>, String>,
}

/// Every univariate detector, in the order the ensemble lists them.
pub static UNIVARIATE: &[Entry] = &[
    Entry { name: "threshold", make: make_threshold, load: restore::<Seasonal> },
    Entry { name: "ewma", make: make_ewma, load: restore::<Ewma> },
];

pub fn find(name: &str) -> Option<&'static Entry> {
    UNIVARIATE.iter().find(|e| e.name == name)
}

pub fn names() -> impl Iterator<Item = &'static str> {
    UNIVARIATE.iter().map(|e| e.name)
}

pub fn make(
    name: &str,
    params: Option<&toml::Value>,
    direction: Direction,
    min_deviation: f64,
) -> Result<Box<dyn Univariate>, String> {
    let e = find(name).ok_or_else(|| format!("unknown detector {name:?}"))?;
    (e.make)(params, direction, min_deviation)
}

pub fn load(name: &str, state: serde_json::Value) -> Result<Box<dyn Univariate>, String> {
    let e = find(name).ok_or_else(|| format!("unknown detector {name:?}"))?;
    (e.load)(state)
}

fn params<P: DeserializeOwned + Default>(v: Option<&toml::Value>) -> Result<P, String> {
    match v {
        Some(v) => super::config::params_table(v.clone()),
        None => Ok(P::default()),
    }
}

fn restore<T: Univariate + DeserializeOwned + 'static>(v: serde_json::Value) -> Result<Box<dyn Univariate>, String> {
    serde_json::from_value::<T>(v).map(|d| Box::new(d) as Box<dyn Univariate>).map_err(|e| e.to_string())
}

fn make_ewma(v: Option<&toml::Value>, direction: Direction, min_deviation: f64) -> Result<Box<dyn Univariate>, String> {
    let mut p: EwmaParams = params(v)?;
    if !(p.alpha > 0.0 && p.alpha <= 1.0) {
        return Err(format!("alpha = {} must be in (0, 1]", p.alpha));
    }
    if p.k.is_nan() || p.k <= 0.0 {
        return Err(format!("k = {} must be above 0", p.k));
    }
    p.direction = direction;
    p.min_deviation = p.min_deviation.max(min_deviation);
    Ok(Box::new(Ewma::new(p)))
}

/// The longest a surprise may be asked to last, in points.
const MAX_SUSTAIN_POINTS: usize = 1000;

/// `threshold`: the seasonal dynamic threshold with the anomaly likelihood and the record stage — the
/// detector `argus eval nab` measures.
fn make_threshold(
    v: Option<&toml::Value>,
    direction: Direction,
    min_deviation: f64,
) -> Result<Box<dyn Univariate>, String> {
    let mut p: UnivariateParams = params(v)?;
    if p.threshold.k.is_nan() || p.threshold.k <= 0.0 {
        return Err(format!("threshold.k = {} must be above 0", p.threshold.k));
    }
    if p.threshold.min_period < 2 || p.threshold.min_period > p.threshold.max_period {
        return Err(format!(
            "threshold.min_period = {} and max_period = {} must satisfy 2 <= min <= max",
            p.threshold.min_period, p.threshold.max_period
        ));
    }
    let n = &p.novelty;
    for (key, value) in [("tolerance", n.tolerance), ("min_surprise", n.min_surprise), ("score", n.score)] {
        if !(value.is_finite() && value >= 0.0) {
            return Err(format!("novelty.{key} = {value} must be a number at or above 0"));
        }
    }
    if !(p.sustain.gain.is_finite() && p.sustain.gain >= 0.0) {
        return Err(format!("sustain.gain = {} must be a number at or above 0", p.sustain.gain));
    }
    if !(p.stuck.factor.is_finite() && p.stuck.factor >= 0.0) {
        return Err(format!("stuck.factor = {} must be a number at or above 0", p.stuck.factor));
    }
    // Every watched series keeps its last `points` surprises.
    if p.sustain.points > MAX_SUSTAIN_POINTS {
        return Err(format!("sustain.points = {} must be at most {MAX_SUSTAIN_POINTS}", p.sustain.points));
    }
    p.spot.validate()?;
    p.art.validate().map_err(|e| format!("art.{e}"))?;
    if !(p.art_weight.is_finite() && p.art_weight >= 0.0) {
        return Err(format!("art_weight = {} must be a number at or above 0", p.art_weight));
    }
    p.threshold.direction = direction;
    p.threshold.min_abs = p.threshold.min_abs.max(min_deviation);
    Ok(Box::new(Seasonal::new(p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn threshold(params: &str) -> Result<Box<dyn Univariate>, String> {
        let v: toml::Value = toml::from_str(params).unwrap();
        make("threshold", Some(&v), Direction::Both, 0.0)
    }

    #[test]
    fn threshold_params_are_checked_and_named() {
        assert!(threshold("[novelty]\ntolerance = 0.02").is_ok());
        assert!(threshold("[novelty]\ntolerance = 0.0").is_ok(), "0 turns the check off");
        let err = threshold("[novelty]\ntolerance = -0.1").err().unwrap();
        assert_eq!(err, "novelty.tolerance = -0.1 must be a number at or above 0");
        let err = threshold("[novelty]\nscore = nan").err().unwrap();
        assert!(err.starts_with("novelty.score = NaN"), "{err}");
        let err = threshold("[novelty]\nwidth = 1").err().unwrap();
        assert!(err.contains("width"), "{err}");
        assert!(threshold("[sustain]\npoints = 0").is_ok(), "0 turns the stage off");
        let err = threshold("[sustain]\npoints = 5000").err().unwrap();
        assert_eq!(err, "sustain.points = 5000 must be at most 1000");
        let err = threshold("[sustain]\ngain = -1.0").err().unwrap();
        assert_eq!(err, "sustain.gain = -1 must be a number at or above 0");
        assert!(threshold("[stuck]\nfactor = 0.0").is_ok(), "0 turns the stage off");
        let err = threshold("[stuck]\nfactor = -2.0").err().unwrap();
        assert_eq!(err, "stuck.factor = -2 must be a number at or above 0");
        let err = threshold("[sustain]\npoints = -3").err().unwrap();
        assert_eq!(err, "sustain.points: invalid value: integer `-3`, expected usize");
        let err = threshold("[threshold]\nk = 0.0").err().unwrap();
        assert_eq!(err, "threshold.k = 0 must be above 0");
        let err = threshold("[art]\nrho = 1.0").err().unwrap();
        assert_eq!(err, "art.rho = 1 must be in (0, 1)");
        let err = threshold("art_weight = -0.5").err().unwrap();
        assert_eq!(err, "art_weight = -0.5 must be a number at or above 0");
        assert!(threshold("art_weight = 0.0").is_ok(), "0 turns the resonance family off");
    }
}
