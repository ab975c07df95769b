//! Prometheus' TSDB admin API, the part Argus has: `POST /api/v1/admin/tsdb/snapshot`, a consistent
//! copy of the data directory under `<data_dir>/snapshots/<name>/` (docs/operations.md says how to back
//! up and restore with it). In `argus serve` only `admin` tokens may call it (docs/auth.md).

use super::State;
use super::envelope::{bad, err, ok};
use super::openapi::{OPS_TAG, SnapshotAnswer, SnapshotErrors};
use super::params::Params;
use axum::extract::State as S;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;
use std::sync::Arc;

/// `skip_head` as Go's `strconv.ParseBool` reads it (Prometheus parses it so); absent or empty is false.
fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "" | "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        _ => None,
    }
}

/// Takes a snapshot of the store (blocks, and unless `skip_head` the WAL that holds the head) and of
/// alertd's database when alertd runs in this process; answers its name, as Prometheus does.
#[utoipa::path(method(post, put), path = "/api/v1/admin/tsdb/snapshot", tag = OPS_TAG,
    params(("skip_head" = Option<String>, Query,
        description = "`true` leaves out what is only in the head (the WAL): the blocks alone", example = "false")),
    responses((status = 200, description = "The snapshot is whole under `<data_dir>/snapshots/<name>/`", body = SnapshotAnswer),
        SnapshotErrors))]
pub async fn snapshot(S(state): S<Arc<State>>, p: Params) -> Response {
    let raw = p.get("skip_head").unwrap_or("");
    let Some(skip_head) = parse_bool(raw) else {
        return bad(format!(
            "unable to parse boolean 'skip_head' argument: strconv.ParseBool: parsing {raw:?}: invalid syntax"
        ));
    };
    let (db, parts) = (state.db.clone(), state.snapshot_parts());
    match tokio::task::spawn_blocking(move || db.snapshot(skip_head, &parts)).await {
        Ok(Ok(s)) => ok(json!({ "name": s.name })),
        Ok(Err(e)) => err(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("create snapshot: {e}")),
        Err(e) => err(StatusCode::INTERNAL_SERVER_ERROR, "internal", format!("create snapshot: the task failed: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::parse_bool;

    #[test]
    fn skip_head_reads_as_go_parses_a_bool() {
        for (s, want) in [("", Some(false)), ("true", Some(true)), ("1", Some(true)), ("F", Some(false)), ("yes", None)]
        {
            assert_eq!(parse_bool(s), want, "{s:?}");
        }
    }
}
