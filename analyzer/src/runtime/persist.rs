//! Detector state on disk: one JSON file per rule under the analyzer's state directory, replaced
//! atomically (written beside, synced, renamed). The format is in docs/format/analyzer-state.md.
//! State saved for a different query, detector list, step, detector parameters, direction or minimum
//! deviation is not reused: the rule changed, so its detectors start again (warmed on history).

use super::alerts::Firing;
use super::config::Rule;
use super::{RuleState, Tracked, detectors};
use argus_model::Labels;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};

/// The version this build writes. Version 2 added the univariate detector's alert level (its SPOT state),
/// version 3 its adaptive-resonance detector, version 4 its stuck-value stage.
pub const VERSION: u32 = 4;

/// The versions this build reads: a version 1 file's detectors resume without SPOT state and calibrate it
/// on the points that follow; a version 1 or 2 file's resume without resonance state, its detector starting
/// its probation; a version 1 to 3 file's resume with the stuck-value stage off, as they ran.
pub const VERSIONS_READ: [u32; 4] = [1, 2, 3, 4];

/// What [`load`] reads of a saved file (its `rule` name, written for people, is not needed).
#[derive(Deserialize)]
struct File {
    version: u32,
    query: String,
    detectors: Vec<String>,
    interval_ms: i64,
    /// Absent from files written before it was kept: those resume as before.
    #[serde(default)]
    settings: Option<String>,
    last_step: Option<i64>,
    series: Vec<SeriesState>,
}

#[derive(Serialize, Deserialize)]
struct SeriesState {
    labels: Vec<(String, String)>,
    detectors: Vec<serde_json::Value>,
    window: Vec<(i64, f64)>,
    last_seen: i64,
    anomalous_steps: u32,
    normal_steps: u32,
    firing: Option<Firing>,
}

/// What a rule's detectors were made with beyond their names: every detector's parameters, the direction
/// and the minimum deviation, which the detectors' saved states hold copies of. A change to any of them
/// must not be ignored by resuming states made under the old values.
fn settings(rule: &Rule) -> String {
    serde_json::to_string(&(&rule.params, rule.direction, rule.min_deviation)).unwrap_or_default()
}

fn path(dir: &Path, rule: &str) -> PathBuf {
    dir.join(format!("{rule}.json"))
}

/// What [`save`] writes: [`File`]'s fields, with the series serialized one at a time as the file is
/// written. Building every series' state first (each detector's state a `serde_json::Value`, a
/// threshold detector's warm-up buffer alone 640 numbers) held ~300 MB at once for a fleet of
/// 37,000 GPUs: a step in resident memory at every checkpoint.
#[derive(Serialize)]
struct FileOut<'a> {
    version: u32,
    rule: &'a str,
    query: &'a str,
    detectors: &'a [String],
    interval_ms: i64,
    settings: String,
    last_step: Option<i64>,
    series: SeriesOut<'a>,
}

struct SeriesOut<'a>(&'a HashMap<Labels, Tracked>);

impl Serialize for SeriesOut<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (labels, t) in self.0 {
            seq.serialize_element(&SeriesState {
                labels: labels.iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
                detectors: t.detectors.iter().map(|d| d.save()).collect(),
                window: t.window.iter().copied().collect(),
                last_seen: t.last_seen,
                anomalous_steps: t.anomalous_steps,
                normal_steps: t.normal_steps,
                firing: t.firing.clone(),
            })?;
        }
        seq.end()
    }
}

pub fn save(dir: &Path, r: &RuleState) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let file = FileOut {
        version: VERSION,
        rule: &r.rule.name,
        query: &r.rule.query,
        detectors: &r.rule.univariate,
        interval_ms: r.rule.interval.as_millis() as i64,
        settings: settings(&r.rule),
        last_step: r.last_step,
        series: SeriesOut(&r.series),
    };
    let target = path(dir, &r.rule.name);
    let tmp = target.with_extension("json.tmp");
    let mut f = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&tmp)?);
    serde_json::to_writer(&mut f, &file).map_err(std::io::Error::other)?;
    let f = f.into_inner().map_err(|e| e.into_error())?;
    f.sync_all()?;
    std::fs::rename(&tmp, &target)
}

