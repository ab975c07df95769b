//! Forecast models and planner state on disk: `forecast/<target>.json` and `capacity/<pool>.json` under
//! the analyzer's state directory, each replaced atomically (written beside, synced, renamed). The format
//! is in docs/format/analyzer-forecast-state.md. State saved for a different query, step, horizon or
//! model list is not reused: the target changed, so its series are refitted.

use super::config::{Pool, Target};
use super::{Model, PoolState, SeriesState, TargetState};
use crate::capacity::{PlannerConfig, PlannerState, Recommendation};
use crate::forecast::select::{Selected, load_model};
use argus_model::Labels;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// The version this build writes and reads.
pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct TargetFile {
    version: u32,
    target: String,
    query: String,
    step_ms: i64,
    horizon_steps: usize,
    models: Option<Vec<String>>,
    last_step: Option<i64>,
    fitted_at: Option<i64>,
    series: Vec<SavedSeries>,
}

#[derive(Serialize, Deserialize)]
struct SavedSeries {
    labels: Vec<(String, String)>,
    last_t: i64,
    last_v: f64,
    /// `selected`, or the fallback model's name.
    kind: String,
    model: serde_json::Value,
}

#[derive(Serialize, Deserialize)]
struct PoolFile {
    version: u32,
    pool: String,
    planner: SavedPlannerConfig,
    state: PlannerState,
    last: Option<Recommendation>,
}

/// The planner settings the state was made under; other settings start the planner afresh.
#[derive(Serialize, Deserialize, PartialEq)]
struct SavedPlannerConfig {
    target_utilization: f64,
    reserve_fraction: f64,
    scale_down_margin: f64,
    scale_up_cooldown_ms: u64,
    scale_down_cooldown_ms: u64,
    min_capacity: u64,
    max_capacity: Option<u64>,
}

impl From<&PlannerConfig> for SavedPlannerConfig {
    fn from(c: &PlannerConfig) -> Self {
        SavedPlannerConfig {
            target_utilization: c.target_utilization,
            reserve_fraction: c.reserve_fraction,
            scale_down_margin: c.scale_down_margin,
            scale_up_cooldown_ms: c.scale_up_cooldown.as_millis() as u64,
            scale_down_cooldown_ms: c.scale_down_cooldown.as_millis() as u64,
            min_capacity: c.min_capacity,
            max_capacity: c.max_capacity,
        }
    }
}

fn write_atomic(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.tmp");
    let mut f = std::fs::File::create(&tmp)?;
    serde_json::to_writer(&mut f, value).map_err(std::io::Error::other)?;
    f.flush()?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

fn read<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Option<T> {
    let text = match std::fs::read(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            tracing::warn!(file = %path.display(), %error, "{what} unreadable; starting afresh");
            return None;
        }
    };
    let version =
        serde_json::from_slice::<serde_json::Value>(&text).ok().and_then(|v| v.get("version").and_then(|v| v.as_u64()));
    if version != Some(VERSION as u64) {
        tracing::info!(file = %path.display(), ?version, "{what} of another version; starting afresh");
        return None;
    }
    match serde_json::from_slice(&text) {
        Ok(f) => Some(f),
        Err(error) => {
            tracing::warn!(file = %path.display(), %error, "{what} is not valid; starting afresh");
            None
        }
    }
}

pub fn save_target(dir: &Path, t: &TargetState) -> std::io::Result<()> {
    let series = t
        .series
        .iter()
        .filter_map(|(labels, s)| {
            let (kind, model) = match &s.model {
                Model::Selected(m) => ("selected".to_string(), m.save()?),
                Model::Fallback(f) => (f.name().to_string(), f.save()?),
            };
            Some(SavedSeries {
                labels: labels.iter().map(|l| (l.name.clone(), l.value.clone())).collect(),
                last_t: s.last_t,
                last_v: s.last_v,
                kind,
                model,
            })
        })
        .collect();
    let file = TargetFile {
        version: VERSION,
        target: t.target.name.clone(),
        query: t.target.query.clone(),
        step_ms: t.target.step_ms(),
        horizon_steps: t.target.horizon_steps,
        models: t.target.models.clone(),
        last_step: t.last_step,
        fitted_at: t.fitted_at,
        series,
    };
    write_atomic(&dir.join("forecast").join(format!("{}.json", t.target.name)), &file)
}

type Restored = (Option<i64>, Option<i64>, HashMap<Labels, SeriesState>);

/// The saved state of `target` (last step, last refit, series), when there is one that fits it.
pub fn load_target(dir: &Path, target: &Target) -> Option<Restored> {
    let path = dir.join("forecast").join(format!("{}.json", target.name));
    let file: TargetFile = read(&path, "Forecast state")?;
    if file.query != target.query
        || file.step_ms != target.step_ms()
        || file.horizon_steps != target.horizon_steps
        || file.models != target.models
    {
        tracing::info!(target_name = %target.name, "The forecast target changed since its state was saved; refitting");
        return None;
    }
    let mut series = HashMap::with_capacity(file.series.len());
    for s in file.series {
        let model = if s.kind == "selected" {
            Selected::load(s.model).map(|m| Model::Selected(Box::new(m)))
        } else {
            load_model(&s.kind, s.model)
                .unwrap_or_else(|| Err(format!("unknown model {:?}", s.kind)))
                .map(Model::Fallback)
        };
        match model {
            Ok(model) => {
                series.insert(Labels::from_pairs(s.labels), SeriesState { model, last_t: s.last_t, last_v: s.last_v });
            }
            Err(error) => {
                tracing::warn!(target_name = %target.name, %error, "A saved model could not be restored; refitting");
                return None;
            }
        }
    }
    tracing::info!(target_name = %target.name, series = series.len(), "Forecast state restored");
    Some((file.last_step, file.fitted_at, series))
}

pub fn save_pool(dir: &Path, p: &PoolState) -> std::io::Result<()> {
    let file = PoolFile {
        version: VERSION,
        pool: p.pool.pool.clone(),
        planner: (&p.pool.planner).into(),
        state: p.planner.state(),
        last: p.last.clone(),
    };
    write_atomic(&dir.join("capacity").join(format!("{}.json", p.pool.pool)), &file)
}

/// The saved planner state of `pool` and its last recommendation, when saved under the same settings.
pub fn load_pool(dir: &Path, pool: &Pool) -> Option<(PlannerState, Option<Recommendation>)> {
    let path = dir.join("capacity").join(format!("{}.json", pool.pool));
    let file: PoolFile = read(&path, "Planner state")?;
    if file.planner != SavedPlannerConfig::from(&pool.planner) {
        tracing::info!(pool = %pool.pool, "The pool's planner settings changed since its state was saved; starting afresh");
        return None;
    }
    Some((file.state, file.last))
}
