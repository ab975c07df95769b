//! The OpenAPI document of alertd's API: Alertmanager's API v2 (the shapes of Alertmanager 0.25's
//! api/v2/openapi.yaml) and the history API in the Prometheus envelope. The handlers carry their own
//! `#[utoipa::path]`; adding an endpoint is annotating its handler and routing it with `routes!`, whose
//! operations the router adds to the document.

// Schema-only types: the answers are built from the handlers' own types.
#![allow(dead_code)]

use super::silences::SilenceStatus;
use crate::silence::WireMatcher;
use crate::time::Timestamp;
use argus_store_api::openapi::PromError;
use utoipa::{IntoResponses, OpenApi, ToSchema};

pub(super) const AM_TAG: &str = "alertmanager";
pub(super) const HISTORY_TAG: &str = "incidents";
pub(super) const SCHEDULER_TAG: &str = "scheduler";
pub(super) const SUPPRESSED_TAG: &str = "suppressed";

/// What the document says besides its operations: the routers built with `routes!` add those from
/// their handlers.
#[derive(OpenApi)]
#[openapi(tags(
    (name = AM_TAG, description = "Alertmanager's API v2: alerts, groups, silences, status, receivers"),
    (name = HISTORY_TAG, description = "alertd's history: incidents (with acknowledgement) and notifications"),
    (name = SCHEDULER_TAG, description = "Capacity plans for the scheduler receivers"),
    (name = SUPPRESSED_TAG, description = "Alerts held back from notification, and what held them"),
))]
pub(super) struct AlertdApi;

/// alertd's part of `/api/openapi.json`.
pub use super::document;

/// Alertmanager's error body: a JSON string saying what is wrong.
#[derive(ToSchema)]
#[schema(as = AmError)]
pub struct AmError(String);

/// What an API v2 request can answer besides success.
#[derive(IntoResponses)]
pub enum AmErrors {
    /// A malformed parameter or body, naming what is wrong.
    #[response(status = 400)]
    BadRequest(AmError),
    /// A body larger than `alertd.max_body_bytes`, or more alerts than allowed in one request.
    #[response(status = 413)]
    TooLarge(AmError),
    /// alertd failed to read or write its database.
    #[response(status = 500)]
    Internal(AmError),
}

/// What a history request can answer besides success.
#[derive(IntoResponses)]
pub enum HistoryErrors {
    /// A malformed parameter or body (`bad_data`).
    #[response(status = 400)]
    BadData(PromError),
    /// alertd failed to read its database (`internal`).
    #[response(status = 500)]
    Internal(PromError),
}

/// `gettableSilence`: the fields of `postableSilence` (id always set) and its state. Written out
/// rather than derived from `silences::GettableSilence`, whose flattened `PostableSilence` refuses
/// unknown fields as a request body and so would refuse `status` and `updatedAt` here.
#[derive(ToSchema)]
#[schema(as = GettableSilence)]
pub struct GettableSilenceSchema {
    id: String,
    matchers: Vec<WireMatcher>,
    #[serde(rename = "startsAt")]
    starts_at: Timestamp,
    #[serde(rename = "endsAt")]
    ends_at: Timestamp,
    #[serde(rename = "createdBy")]
    created_by: String,
    comment: String,
    /// alertd's own, present only when true: a silence until resolved.
    #[serde(rename = "untilResolved")]
    until_resolved: Option<bool>,
    status: SilenceStatus,
    #[serde(rename = "updatedAt")]
    updated_at: Timestamp,
}
