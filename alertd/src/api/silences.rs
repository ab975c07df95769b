//! `/api/v2/silences` and `/api/v2/silence/{id}`, with Alertmanager's validation and update rules.

use super::alerts::Scope;
use super::openapi::{AM_TAG, AmError, AmErrors, GettableSilenceSchema};
use super::{ApiError, Params, State, filters};
use crate::alert::valid_label_name;
use crate::silence::{Silence, SilenceState, WireMatcher, new_id};
use crate::time::Timestamp;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State as Ext};
use axum::{Extension, Json};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `postableSilence`; with its id set, the body of a `gettableSilence` too.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PostableSilence {
    #[serde(default)]
    pub id: String,
    pub matchers: Vec<WireMatcher>,
    #[serde(rename = "startsAt")]
    pub starts_at: Timestamp,
    #[serde(rename = "endsAt", default = "unset")]
    pub ends_at: Timestamp,
    #[serde(rename = "createdBy")]
    pub created_by: String,
    pub comment: String,
    /// alertd's own: silence until every alert the silence matches has resolved, with `endsAt` (or,
    /// when it is left out, `argus.silence_until_resolved_max` from now) bounding its lifetime.
    /// Absent from ordinary silences, so Alertmanager's clients see its shape unchanged.
    #[serde(rename = "untilResolved", default, skip_serializing_if = "std::ops::Not::not")]
    pub until_resolved: bool,
}

fn unset() -> Timestamp {
    Timestamp::ZERO
}

/// `gettableSilence`.
#[derive(Debug, Serialize)]
pub struct GettableSilence {
    #[serde(flatten)]
    pub silence: PostableSilence,
    pub status: SilenceStatus,
    #[serde(rename = "updatedAt")]
    pub updated_at: Timestamp,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct SilenceStatus {
    pub state: SilenceState,
}

fn gettable(s: &Silence, now: Timestamp) -> GettableSilence {
    GettableSilence {
        silence: PostableSilence {
            id: s.id.clone(),
            matchers: s.matchers.iter().map(WireMatcher::from_matcher).collect(),
            starts_at: s.starts_at,
            ends_at: s.ends_at,
            created_by: s.created_by.clone(),
            comment: s.comment.clone(),
            until_resolved: s.until_resolved,
        },
        status: SilenceStatus { state: s.state(now) },
        updated_at: s.updated_at,
    }
}

/// Alertmanager's `CheckSilenceMatchesFilterLabels`: the filter matchers match the label set
/// made of the silence's matcher names and values.
fn matches_filter(s: &Silence, filter: &[argus_model::Matcher]) -> bool {
    let set: BTreeMap<&str, &str> = s.matchers.iter().map(|m| (m.name.as_str(), m.value.as_str())).collect();
    filter.iter().all(|f| set.get(f.name.as_str()).is_some_and(|v| f.matches(v)))
}

/// Whether a token confined to `scope` owns `s`: the silence carries each of the scope's matchers as
/// it is, so it silences nothing outside the scope. Silences a token does not own are, to it, absent.
fn owned(s: &Silence, scope: &Scope) -> bool {
    let Some(Extension(scope)) = scope else { return true };
    scope.matchers().iter().all(|m| s.matchers.iter().any(|x| same(x, m)))
}

fn same(a: &argus_model::Matcher, b: &argus_model::Matcher) -> bool {
    a.name == b.name && a.op == b.op && a.value == b.value
}

/// `GET /api/v2/silences`: active ones first (soonest to end first), then pending (soonest to start
/// first), then expired (latest to end first), as Alertmanager sorts them.
#[utoipa::path(get, path = "/api/v2/silences", tag = AM_TAG, operation_id = "getSilences",
    params(("filter" = Option<Vec<String>>, Query, description = "Matchers the silence's matchers must satisfy, each in one parameter", example = json!(["alertname=\"GpuDown\""]))),
    responses((status = 200, description = "The silences", body = Vec<GettableSilenceSchema>), AmErrors))]
pub async fn get_silences(
    Ext(s): Ext<State>,
    scope: Scope,
    Query(p): Query<Params>,
) -> Result<Json<Vec<GettableSilence>>, ApiError> {
    let filter = filters(&p)?;
    let now = s.engine.now();
    let mut list: Vec<Silence> =
        s.silences.list().into_iter().filter(|x| matches_filter(x, &filter) && owned(x, &scope)).collect();
    list.sort_by(|a, b| {
        let (sa, sb) = (a.state(now), b.state(now));
        sa.cmp(&sb).then_with(|| match sa {
            SilenceState::Active => a.ends_at.cmp(&b.ends_at),
            SilenceState::Pending => a.starts_at.cmp(&b.starts_at),
            SilenceState::Expired => b.ends_at.cmp(&a.ends_at),
        })
    });
    Ok(Json(list.iter().map(|x| gettable(x, now)).collect()))
}

/// `GET /api/v2/silence/{id}`.
#[utoipa::path(get, path = "/api/v2/silence/{id}", tag = AM_TAG, operation_id = "getSilence",
    params(("id" = String, Path, description = "The silence's id")),
    responses((status = 200, description = "The silence", body = GettableSilenceSchema),
        (status = 404, description = "No silence has this id", body = AmError)))]
pub async fn get_silence(
    Ext(s): Ext<State>,
    scope: Scope,
    Path(id): Path<String>,
) -> Result<Json<GettableSilence>, ApiError> {
    let now = s.engine.now();
    match s.silences.get(&id) {
        Some(x) if owned(&x, &scope) => Ok(Json(gettable(&x, now))),
        _ => Err(ApiError::NotFound(format!("silence {id} not found"))),
    }
}

