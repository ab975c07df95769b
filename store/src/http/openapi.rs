//! The OpenAPI document of the store's endpoints. The handlers carry their own `#[utoipa::path]`
//! (parameters, statuses, bodies); this module lists them and holds the schemas of the JSON the
//! handlers build by hand (`envelope.rs`, `json.rs`), which are written to match it exactly: a
//! response that breaks its schema is a bug in one or the other.
//!
//! Adding an endpoint: annotate its handler with `#[utoipa::path]` and name it in `paths(...)` below.

// The types below describe answers that are written without them (hand-built JSON); they exist for
// their schemas only.
#![allow(dead_code)]

use std::collections::BTreeMap;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ArrayBuilder, ArrayItems, ObjectBuilder, Schema, Type};
use utoipa::{IntoResponses, OpenApi, PartialSchema, ToSchema};

#[derive(OpenApi)]
#[openapi(
    paths(
        super::ingest::write_v2,
        super::ingest::write_v1,
        super::ingest::remote_write,
        super::ingest::force_flush,
        super::admin::snapshot,
        super::query::instant,
        super::query::range,
        super::query::series,
        super::query::labels,
        super::query::label_values,
        super::query::events,
        super::status::metadata,
        super::status::query_exemplars,
        super::status::buildinfo,
        super::status::rules,
        super::status::alerts,
        super::metrics,
        super::healthy,
        super::ready,
    ),
    components(schemas(PromError, InfluxError)),
    tags(
        (name = WRITE_TAG, description = "Ingest: InfluxDB line protocol v1/v2 and Prometheus remote write"),
        (name = QUERY_TAG, description = "The Prometheus HTTP query API (docs/api.md)"),
        (name = OPS_TAG, description = "Health, self metrics and upkeep"),
    ),
)]
struct StoreApi;

/// The store's part of `/api/openapi.json`.
pub fn document() -> utoipa::openapi::OpenApi {
    StoreApi::openapi()
}

pub(super) const WRITE_TAG: &str = "write";
pub(super) const QUERY_TAG: &str = "prometheus";
pub(super) const OPS_TAG: &str = "operations";

// === errors ===

pub use argus_store_api::openapi::{ErrorStatus, PromError};

/// One rejected line of a line-protocol write.
#[derive(ToSchema)]
pub struct LineError {
    /// 1-based line number.
    line: u64,
    /// 1-based column.
    column: u64,
    reason: String,
}

/// InfluxDB's error shape, which every error of the write endpoints takes (remote write's included).
#[derive(ToSchema)]
pub struct InfluxError {
    /// `invalid`, `request too large`, `too many requests`, `unavailable`, `method not allowed`, …
    code: String,
    message: String,
    /// Per-line detail of a refused line-protocol write (at most 100).
    errors: Option<Vec<LineError>>,
}

// === success envelopes ===

/// `"success"`.
#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SuccessStatus {
    Success,
}

/// Prometheus' success envelope around `data` of type `$data`, with its optional warnings.
macro_rules! success {
    ($name:ident, $data:ty, $doc:literal) => {
        #[doc = $doc]
        #[derive(ToSchema)]
        pub struct $name {
            status: SuccessStatus,
            data: $data,
            /// Present only when there is something to warn of, e.g. `results truncated due to limit`.
            #[schema(nullable = false)]
            warnings: Option<Vec<String>>,
        }
    };
}

success!(QueryAnswer, QueryData, "The answer to an instant or range query.");
success!(SeriesAnswer, Vec<BTreeMap<String, String>>, "Series, each as its label set.");
success!(NamesAnswer, Vec<String>, "Label names or values, sorted.");
success!(EventsAnswer, Vec<EventSeries>, "Events (line-protocol string fields) by series.");
success!(BuildInfoAnswer, BuildInfo, "Build information, as Prometheus gives it.");
success!(MetadataAnswer, EmptyObject, "Metric metadata: always `{}` (docs/api.md says why).");
success!(ExemplarsAnswer, EmptyList, "Exemplars: always `[]`.");
success!(SnapshotAnswer, SnapshotName, "A snapshot taken, as Prometheus names it.");

/// A snapshot's name: its directory under `<data_dir>/snapshots/`.
#[derive(ToSchema)]
pub struct SnapshotName {
    /// The time it was taken (UTC) and 16 random hex digits.
    #[schema(example = "20261207T120000Z-3f2a9c0d4e5b6a71")]
    name: String,
}

/// `[time, value]`: Unix seconds (up to three decimals) and the sample value as a string (`"0.25"`,
/// `"NaN"`, `"+Inf"`); for events and string results, the text.
pub struct Point;

impl PartialSchema for Point {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new()
            .prefix_items([
                ObjectBuilder::new().schema_type(Type::Number).description(Some("Unix seconds")).build(),
                ObjectBuilder::new().schema_type(Type::String).description(Some("value or text")).build(),
            ])
            .items(ArrayItems::False)
            .min_items(Some(2))
            .max_items(Some(2))
            .description(Some("[Unix seconds, value as a string]"))
            .into()
    }
}

impl ToSchema for Point {}

