//! The model file: configuration, scaler, the recent points and the network's weights, so a loaded
//! forecaster forecasts exactly what the saved one did. Layout in docs/format/analyzer-lstm.md.

use burn::module::Module;
use burn::store::ModuleRecord;
use burn::tensor::Bytes;

use super::features::{Rng, Scaler};
use super::net::Net;
use super::train::TrainReport;
use super::{Fitted, LstmConfig, LstmForecaster, inference_device, log_progress};

const MAGIC: &[u8; 8] = b"ARGUSLTM";
/// Bumped on any change of layout or meaning; older files are refused rather than misread.
pub const VERSION: u32 = 1;

/// Why a model file could not be read.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum LoadError {
    #[error("not an Argus LSTM model file (bad magic)")]
    BadMagic,
    #[error("LSTM model format version {0} is not supported (this build reads version {VERSION})")]
    Version(u32),
    #[error("LSTM model file is truncated at byte {0}")]
    Truncated(usize),
    #[error("LSTM model file checksum mismatch (stored {stored:#010x}, computed {computed:#010x})")]
    Checksum { stored: u32, computed: u32 },
    #[error("LSTM model file field {field} is invalid: {why}")]
    Invalid { field: &'static str, why: String },
}

impl LstmForecaster {
    /// The fitted model as a model file; `None` before the first fit.
    pub fn to_bytes(&self) -> Option<Vec<u8>> {
        let fitted = self.fitted.as_ref()?;
        let c = &self.config;
        let mut body = Vec::new();
        for v in [c.horizon, c.window, c.hidden, c.max_epochs, c.windows_per_epoch, c.batch_size, c.patience] {
            body.extend((v as u64).to_le_bytes());
        }
        for v in [c.learning_rate, c.validation_fraction] {
            body.extend(v.to_le_bytes());
        }
        body.extend(c.seed.to_le_bytes());
        let r = &fitted.report;
        for v in [r.epochs, r.best_epoch, r.train_windows, r.validation_windows] {
            body.extend((v as u64).to_le_bytes());
        }
        body.extend(r.validation_loss.to_le_bytes());
        for v in [fitted.scaler.mean, fitted.scaler.std, fitted.scaler.change] {
            body.extend(v.to_le_bytes());
        }
        body.extend(fitted.step_ms.to_le_bytes());
        body.extend(fitted.last_ms.to_le_bytes());
        let recent = &fitted.recent[fitted.recent.len() - (c.window + 1)..];
        body.extend((recent.len() as u64).to_le_bytes());
        for v in recent {
            body.extend(v.to_le_bytes());
        }
        // The weights: burn's own record (burnpack), keyed by parameter name.
        let weights = fitted.net.clone().into_record().into_bytes().ok()?;
        body.extend((weights.len() as u64).to_le_bytes());
        body.extend_from_slice(&weights);

        let mut out = Vec::with_capacity(16 + body.len());
        out.extend_from_slice(MAGIC);
        out.extend(VERSION.to_le_bytes());
        out.extend(crc32fast::hash(&body).to_le_bytes());
        out.extend(body);
        Some(out)
    }

    /// The model file in the JSON state of a forecast target (docs/format/analyzer-forecast-state.md):
    /// `{"format": "ARGUSLTM", "bytes": <base64 of the model file>}`.
    pub fn to_json(&self) -> Option<serde_json::Value> {
        use base64::Engine;
        let bytes = self.to_bytes()?;
        Some(
            serde_json::json!({ "format": "ARGUSLTM", "bytes": base64::engine::general_purpose::STANDARD.encode(bytes) }),
        )
    }

    /// Reads back what [`to_json`](Self::to_json) wrote.
    pub fn from_json(state: serde_json::Value) -> Result<LstmForecaster, String> {
        use base64::Engine;
        let text =
            state.get("bytes").and_then(|b| b.as_str()).ok_or_else(|| "LSTM state: no \"bytes\" string".to_string())?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("LSTM state: bytes are not base64: {e}"))?;
        LstmForecaster::from_bytes(&bytes).map_err(|e| e.to_string())
    }

    /// Reads a model file written by [`to_bytes`](Self::to_bytes). Progress goes to the log.
    pub fn from_bytes(bytes: &[u8]) -> Result<LstmForecaster, LoadError> {
        if bytes.len() < 16 {
            return Err(if bytes.starts_with(&MAGIC[..bytes.len().min(8)]) {
                LoadError::Truncated(bytes.len())
            } else {
                LoadError::BadMagic
            });
        }
        if &bytes[..8] != MAGIC {
            return Err(LoadError::BadMagic);
        }
        let version = u32::from_le_bytes(bytes[8..12].try_into().unwrap_or_default());
        if version != VERSION {
            return Err(LoadError::Version(version));
        }
        let stored = u32::from_le_bytes(bytes[12..16].try_into().unwrap_or_default());
        let computed = crc32fast::hash(&bytes[16..]);
        if stored != computed {
            return Err(LoadError::Checksum { stored, computed });
        }
        let mut r = Reader { bytes, at: 16 };
        let mut sizes = [0usize; 7];
        for s in &mut sizes {
            *s = r.u64()? as usize;
        }
        let [horizon, window, hidden, max_epochs, windows_per_epoch, batch_size, patience] = sizes;
        let config = LstmConfig {
            horizon,
            window,
            hidden,
            max_epochs,
            windows_per_epoch,
            batch_size,
            patience,
            learning_rate: r.f64()?,
            validation_fraction: r.f64()?,
            seed: r.u64()?,
        };
        let report = TrainReport {
            epochs: r.u64()? as usize,
            best_epoch: r.u64()? as usize,
            train_windows: r.u64()? as usize,
            validation_windows: r.u64()? as usize,
            validation_loss: r.f64()?,
        };
        let scaler = Scaler { mean: r.f64()?, std: r.f64()?, change: r.f64()? };
        let step_ms = r.u64()? as i64;
        let last_ms = r.u64()? as i64;
        let n = r.u64()? as usize;
        if n != window + 1 || horizon == 0 || hidden == 0 || window == 0 {
            return Err(LoadError::Invalid {
                field: "recent",
                why: format!("{n} recent points for window {window}, horizon {horizon}, hidden {hidden}"),
            });
        }
        let recent = (0..n).map(|_| r.f64()).collect::<Result<Vec<_>, _>>()?;
        let len = r.u64()? as usize;
        let weights = r.take(len)?;
        let record = ModuleRecord::from_bytes(Bytes::from_bytes_vec(weights.to_vec()))
            .map_err(|e| LoadError::Invalid { field: "weights", why: e.to_string() })?;
        // Shapes come from the configuration; the record must match them exactly.
        let net = Net::init(hidden, horizon, &mut Rng::new(0), &inference_device())
            .try_load_record(record)
            .map_err(|e| LoadError::Invalid { field: "weights", why: e.to_string() })?;
        Ok(LstmForecaster {
            config,
            progress: Box::new(log_progress),
            fitted: Some(Fitted { net, scaler, step_ms, last_ms, recent, report }),
        })
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], LoadError> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len()).ok_or(LoadError::Truncated(self.at))?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn u64(&mut self) -> Result<u64, LoadError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().unwrap_or_default()))
    }

    fn f64(&mut self) -> Result<f64, LoadError> {
        Ok(f64::from_bits(self.u64()?))
    }
}
