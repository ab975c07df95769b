//! The network: one LSTM layer over the input window and a linear head that emits the 10th, 50th
//! and 90th percentiles of the change at every step of the horizon.
//!
//! The LSTM cell is ours rather than `burn::nn::Lstm`: that one runs four gate controllers with two
//! matrix products each per time step; here the input projection of the whole window is one product
//! and each step costs one `[batch, hidden] × [hidden, 4·hidden]` product, which is what makes a fit
//! on a month of one-minute data fit in a minute on one core.

use burn::module::Param;
use burn::prelude::*;
use burn::tensor::activation::sigmoid;

use super::features::{FEATURES, Rng};

/// The quantiles the head emits, in output order.
pub const QUANTILES: [f32; 3] = [0.1, 0.5, 0.9];

#[derive(Module, Debug)]
pub struct Net {
    /// `[FEATURES, 4·hidden]`, gates in the order input, forget, output, cell.
    w_input: Param<Tensor<2>>,
    /// `[hidden, 4·hidden]`.
    w_hidden: Param<Tensor<2>>,
    /// `[1, 4·hidden]`.
    bias: Param<Tensor<2>>,
    /// `[hidden, horizon·3]`.
    w_head: Param<Tensor<2>>,
    /// `[1, horizon·3]`.
    b_head: Param<Tensor<2>>,
}

impl Net {
    /// Initial weights drawn from `rng`: uniform in ±1/√hidden (PyTorch's LSTM default), forget-gate
    /// bias 1 so the cell remembers from the start.
    pub fn init(hidden: usize, horizon: usize, rng: &mut Rng, device: &Device) -> Net {
        let bound = 1.0 / (hidden as f64).sqrt();
        let mut uniform = |rows: usize, cols: usize| {
            let data: Vec<f32> = (0..rows * cols).map(|_| ((rng.unit() * 2.0 - 1.0) * bound) as f32).collect();
            Param::from_data(TensorData::new(data, [rows, cols]), device)
        };
        let w_input = uniform(FEATURES, 4 * hidden);
        let w_hidden = uniform(hidden, 4 * hidden);
        let w_head = uniform(hidden, horizon * QUANTILES.len());
        let mut bias = vec![0f32; 4 * hidden];
        bias[hidden..2 * hidden].fill(1.0);
        let bias = Param::from_data(TensorData::new(bias, [1, 4 * hidden]), device);
        let b_head = Param::from_data(TensorData::new(vec![0f32; horizon * QUANTILES.len()], [1, horizon * 3]), device);
        Net { w_input, w_hidden, bias, w_head, b_head }
    }

    pub fn hidden(&self) -> usize {
        self.w_hidden.dims()[0]
    }

    pub fn horizon(&self) -> usize {
        self.w_head.dims()[1] / QUANTILES.len()
    }

    /// `inputs` is `[window, batch, FEATURES]` (time-major); returns `[batch, horizon, 3]`.
    pub fn forward(&self, inputs: Tensor<3>) -> Tensor<3> {
        let [window, batch, features] = inputs.dims();
        let hidden = self.hidden();
        let device = inputs.device();
        // The input side of every gate for every step at once.
        let projected = inputs.reshape([window * batch, features]).matmul(self.w_input.val()) + self.bias.val();
        let w_hidden = self.w_hidden.val();
        let mut h = Tensor::<2>::zeros([batch, hidden], &device);
        let mut c = Tensor::<2>::zeros([batch, hidden], &device);
        for t in 0..window {
            let gates = projected.clone().narrow(0, t * batch, batch) + h.matmul(w_hidden.clone());
            let ifo = sigmoid(gates.clone().narrow(1, 0, 3 * hidden));
            let candidate = gates.narrow(1, 3 * hidden, hidden).tanh();
            let input_gate = ifo.clone().narrow(1, 0, hidden);
            let forget_gate = ifo.clone().narrow(1, hidden, hidden);
            let output_gate = ifo.narrow(1, 2 * hidden, hidden);
            c = forget_gate * c + input_gate * candidate;
            h = output_gate * c.clone().tanh();
        }
        let out = h.matmul(self.w_head.val()) + self.b_head.val();
        out.reshape([batch, self.horizon(), QUANTILES.len()])
    }
}

/// Mean pinball (quantile) loss of `predicted` (`[batch, horizon, 3]`) against `targets` repeated
/// along the last axis; `taus` holds the quantile of each column, same shape.
pub fn pinball(predicted: Tensor<3>, targets: Tensor<3>, taus: Tensor<3>) -> Tensor<1> {
    let error = targets - predicted;
    let under = error.clone() * taus.clone();
    let over = error * (taus - 1.0);
    under.max_pair(over).mean()
}
