//! A backend fed by a JSON fixture: `{"devices": [Device…], "xid_events": [XidEvent…]}`. The Xid events
//! are served on the first call only, as a real event set would report them once.

use super::backend::{BackendError, Device, GpuBackend, XidEvent};
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Fake {
    /// Where the readings came from (kept in the file for people; not used).
    #[serde(default)]
    pub source: Option<String>,
    pub devices: Vec<Device>,
    #[serde(default)]
    pub xid_events: Vec<XidEvent>,
}

impl Fake {
    pub fn load(path: &Path) -> Result<Fake, BackendError> {
        let text =
            std::fs::read_to_string(path).map_err(|e| BackendError::Unavailable(format!("{}: {e}", path.display())))?;
        serde_json::from_str(&text).map_err(|e| BackendError::Unavailable(format!("{}: {e}", path.display())))
    }
}

impl GpuBackend for Fake {
    fn devices(&mut self) -> Result<Vec<Device>, BackendError> {
        Ok(self.devices.clone())
    }

    fn xid_events(&mut self) -> Vec<XidEvent> {
        std::mem::take(&mut self.xid_events)
    }
}