/// The `data` of a query answer, told apart by `resultType`.
#[derive(ToSchema)]
#[serde(untagged)]
pub enum QueryData {
    Vector(VectorData),
    Matrix(MatrixData),
    Scalar(ScalarData),
    String(StringData),
}

#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VectorType {
    Vector,
}

#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum MatrixType {
    Matrix,
}

#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ScalarType {
    Scalar,
}

#[derive(ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StringType {
    String,
}

/// An instant vector: one sample per series.
#[derive(ToSchema)]
pub struct VectorData {
    #[serde(rename = "resultType")]
    result_type: VectorType,
    result: Vec<VectorSample>,
}

#[derive(ToSchema)]
pub struct VectorSample {
    metric: BTreeMap<String, String>,
    value: Point,
}

/// A range vector, or a range query's result: samples per series, oldest first.
#[derive(ToSchema)]
pub struct MatrixData {
    #[serde(rename = "resultType")]
    result_type: MatrixType,
    result: Vec<MatrixSeries>,
}

#[derive(ToSchema)]
pub struct MatrixSeries {
    metric: BTreeMap<String, String>,
    values: Vec<Point>,
}

#[derive(ToSchema)]
pub struct ScalarData {
    #[serde(rename = "resultType")]
    result_type: ScalarType,
    result: Point,
}

#[derive(ToSchema)]
pub struct StringData {
    #[serde(rename = "resultType")]
    result_type: StringType,
    result: Point,
}

/// The events of one series: `[Unix seconds, text]`, oldest first.
#[derive(ToSchema)]
pub struct EventSeries {
    metric: BTreeMap<String, String>,
    events: Vec<Point>,
}

#[derive(ToSchema)]
pub struct BuildInfo {
    /// The Prometheus release whose API Argus follows (not Argus' version).
    version: String,
    revision: String,
    branch: String,
    #[serde(rename = "buildUser")]
    build_user: String,
    #[serde(rename = "buildDate")]
    build_date: String,
    #[serde(rename = "goVersion")]
    go_version: String,
    /// Argus' own version.
    #[serde(rename = "argusVersion")]
    argus_version: String,
}

/// An empty object.
pub struct EmptyObject;

impl PartialSchema for EmptyObject {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .additional_properties(Some(utoipa::openapi::schema::AdditionalProperties::FreeForm(false)))
            .into()
    }
}

impl ToSchema for EmptyObject {}

/// An empty list.
pub struct EmptyList;

impl PartialSchema for EmptyList {
    fn schema() -> RefOr<Schema> {
        ArrayBuilder::new().items(ArrayItems::False).max_items(Some(0)).into()
    }
}

impl ToSchema for EmptyList {}

// === the error answers endpoints share ===

/// What a query can answer besides success.
#[derive(IntoResponses)]
pub enum QueryErrors {
    /// A parameter is missing or malformed, the query does not parse, or a range has too many steps.
    #[response(status = 400)]
    BadData(PromError),
    /// A form body larger than the server's limit.
    #[response(status = 413)]
    TooLarge(PromError),
    /// The query is valid but cannot run (sample limit, duplicate series, …).
    #[response(status = 422)]
    Execution(PromError),
    /// The store failed to read.
    #[response(status = 500)]
    Internal(PromError),
    /// The query ran past `[store] query_timeout` or the request's `timeout`.
    #[response(status = 503)]
    Timeout(PromError),
}

/// What a series, label or event lookup can answer besides success.
#[derive(IntoResponses)]
pub enum ReadErrors {
    /// A parameter is missing or malformed.
    #[response(status = 400)]
    BadData(PromError),
    /// A form body larger than the server's limit.
    #[response(status = 413)]
    TooLarge(PromError),
    /// The store failed to read.
    #[response(status = 500)]
    Internal(PromError),
}

/// What a snapshot can answer besides success.
#[derive(IntoResponses)]
pub enum SnapshotErrors {
    /// `skip_head` is not a boolean.
    #[response(status = 400)]
    BadData(PromError),
    /// A form body larger than the server's limit.
    #[response(status = 413)]
    TooLarge(PromError),
    /// The snapshot could not be written (a full disk, a file that could not be linked or copied);
    /// nothing of it is left under `snapshots/`.
    #[response(status = 500)]
    Internal(PromError),
}

/// What a write can answer besides `204`.
#[derive(IntoResponses)]
pub enum WriteErrors {
    /// A malformed body (nothing stored): bad line protocol with per-line detail, bad precision, bad
    /// snappy or protobuf, a series with too many labels.
    #[response(status = 400)]
    Invalid(InfluxError),
    /// A body, decoded body, line count or series count past its limit (nothing stored).
    #[response(status = 413)]
    TooLarge(InfluxError),
    /// Too many write bytes in flight; retry after `Retry-After`.
    #[response(status = 429)]
    TooMany(InfluxError),
    /// The write task failed.
    #[response(status = 500)]
    Internal(InfluxError),
    /// The store is over its memory budget or cannot write now; retry after `Retry-After`.
    #[response(status = 503)]
    Unavailable(InfluxError),
}

/// A remote-write body: a snappy-compressed protobuf `WriteRequest`.
pub struct SnappyProtobuf;

impl PartialSchema for SnappyProtobuf {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::Binary)))
            .into()
    }
}

impl ToSchema for SnappyProtobuf {}
