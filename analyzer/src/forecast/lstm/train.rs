//! The training loop: minibatches of windows drawn from the training part, Adam on the pinball loss,
//! early stopping on the validation part (the end of the fitted history), the best epoch kept.

use burn::optim::{AdamConfig, GradientsParams, grad_clipping::GradientClippingConfig};
use burn::prelude::*;

use super::features::{FEATURES, Rng, Scaler, targets, window_features};
use super::net::{Net, QUANTILES, pinball};
use super::{LstmConfig, Progress};

/// What a fit did, for logs and reports.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainReport {
    /// Epochs run (early stopping may end before `LstmConfig::max_epochs`).
    pub epochs: usize,
    /// The epoch whose weights were kept (1-based).
    pub best_epoch: usize,
    /// Mean pinball loss of the kept weights on the validation part, in scaled units.
    pub validation_loss: f64,
    /// Windows the network trained on, and windows it was validated on, per epoch.
    pub train_windows: usize,
    pub validation_windows: usize,
}

/// The windows of one fit: anchors (index of the last input point) for training and validation.
pub struct Split {
    pub train_end: usize,
    pub train: Vec<usize>,
    pub validation: Vec<usize>,
}

impl Split {
    /// Training anchors see targets inside the training part only; validation anchors' targets lie
    /// in the validation part (the last `validation_fraction` of the history). At most
    /// `max_validation` validation anchors, evenly spaced.
    pub fn new(n: usize, config: &LstmConfig, max_validation: usize) -> Split {
        let validation_len = ((n as f64 * config.validation_fraction).round() as usize).max(config.horizon + 1).min(n);
        let train_end = n - validation_len;
        let window = config.window;
        let train: Vec<usize> = (window..(train_end.saturating_sub(config.horizon))).collect();
        let first_validation = train_end.saturating_sub(1).max(window);
        let all: Vec<usize> = (first_validation..n.saturating_sub(config.horizon)).collect();
        let stride = all.len().div_ceil(max_validation.max(1)).max(1);
        let validation = all.into_iter().step_by(stride).collect();
        Split { train_end, train, validation }
    }
}

/// Builds the time-major input tensor `[window, batch, FEATURES]` and the targets
/// `[batch, horizon, 3]` for `anchors`.
struct Batcher<'a> {
    values: &'a [f64],
    t0_ms: i64,
    step_ms: i64,
    scaler: &'a Scaler,
    window: usize,
    horizon: usize,
}

impl Batcher<'_> {
    fn inputs(&self, anchors: &[usize], device: &Device) -> Tensor<3> {
        let batch = anchors.len();
        let mut one = vec![0f32; self.window * FEATURES];
        let mut data = vec![0f32; self.window * batch * FEATURES];
        for (b, &anchor) in anchors.iter().enumerate() {
            window_features(self.values, anchor, self.window, self.t0_ms, self.step_ms, self.scaler, &mut one);
            for (t, row) in one.chunks_exact(FEATURES).enumerate() {
                let at = (t * batch + b) * FEATURES;
                data[at..at + FEATURES].copy_from_slice(row);
            }
        }
        Tensor::from_data(TensorData::new(data, [self.window, batch, FEATURES]), device)
    }

    /// Targets repeated once per quantile, and the quantile of each column, both `[batch, horizon, 3]`.
    fn targets(&self, anchors: &[usize], device: &Device) -> (Tensor<3>, Tensor<3>) {
        let q = QUANTILES.len();
        let shape = [anchors.len(), self.horizon, q];
        let mut y = vec![0f32; self.horizon];
        let mut data = Vec::with_capacity(anchors.len() * self.horizon * q);
        for &anchor in anchors {
            targets(self.values, anchor, self.horizon, self.scaler, &mut y);
            data.extend(y.iter().flat_map(|&v| [v; 3]));
        }
        let taus: Vec<f32> = (0..anchors.len() * self.horizon).flat_map(|_| QUANTILES).collect();
        (
            Tensor::from_data(TensorData::new(data, shape), device),
            Tensor::from_data(TensorData::new(taus, shape), device),
        )
    }

    /// Mean pinball loss of `net` over `anchors`, without gradients.
    fn loss(&self, net: &Net, anchors: &[usize], device: &Device) -> f64 {
        let mut total = 0.0;
        for chunk in anchors.chunks(512) {
            let (y, taus) = self.targets(chunk, device);
            let loss = pinball(net.forward(self.inputs(chunk, device)), y, taus).into_scalar::<f32>();
            total += f64::from(loss) * chunk.len() as f64;
        }
        total / anchors.len().max(1) as f64
    }
}

