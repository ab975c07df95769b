//! `POST /-/reload`, Alertmanager's: re-reads the configuration file (and the rule files it names)
//! and applies it; a file that does not validate is refused and the running configuration stays.

use super::openapi::{AM_TAG, AmError};
use super::{ApiError, State};
use axum::extract::State as Ext;

/// `POST /-/reload`: 200 once the new configuration runs. As Alertmanager, a configuration that
/// fails to load answers 500 with `failed to reload config: ` and the error (file:line: field:
/// reason), and changes nothing.
#[utoipa::path(post, path = "/-/reload", tag = AM_TAG, operation_id = "reload",
    responses((status = 200, description = "The new configuration runs"),
        (status = 500, description = "The configuration failed to load; the running one is kept", body = AmError)))]
pub async fn post_reload(Ext(s): Ext<State>) -> Result<(), ApiError> {
    let Some(reload) = s.reload.clone() else {
        return Err(ApiError::Internal(
            "failed to reload config: this alertd has no configuration file to read".into(),
        ));
    };
    // Reading and validating the files is blocking IO, off the async workers.
    match tokio::task::spawn_blocking(move || reload()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(ApiError::Internal(format!("failed to reload config: {e}"))),
        Err(e) => Err(ApiError::Internal(format!("failed to reload config: {e}"))),
    }
}
