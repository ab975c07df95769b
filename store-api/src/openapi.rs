//! Schemas that every part's OpenAPI document shares: the error envelope of the Prometheus HTTP API,
//! which the store, alertd and the analyzer all answer their `/api/v1/` errors in.

// The types below describe answers that are written without them (hand-built JSON); they exist for
// their schemas only.
#![allow(dead_code)]

use utoipa::ToSchema;

/// `"error"`.
#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ErrorStatus {
    Error,
}

/// Prometheus' error envelope: every error under `/api/v1/`. `errorType` is `bad_data` (400, and 405
/// for a wrong method), `execution` (422), `timeout` (503), `internal` (500), `not_found` (404),
/// `unauthorized` (401), `forbidden` (403) or `unavailable` (503, too many concurrent requests).
#[derive(ToSchema)]
pub struct PromError {
    status: ErrorStatus,
    #[serde(rename = "errorType")]
    error_type: String,
    error: String,
}