/// Trains a network on `values` (gaps already filled), returning it on `device` without autodiff.
pub fn train(
    values: &[f64],
    t0_ms: i64,
    step_ms: i64,
    config: &LstmConfig,
    device: &Device,
    progress: &mut dyn FnMut(&Progress),
) -> (Net, Scaler, TrainReport) {
    let split = Split::new(values.len(), config, 2048);
    let scaler = Scaler::fit(&values[..split.train_end]);
    let batcher = Batcher { values, t0_ms, step_ms, scaler: &scaler, window: config.window, horizon: config.horizon };
    let train_device = device.clone().autodiff();
    let mut rng = Rng::new(config.seed);
    let mut net = Net::init(config.hidden, config.horizon, &mut rng, &train_device);
    let mut optim = AdamConfig::new().with_grad_clipping(Some(GradientClippingConfig::Norm(1.0))).init();

    let per_epoch = config.windows_per_epoch.min(split.train.len()).max(1);
    let batches = per_epoch.div_ceil(config.batch_size);
    let mut learning_rate = config.learning_rate;
    let mut best = (f64::INFINITY, 0usize, net.valid());
    let mut stale = 0;
    let mut epochs = 0;
    let mut anchors = Vec::with_capacity(per_epoch);
    for epoch in 1..=config.max_epochs {
        epochs = epoch;
        // Windows drawn afresh each epoch: consecutive windows overlap almost entirely, so a sample
        // of the month per epoch learns as much as all of it, at a fraction of the cost.
        anchors.clear();
        anchors.extend((0..per_epoch).map(|_| split.train[rng.below(split.train.len())]));
        let mut train_loss = 0.0;
        for (b, chunk) in anchors.chunks(config.batch_size).enumerate() {
            let (y, taus) = batcher.targets(chunk, &train_device);
            let loss = pinball(net.forward(batcher.inputs(chunk, &train_device)), y, taus);
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            train_loss += f64::from(loss.into_scalar::<f32>()) * chunk.len() as f64;
            net = optim.step(learning_rate, net, grads);
            progress(&Progress::Batch { epoch, max_epochs: config.max_epochs, batch: b + 1, batches });
        }
        train_loss /= per_epoch as f64;

        let valid = net.valid();
        let validation_loss = batcher.loss(&valid, &split.validation, device);
        let improved = validation_loss < best.0 * (1.0 - 1e-4);
        if improved {
            best = (validation_loss, epoch, valid);
            stale = 0;
        } else {
            stale += 1;
            // Halving the step on a plateau lets the last epochs refine instead of oscillate.
            learning_rate *= 0.5;
        }
        let stopping = stale >= config.patience || epoch == config.max_epochs;
        progress(&Progress::Epoch {
            epoch,
            max_epochs: config.max_epochs,
            train_loss,
            validation_loss,
            best_epoch: best.1,
            stopping,
        });
        if stopping {
            break;
        }
    }
    let (validation_loss, best_epoch, net) = best;
    let report = TrainReport {
        epochs,
        best_epoch,
        validation_loss,
        train_windows: per_epoch,
        validation_windows: split.validation.len(),
    };
    (net, scaler, report)
}