/// `DELETE /api/v2/silence/{id}`: expires the silence now (one already expired is left as it is).
#[utoipa::path(delete, path = "/api/v2/silence/{id}", tag = AM_TAG, operation_id = "deleteSilence",
    params(("id" = String, Path, description = "The silence's id")),
    responses((status = 200, description = "Expired"),
        (status = 404, description = "No silence has this id", body = AmError),
        (status = 500, description = "The silence could not be stored", body = AmError)))]
pub async fn delete_silence(Ext(s): Ext<State>, scope: Scope, Path(id): Path<String>) -> Result<(), ApiError> {
    let now = s.engine.now();
    if !s.silences.get(&id).is_some_and(|x| owned(&x, &scope)) || !s.silences.expire(&id, now)? {
        return Err(ApiError::NotFound(format!("silence {id} not found")));
    }
    tracing::info!(silence = %id, "Silence expired");
    Ok(())
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct Created {
    #[serde(rename = "silenceID")]
    silence_id: String,
}

/// `POST /api/v2/silences`: creates a silence, or updates the one named by `id`. As Alertmanager,
/// an update that changes what an active silence matches or when it started, or one of an expired
/// silence, expires the old silence and makes a new one with a new id.
#[utoipa::path(post, path = "/api/v2/silences", tag = AM_TAG, operation_id = "postSilences",
    request_body(content = PostableSilence, description = "A new silence, or (with `id`) an update of one"),
    responses((status = 200, description = "The silence's id", body = Created),
        (status = 404, description = "`id` names no silence", body = AmError), AmErrors))]
pub async fn post_silence(
    Ext(s): Ext<State>,
    scope: Scope,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Created>, ApiError> {
    let body = body.map_err(|r| ApiError::from_body(r, s.max_body_bytes))?;
    let p: PostableSilence =
        serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest(format!("silence: {e}")))?;
    let now = s.engine.now();
    let mut p = p;
    if p.until_resolved {
        let max = s.engine.lock().config().silence_until_resolved_max;
        let bound = now + max;
        if p.ends_at.is_zero() || p.ends_at > bound {
            p.ends_at = bound;
        }
    }
    let mut new = validate(p, now)?;
    // A confined token's silence carries the scope's matchers, so it silences nothing outside it.
    if let Some(Extension(scope)) = &scope {
        for m in scope.matchers() {
            if !new.matchers.iter().any(|x| same(x, m)) {
                new.matchers.push(m.clone());
            }
        }
    }
    if new.until_resolved {
        let e = s.engine.lock();
        if !e.firing_matches(&new.matchers, now) {
            return Err(ApiError::BadRequest(
                "silence: untilResolved needs at least one firing alert that the matchers match".into(),
            ));
        }
    }
    let old = if new.id.is_empty() {
        None
    } else {
        match s.silences.get(&new.id) {
            Some(old) if owned(&old, &scope) => Some(old),
            _ => return Err(ApiError::NotFound(format!("silence {} not found", new.id))),
        }
    };
    if let Some(old) = old {
        let same_matchers = old.matchers.iter().map(WireMatcher::from_matcher).collect::<Vec<_>>()
            == new.matchers.iter().map(WireMatcher::from_matcher).collect::<Vec<_>>();
        let in_place = match old.state(now) {
            SilenceState::Expired => false,
            SilenceState::Active => same_matchers && new.starts_at <= now.max(old.starts_at),
            SilenceState::Pending => true,
        };
        if in_place {
            if old.state(now) == SilenceState::Active {
                new.starts_at = old.starts_at;
            }
        } else {
            s.silences.expire(&old.id, now)?;
            new.id = String::new();
        }
    }
    if new.id.is_empty() {
        new.id = new_id();
    }
    let id = new.id.clone();
    tracing::info!(silence = %id, matchers = ?new.matchers.iter().map(|m| m.to_string()).collect::<Vec<_>>(), "Silence set");
    s.silences.set(new)?;
    Ok(Json(Created { silence_id: id }))
}

/// Alertmanager's checks on a posted silence; a start in the past becomes now.
fn validate(p: PostableSilence, now: Timestamp) -> Result<Silence, ApiError> {
    let bad = |m: String| Err(ApiError::BadRequest(m));
    if p.matchers.is_empty() {
        return bad("silence: at least one matcher required".into());
    }
    let mut matchers = Vec::with_capacity(p.matchers.len());
    for (i, w) in p.matchers.iter().enumerate() {
        if !valid_label_name(&w.name) {
            return bad(format!("silence: matcher {i}: invalid label name {:?}", w.name));
        }
        matchers.push(w.to_matcher().map_err(|e| ApiError::BadRequest(format!("silence: matcher {i}: {e}")))?);
    }
    if matchers.iter().all(|m| m.matches_empty()) {
        return bad("silence: at least one matcher must not match the empty string".into());
    }
    if p.starts_at.is_zero() || p.ends_at.is_zero() {
        return bad("silence: startsAt and endsAt are required".into());
    }
    if p.ends_at < p.starts_at {
        return bad("silence: end time must not be before start time".into());
    }
    if p.ends_at <= now {
        return bad("silence: end time can't be in the past".into());
    }
    if p.created_by.is_empty() {
        return bad("silence: createdBy is required".into());
    }
    if p.comment.is_empty() {
        return bad("silence: comment is required".into());
    }
    Ok(Silence {
        id: p.id,
        matchers,
        starts_at: p.starts_at.max(now),
        ends_at: p.ends_at,
        updated_at: now,
        created_by: p.created_by,
        comment: p.comment,
        until_resolved: p.until_resolved,
    })
}
