//! An LSTM forecaster (burn): from a window of recent points and the time of day and week, one
//! layer of LSTM cells predicts the 10th, 50th and 90th percentiles of the change from the last
//! value at every step of the horizon. The median is the forecast, the outer two the 80 % band.
//!
//! Predicting the change rather than the level is what lets it compete with the last value at short
//! horizons: it starts from naive's answer and learns only the corrections (trends, mean reversion
//! after spikes, the hour's usual drift). Scaling is fitted on the training part of the history;
//! the last `validation_fraction` of it picks the epoch (early stopping). Weights are drawn from a
//! seeded generator and the CPU backend runs on one thread, so a fit is a pure function of the
//! history, the configuration and the seed.

mod features;
mod net;
mod persist;
mod train;

#[cfg(test)]
mod tests;

use burn::prelude::*;

use self::features::{FEATURES, Scaler, fill_gaps, window_features};
use self::net::Net;
use super::{Forecast, ForecastError, Forecaster, Regular};

pub use self::persist::LoadError;
pub use self::train::TrainReport;

/// Hyperparameters of one LSTM forecaster.
#[derive(Debug, Clone, PartialEq)]
pub struct LstmConfig {
    /// Steps predicted at once; forecasts may ask for fewer.
    pub horizon: usize,
    /// Steps of history the network reads per forecast.
    pub window: usize,
    /// LSTM cells.
    pub hidden: usize,
    /// Upper bound on epochs; early stopping usually ends sooner.
    pub max_epochs: usize,
    /// Windows drawn from the training part per epoch.
    pub windows_per_epoch: usize,
    pub batch_size: usize,
    /// Adam's initial step; halved after every epoch that does not improve the validation loss.
    pub learning_rate: f64,
    /// Epochs without improvement before stopping.
    pub patience: usize,
    /// The share of the history, at its end, held out for early stopping.
    pub validation_fraction: f64,
    pub seed: u64,
}

impl Default for LstmConfig {
    fn default() -> LstmConfig {
        LstmConfig {
            horizon: 15,
            window: 32,
            hidden: 32,
            max_epochs: 20,
            windows_per_epoch: 8192,
            batch_size: 128,
            learning_rate: 3e-3,
            patience: 3,
            validation_fraction: 0.1,
            seed: 0x0041_7267_7573,
        }
    }
}

impl LstmConfig {
    /// Training windows a fit needs at least, beyond one window and one horizon.
    const MIN_TRAIN_WINDOWS: usize = 64;

    /// Points of history `fit` needs.
    pub fn min_history(&self) -> usize {
        let base = self.window + 1 + self.horizon + Self::MIN_TRAIN_WINDOWS;
        // The validation part comes on top of the training part.
        (base as f64 / (1.0 - self.validation_fraction.clamp(0.0, 0.5))).ceil() as usize + self.horizon
    }
}

/// Training progress, reported after every minibatch and every epoch.
#[derive(Debug, Clone, PartialEq)]
pub enum Progress {
    Batch { epoch: usize, max_epochs: usize, batch: usize, batches: usize },
    Epoch { epoch: usize, max_epochs: usize, train_loss: f64, validation_loss: f64, best_epoch: usize, stopping: bool },
}

/// Receives training progress: a progress bar in the CLI, log lines in the runtime.
pub type ProgressFn = Box<dyn FnMut(&Progress) + Send>;