/// The saved state of `rule`, when there is one that fits it.
pub fn load(dir: &Path, rule: &Rule) -> Option<(Option<i64>, HashMap<Labels, Tracked>)> {
    let p = path(dir, &rule.name);
    let text = match std::fs::read(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            tracing::warn!(file = %p.display(), %error, "Analyzer state unreadable; starting afresh");
            return None;
        }
    };
    let file: File = match serde_json::from_slice(&text) {
        Ok(f) => f,
        Err(error) => {
            tracing::warn!(file = %p.display(), %error, "Analyzer state is not valid; starting afresh");
            return None;
        }
    };
    if !VERSIONS_READ.contains(&file.version) {
        tracing::info!(file = %p.display(), version = file.version, "Analyzer state of another version; starting afresh");
        return None;
    }
    if file.query != rule.query
        || file.detectors != rule.univariate
        || file.interval_ms != rule.interval.as_millis() as i64
        || file.settings.is_some_and(|s| s != settings(rule))
    {
        tracing::info!(rule = %rule.name, "The rule changed since its state was saved; its detectors start afresh");
        return None;
    }
    let mut series = HashMap::with_capacity(file.series.len());
    for s in file.series {
        let dets: Result<Vec<_>, String> =
            rule.univariate.iter().zip(s.detectors).map(|(name, state)| detectors::load(name, state)).collect();
        match dets {
            Ok(detectors) if detectors.len() == rule.univariate.len() => {
                series.insert(
                    Labels::from_pairs(s.labels),
                    Tracked {
                        detectors,
                        window: VecDeque::from(s.window),
                        last_seen: s.last_seen,
                        settled_from: Some(i64::MIN),
                        anomalous_steps: s.anomalous_steps,
                        normal_steps: s.normal_steps,
                        firing: s.firing,
                    },
                );
            }
            Ok(_) => {}
            Err(error) => {
                tracing::warn!(rule = %rule.name, %error, "A saved detector could not be restored; starting afresh");
                return None;
            }
        }
    }
    tracing::info!(rule = %rule.name, series = series.len(), "Analyzer state restored");
    Some((file.last_step, series))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::config::Config;

    fn rule(extra: &str) -> Rule {
        let text = format!(
            "[[rule]]\nname = \"temp\"\nquery = \"gpu_temperature_celsius\"\ndetectors = [\"threshold\"]\n{extra}"
        );
        let c: Config = toml::from_str(&text).unwrap();
        c.validate().unwrap().rules.remove(0)
    }

    #[test]
    fn state_saved_under_other_detector_settings_is_not_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let saved = rule("direction = \"above\"\n[rule.params.threshold.sustain]\npoints = 6\n");
        let state = RuleState { rule: saved.clone(), last_step: Some(1_000), series: HashMap::new() };
        save(dir.path(), &state).unwrap();
        assert_eq!(load(dir.path(), &saved).map(|(step, _)| step), Some(Some(1_000)));
        for changed in [
            "direction = \"below\"\n[rule.params.threshold.sustain]\npoints = 6\n",
            "direction = \"above\"\n[rule.params.threshold.sustain]\npoints = 8\n",
            "direction = \"above\"\nmin_deviation = 2.0\n[rule.params.threshold.sustain]\npoints = 6\n",
        ] {
            assert!(load(dir.path(), &rule(changed)).is_none(), "{changed}");
        }
        // A file from before the settings were kept resumes as it always did.
        let file = path(dir.path(), "temp");
        let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        json.as_object_mut().unwrap().remove("settings");
        std::fs::write(&file, serde_json::to_vec(&json).unwrap()).unwrap();
        assert!(load(dir.path(), &rule("direction = \"below\"\n")).is_some());
    }

    /// A rule state with one series whose `threshold` detector, made with `params`, has seen `points` noisy
    /// points.
    fn state_after(points: i64, params: &str) -> RuleState {
        let rule = rule("");
        let params: toml::Value = toml::from_str(params).unwrap();
        let mut detector = detectors::make("threshold", Some(&params), rule.direction, 0.0).unwrap();
        for i in 0..points {
            detector.update(i * 10_000, 50.0 + ((i * 7919) % 13) as f64 / 13.0);
        }
        let tracked = Tracked {
            detectors: vec![detector],
            window: VecDeque::new(),
            last_seen: points * 10_000,
            settled_from: Some(i64::MIN),
            anomalous_steps: 0,
            normal_steps: 1,
            firing: None,
        };
        let labels = Labels::from_pairs(vec![("gpu".to_string(), "0".to_string())]);
        RuleState { rule, last_step: Some(points * 10_000), series: HashMap::from([(labels, tracked)]) }
    }

    #[test]
    fn spot_state_is_saved_and_a_version_1_file_still_resumes() {
        let dir = tempfile::tempdir().unwrap();
        // Warm-up (640 points) and calibration (1,000) over: SPOT runs and is saved. SPOT on the stages alone:
        // this periodic series gives the ensemble with resonance no tail to calibrate on.
        save(dir.path(), &state_after(2_000, "alert_level = \"spot\"\nart_weight = 0.0")).unwrap();
        let file = path(dir.path(), "temp");
        let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(json["version"], VERSION);
        let alert = &json["series"][0]["detectors"][0]["alert"];
        assert!(alert["spot"]["peaks"].as_array().is_some_and(|p| !p.is_empty()), "{alert}");
        let (_, series) = load(dir.path(), &rule("")).unwrap();
        let saved = series.values().next().unwrap().detectors[0].save();
        assert_eq!(saved["alert"], *alert, "SPOT resumes as saved");

        // The same series saved by a build without SPOT: version 1, no `alert`.
        json["version"] = 1.into();
        json["series"][0]["detectors"][0].as_object_mut().unwrap().remove("art");
        json["series"][0]["detectors"][0].as_object_mut().unwrap().remove("alert");
        std::fs::write(&file, serde_json::to_vec(&json).unwrap()).unwrap();
        let (step, series) = load(dir.path(), &rule("")).unwrap();
        assert_eq!(step, Some(20_000_000));
        // It resumes at the default, fixed level (version 1 had no other), its other stages as saved.
        let resumed = series.values().next().unwrap().detectors[0].save();
        assert_eq!(resumed["alert"]["level"], "fixed");
        assert_eq!(resumed["alert"]["spot"], serde_json::Value::Null);
        assert_eq!(resumed["record"], json["series"][0]["detectors"][0]["record"]);

        // A version this build does not know is not read.
        json["version"] = (VERSION + 1).into();
        std::fs::write(&file, serde_json::to_vec(&json).unwrap()).unwrap();
        assert!(load(dir.path(), &rule("")).is_none());
    }

    #[test]
    fn resonance_state_is_saved_and_a_version_2_file_resumes_without_it() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), &state_after(2_000, "")).unwrap();
        let file = path(dir.path(), "temp");
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(json["version"], VERSION);
        // The resonance detector and its weight, live after 2,000 points, resume as saved.
        let art = &json["series"][0]["detectors"][0]["art"];
        assert_eq!(art[0]["live"], true, "{art}");
        let (_, series) = load(dir.path(), &rule("")).unwrap();
        assert_eq!(series.values().next().unwrap().detectors[0].save()["art"], *art);

        // The same series saved by a build without resonance: version 2, no `art`. It resumes with a fresh
        // resonance detector in probation, its other stages as saved.
        let mut v2 = json.clone();
        v2["version"] = 2.into();
        v2["series"][0]["detectors"][0].as_object_mut().unwrap().remove("art");
        std::fs::write(&file, serde_json::to_vec(&v2).unwrap()).unwrap();
        let (_, series) = load(dir.path(), &rule("")).unwrap();
        let resumed = series.values().next().unwrap().detectors[0].save();
        assert_eq!(resumed["art"][0]["live"], false);
        assert_eq!(resumed["art"][1], crate::detect::univariate::ART_WEIGHT);
        assert_eq!(resumed["record"], json["series"][0]["detectors"][0]["record"]);
        assert_eq!(resumed["threshold"], json["series"][0]["detectors"][0]["threshold"]);
    }

    #[test]
    fn stuck_state_is_saved_and_a_version_3_file_resumes_with_the_stage_off() {
        let dir = tempfile::tempdir().unwrap();
        save(dir.path(), &state_after(700, "[stuck]\nfactor = 2.0\nmin_points = 3")).unwrap();
        let file = path(dir.path(), "temp");
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(json["version"], 4);
        let stuck = &json["series"][0]["detectors"][0]["stuck"];
        assert_eq!(stuck["params"]["min_points"], 3, "{stuck}");
        assert!(stuck["longest"].as_u64().is_some_and(|n| n >= 1), "{stuck}");
        let (_, series) = load(dir.path(), &rule("")).unwrap();
        assert_eq!(series.values().next().unwrap().detectors[0].save()["stuck"], *stuck);

        // The same series saved by a build without the stage: version 3, no `stuck`. It resumes with the
        // stage off, its other stages as saved.
        let mut v3 = json.clone();
        v3["version"] = 3.into();
        v3["series"][0]["detectors"][0].as_object_mut().unwrap().remove("stuck");
        std::fs::write(&file, serde_json::to_vec(&v3).unwrap()).unwrap();
        let (_, series) = load(dir.path(), &rule("")).unwrap();
        let resumed = series.values().next().unwrap().detectors[0].save();
        assert_eq!(resumed["stuck"]["params"]["factor"], 0.0);
        assert_eq!(resumed["stuck"]["params"]["min_points"], 0);
        assert_eq!(resumed["art"], json["series"][0]["detectors"][0]["art"]);
        assert_eq!(resumed["threshold"], json["series"][0]["detectors"][0]["threshold"]);
    }
}
