//! Multivariate models on disk: one JSON file per rule, `multivariate/<rule>.json` under the analyzer's
//! state directory, written after every training and replaced atomically (written beside, synced,
//! renamed). The format is in docs/format/analyzer-multivariate.md.
//!
//! Models saved for other metrics, entity labels, interval or parameters are not reused: the rule changed,
//! so its entities are trained again. A file of an unknown version is not read, and an entity whose model
//! has an unknown version is retrained alone; both say so in the log.

use super::config::ModelRule;
use super::{EntityModel, Key};
use crate::detect::multivariate::{MODEL_VERSION, MODEL_VERSIONS_READ, MultivariateParams};
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The version this build writes and reads.
pub const VERSION: u32 = 1;

#[derive(Serialize)]
struct FileOut<'a> {
    version: u32,
    rule: &'a str,
    metrics: &'a [String],
    entity: &'a [String],
    interval_ms: i64,
    params: &'a MultivariateParams,
    trained_at: i64,
    entities: Vec<&'a EntityModel>,
}

#[derive(Deserialize)]
struct FileIn {
    metrics: Vec<String>,
    entity: Vec<String>,
    interval_ms: i64,
    params: MultivariateParams,
    trained_at: i64,
    /// Read one by one, so that one entity's model of another version does not discard the others.
    entities: Vec<serde_json::Value>,
}

/// What was loaded for a rule.
pub(super) struct Loaded {
    pub trained_at: i64,
    pub models: Vec<EntityModel>,
    /// Entities whose saved model could not be used.
    pub stale: Vec<Key>,
}

fn path(dir: &Path, rule: &str) -> PathBuf {
    dir.join("multivariate").join(format!("{rule}.json"))
}

pub(super) fn save(dir: &Path, rule: &ModelRule, trained_at: i64, models: &[Arc<EntityModel>]) -> std::io::Result<()> {
    let target = path(dir, &rule.name);
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut entities: Vec<&EntityModel> = models.iter().map(|m| m.as_ref()).collect();
    entities.sort_by(|a, b| a.labels.cmp(&b.labels));
    let file = FileOut {
        version: VERSION,
        rule: &rule.name,
        metrics: &rule.metrics,
        entity: &rule.entity,
        interval_ms: rule.step_ms(),
        params: &rule.params,
        trained_at,
        entities,
    };
    let tmp = target.with_extension("json.tmp");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    serde_json::to_writer(&mut f, &file).map_err(std::io::Error::other)?;
    f.flush()?;
    f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    std::fs::rename(&tmp, &target)
}

/// The saved models of `rule`, when there are some that fit it.
pub(super) fn load(dir: &Path, rule: &ModelRule) -> Option<Loaded> {
    let p = path(dir, &rule.name);
    let text = match std::fs::read(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(error) => {
            tracing::warn!(path = %p.display(), %error, "Multivariate models unreadable, retraining");
            return None;
        }
    };
    #[derive(Deserialize)]
    struct Version {
        version: u32,
    }
    match serde_json::from_slice::<Version>(&text) {
        Ok(v) if v.version == VERSION => {}
        Ok(v) => {
            tracing::warn!(path = %p.display(), version = v.version, known = VERSION, "Multivariate models of an unknown version, retraining");
            return None;
        }
        Err(error) => {
            tracing::warn!(path = %p.display(), %error, "Multivariate models unreadable, retraining");
            return None;
        }
    }
    let file: FileIn = match serde_json::from_slice(&text) {
        Ok(f) => f,
        Err(error) => {
            tracing::warn!(path = %p.display(), %error, "Multivariate models unreadable, retraining");
            return None;
        }
    };
    if file.metrics != rule.metrics
        || file.entity != rule.entity
        || file.interval_ms != rule.step_ms()
        || file.params != rule.params
    {
        tracing::info!(rule = %rule.name, "Multivariate rule changed since its models were saved, retraining");
        return None;
    }
    let mut models = Vec::with_capacity(file.entities.len());
    let mut stale = Vec::new();
    for value in file.entities {
        let version = value.pointer("/model/version").and_then(|v| v.as_u64());
        let labels: Option<Key> = value
            .get("labels")
            .and_then(|l| l.as_array()?.iter().map(|pair| Some(pair.get(1)?.as_str()?.to_string())).collect());
        match serde_json::from_value::<EntityModel>(value) {
            Ok(m) if MODEL_VERSIONS_READ.contains(&m.model.version) => models.push(m),
            result => {
                let error = result.err().map(|e| e.to_string()).unwrap_or_default();
                tracing::warn!(
                    rule = %rule.name,
                    entity = ?labels,
                    version,
                    known = MODEL_VERSION,
                    %error,
                    "Multivariate model of an unknown version, retraining it"
                );
                stale.extend(labels);
            }
        }
    }
    Some(Loaded { trained_at: file.trained_at, models, stale })
}