static PROGRESS_BAR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Also draws training progress as a bar on stderr, for a command run on a terminal.
pub fn show_progress_bar(on: bool) {
    PROGRESS_BAR.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// The default progress reporting: one log line per epoch, and a bar when [`show_progress_bar`] is on.
pub fn log_progress(progress: &Progress) {
    if PROGRESS_BAR.load(std::sync::atomic::Ordering::Relaxed) {
        draw_bar(progress);
    }
    if let Progress::Epoch { epoch, max_epochs, train_loss, validation_loss, best_epoch, stopping } = *progress {
        tracing::info!(
            epoch,
            max_epochs,
            train_loss,
            validation_loss,
            best_epoch,
            stopping,
            "LSTM training epoch done"
        );
    }
}

/// One line on stderr, redrawn in place: the epoch, a bar over its batches, and at its end the
/// validation loss.
fn draw_bar(progress: &Progress) {
    const WIDTH: usize = 30;
    let (epoch, max_epochs, done, tail) = match *progress {
        Progress::Batch { epoch, max_epochs, batch, batches } => {
            (epoch, max_epochs, batch as f64 / batches.max(1) as f64, String::new())
        }
        Progress::Epoch { epoch, max_epochs, validation_loss, best_epoch, stopping, .. } => {
            let stop = if stopping { ", stopping" } else { "" };
            (epoch, max_epochs, 1.0, format!(" validation loss {validation_loss:.4}, best epoch {best_epoch}{stop}\n"))
        }
    };
    let filled = ((done * WIDTH as f64).round() as usize).min(WIDTH);
    eprint!("\r\x1b[2KLSTM epoch {epoch}/{max_epochs} [{}{}]{tail}", "#".repeat(filled), "-".repeat(WIDTH - filled));
}

/// The LSTM forecaster: configure, `fit`, then `observe` and `forecast`.
pub struct LstmForecaster {
    config: LstmConfig,
    progress: ProgressFn,
    fitted: Option<Fitted>,
}

/// A fitted network and the recent points it reads.
struct Fitted {
    net: Net,
    scaler: Scaler,
    step_ms: i64,
    /// Time of the last point seen.
    last_ms: i64,
    /// The last points seen, oldest first; at least `window + 1` once fitted.
    recent: Vec<f64>,
    report: TrainReport,
}

impl LstmForecaster {
    pub fn new(config: LstmConfig) -> LstmForecaster {
        LstmForecaster { config, progress: Box::new(log_progress), fitted: None }
    }

    /// Replaces the default progress reporting (log lines).
    pub fn with_progress(mut self, progress: ProgressFn) -> LstmForecaster {
        self.progress = progress;
        self
    }

    pub fn config(&self) -> &LstmConfig {
        &self.config
    }

    /// What the last fit did; `None` before the first fit and after loading.
    pub fn report(&self) -> Option<&TrainReport> {
        self.fitted.as_ref().map(|f| &f.report)
    }
}

impl Forecaster for LstmForecaster {
    fn name(&self) -> &str {
        "lstm"
    }

    fn fit(&mut self, history: Regular<'_>) -> Result<(), ForecastError> {
        let need = self.config.min_history();
        if history.values.len() < need {
            return Err(ForecastError::TooShort { need, have: history.values.len() });
        }
        if history.step_ms <= 0 {
            return Err(ForecastError::Model(format!("step must be positive, got {} ms", history.step_ms)));
        }
        let values =
            fill_gaps(history.values).ok_or_else(|| ForecastError::Model("history has no finite value".to_string()))?;
        let device = training_device();
        let (net, scaler, report) =
            train::train(&values, history.start_ms, history.step_ms, &self.config, &device, &mut self.progress);
        let keep = values.len() - (self.config.window + 1);
        self.fitted = Some(Fitted {
            net: net.to_device(&inference_device()),
            scaler,
            step_ms: history.step_ms,
            last_ms: history.start_ms + (values.len() as i64 - 1) * history.step_ms,
            recent: values[keep..].to_vec(),
            report,
        });
        Ok(())
    }

    fn observe(&mut self, value: f64) {
        let Some(fitted) = &mut self.fitted else { return };
        let value = if value.is_finite() { value } else { *fitted.recent.last().unwrap_or(&0.0) };
        fitted.recent.push(value);
        fitted.last_ms += fitted.step_ms;
        // Trim rarely: keeping up to twice the window makes each observe O(1) amortised.
        let keep = self.config.window + 1;
        if fitted.recent.len() > 2 * keep {
            fitted.recent.drain(..fitted.recent.len() - keep);
        }
    }

    fn forecast(&self, horizon: usize) -> Result<Forecast, ForecastError> {
        let fitted = self.fitted.as_ref().ok_or_else(|| ForecastError::Model("lstm is not fitted".to_string()))?;
        if horizon > self.config.horizon {
            return Err(ForecastError::Model(format!(
                "lstm was trained for {} steps ahead, asked for {horizon}",
                self.config.horizon
            )));
        }
        let window = self.config.window;
        let values = &fitted.recent;
        let anchor = values.len() - 1;
        let t0_ms = fitted.last_ms - anchor as i64 * fitted.step_ms;
        let mut inputs = vec![0f32; window * FEATURES];
        window_features(values, anchor, window, t0_ms, fitted.step_ms, &fitted.scaler, &mut inputs);
        let device = inference_device();
        let inputs = Tensor::<3>::from_data(TensorData::new(inputs, [window, 1, FEATURES]), &device);
        let out = fitted
            .net
            .forward(inputs)
            .into_data()
            .try_into_vec::<f32>()
            .map_err(|e| ForecastError::Model(format!("{e:?}")))?;
        let last = values[anchor];
        let mut forecast = Forecast {
            mean: Vec::with_capacity(horizon),
            lower: Vec::with_capacity(horizon),
            upper: Vec::with_capacity(horizon),
        };
        for q in out.chunks_exact(3).take(horizon) {
            // The three heads are trained independently; sorting keeps the band around the median.
            let mut q = [q[0], q[1], q[2]].map(|z| last + f64::from(z) * fitted.scaler.change);
            q.sort_by(f64::total_cmp);
            forecast.lower.push(q[0]);
            forecast.mean.push(q[1]);
            forecast.upper.push(q[2]);
        }
        Ok(forecast)
    }

    fn save(&self) -> Option<serde_json::Value> {
        self.to_json()
    }
}

/// Where training runs: the GPU with the `cuda` feature, burn's own CPU backend (`flex`) otherwise.
fn training_device() -> Device {
    #[cfg(feature = "cuda")]
    return Device::cuda(0);
    #[cfg(not(feature = "cuda"))]
    Device::flex()
}

/// Forecasts are single small forward passes: cheaper on the CPU than a kernel launch per step.
fn inference_device() -> Device {
    Device::flex()
}
