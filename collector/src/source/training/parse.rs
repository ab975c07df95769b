//! Trainer log lines → progress: Hugging Face Trainer dict lines, tqdm progress bars (the Trainer's and
//! PyTorch Lightning's, with Lightning's `Epoch N:` prefix and `key=value` postfix), and plain
//! `key=value` lines. Anything else (tracebacks, NCCL chatter, warnings) is not progress and yields
//! nothing; a line is tried as a bar first, then a dict, then `key=value`.

use super::Progress;
use regex::Regex;
use std::sync::LazyLock;

/// What one log line says.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Progress(Progress),
    /// A progress bar's drawing: a snapshot, so of several read at once only the last matters.
    Bar(Progress),
    /// "Saving model checkpoint to …" (Trainer): a checkpoint starts; the next progress ends it.
    CheckpointStart,
}

// The patterns are constants, exercised by the tests.
static BAR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:Epoch (?P<epoch>\d+):)?[^|]*?\d+%\|[^|]*\|\s*(?P<n>\d+)/(?P<total>\d+)\s*\[(?P<elapsed>[\d:]+)<(?P<left>[\d:?]+),\s*(?P<rate>[\d.]+|\?)(?P<unit>it/s|s/it)(?:,\s*(?P<post>[^\]]*))?\]",
    )
    .expect("valid regex")
});
static DICT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\{'\w+': [^{}]*\}").expect("valid regex"));
static DICT_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"'(?P<k>\w+)':\s*(?:tensor\()?(?P<v>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf))")
        .expect("valid regex")
});
static KV: LazyLock<Regex> = LazyLock::new(|| {
    // The value must end at a delimiter; checked by hand, as the regex crate has no lookahead and a
    // consumed delimiter would hide the next pair.
    Regex::new(r"(?:^|[\s,|\[(])(?P<k>[A-Za-z][\w/.-]*)=(?P<v>[-+]?[\d.:]+(?:[eE][-+]?\d+)?%?s?)").expect("valid regex")
});
static CHECKPOINT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"Saving model checkpoint to |Saving checkpoint to ").expect("valid regex"));

/// Parses one log line.
pub fn line(raw: &str) -> Option<Line> {
    // A tqdm bar redraws with carriage returns: the last drawing is the news.
    let text = raw.rsplit('\r').find(|s| !s.trim().is_empty())?;
    if let Some((p, end)) = bar(text) {
        // The Trainer writes its log dict right after the bar's last drawing, on the same line.
        return Some(match dict(&text[end..]) {
            Some(d) => Line::Progress(d.or(p)),
            None => Line::Bar(p),
        });
    }
    if CHECKPOINT.is_match(text) {
        return Some(Line::CheckpointStart);
    }
    if let Some(p) = dict(text) {
        return Some(Line::Progress(p));
    }
    key_values(text).map(Line::Progress)
}

/// A bar's progress and where the bar ends in `text`.
fn bar(text: &str) -> Option<(Progress, usize)> {
    let c = BAR.captures(text)?;
    let end = c.get(0).map_or(text.len(), |m| m.end());
    let num = |n: &str| c.name(n).and_then(|m| m.as_str().parse::<f64>().ok());
    let mut p = key_values_in(c.name("post").map_or("", |m| m.as_str()));
    p.epoch = num("epoch").or(p.epoch);
    p.step = num("n");
    p.total_steps = num("total");
    p.eta_seconds = c.name("left").and_then(|m| clock(m.as_str()));
    let rate = num("rate").filter(|r| *r > 0.0);
    p.steps_per_second = match c.name("unit").map(|m| m.as_str()) {
        Some("s/it") => rate.map(|r| 1.0 / r),
        _ => rate,
    };
    Some((p, end))
}

/// `{'loss': 1.82, 'grad_norm': 0.91, 'learning_rate': 2.9e-05, 'epoch': 0.12}`: the Trainer's log
/// dict, training or evaluation. Its end-of-run summary (`train_runtime`, …) carries an average loss
/// that is not the current one, and is read only for its throughput.
fn dict(text: &str) -> Option<Progress> {
    let d = DICT.find(text)?.as_str();
    let mut p = Progress::default();
    let mut any = false;
    for c in DICT_PAIR.captures_iter(d) {
        let Ok(v) = c["v"].parse::<f64>() else { continue };
        let slot = match &c["k"] {
            "loss" => &mut p.loss,
            "eval_loss" => &mut p.eval_loss,
            "grad_norm" => &mut p.grad_norm,
            "learning_rate" => &mut p.learning_rate,
            "epoch" => &mut p.epoch,
            "step" | "global_step" => &mut p.step,
            "train_samples_per_second" => &mut p.samples_per_second,
            "train_steps_per_second" => &mut p.steps_per_second,
            _ => continue,
        };
        *slot = Some(v);
        any = true;
    }
    any.then_some(p)
}

/// `step=1200 loss=2.31 lr=3e-4 tokens/s=51234 mfu=41.5%`: counts as progress when it names a step or
/// at least two known keys, so an argument dump (`Namespace(lr=0.001, …)`) is not mistaken for one.
fn key_values(text: &str) -> Option<Progress> {
    let p = key_values_in(text);
    (p.step.is_some() || p.known() >= 2).then_some(p)
}

fn key_values_in(text: &str) -> Progress {
    let mut p = Progress::default();
    for c in KV.captures_iter(text) {
        let end = c.get(0).map_or(text.len(), |m| m.end());
        if !text[end..].chars().next().is_none_or(|ch| ch.is_whitespace() || ",|])".contains(ch)) {
            continue;
        }
        let raw = &c["v"];
        let slot = match c["k"].to_ascii_lowercase().as_str() {
            "step" | "global_step" | "iter" | "iteration" => &mut p.step,
            "epoch" => &mut p.epoch,
            "loss" | "train_loss" | "train/loss" | "loss_step" | "train_loss_step" => &mut p.loss,
            "val_loss" | "eval_loss" | "eval/loss" | "val/loss" => &mut p.eval_loss,
            "lr" | "learning_rate" | "train/learning_rate" => &mut p.learning_rate,
            "grad_norm" | "gnorm" => &mut p.grad_norm,
            "samples/s" | "samples_per_second" | "samples_per_sec" | "throughput" => &mut p.samples_per_second,
            "tokens/s" | "tok/s" | "tokens_per_second" | "tokens_per_sec" | "tps" => &mut p.tokens_per_second,
            "mfu" => {
                p.mfu = number(raw).map(|v| if raw.ends_with('%') || v > 1.0 { v / 100.0 } else { v });
                continue;
            }
            "eta" => {
                p.eta_seconds = clock(raw.trim_end_matches('s'));
                continue;
            }
            _ => continue,
        };
        *slot = number(raw);
    }
    p
}

fn number(raw: &str) -> Option<f64> {
    raw.trim_end_matches(['%', 's']).parse::<f64>().ok().filter(|v| v.is_finite())
}

/// "01:42", "1:02:03" or "3600" → seconds; "?" (tqdm before its first rate) → none.
fn clock(s: &str) -> Option<f64> {
    s.split(':').try_fold(0.0, |acc, part| part.parse::<f64>().ok().map(|v| acc * 60.0 + v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expect: expect_test::Expect) {
        expect.assert_eq(&format!("{:?}", line(input)));
    }

    #[test]
    fn trainer_dict_lines() {
        check(
            "{'loss': 1.8213, 'grad_norm': 0.912, 'learning_rate': 2.9e-05, 'epoch': 0.12}",
            expect_test::expect![[
                r#"Some(Progress(Progress { step: None, total_steps: None, epoch: Some(0.12), loss: Some(1.8213), eval_loss: None, grad_norm: Some(0.912), learning_rate: Some(2.9e-5), samples_per_second: None, steps_per_second: None, tokens_per_second: None, mfu: None, eta_seconds: None }))"#
            ]],
        );
        check(
            "[rank0]: {'eval_loss': 1.75, 'eval_runtime': 12.3, 'eval_samples_per_second': 81.3, 'epoch': 1.0}",
            expect_test::expect![[
                r#"Some(Progress(Progress { step: None, total_steps: None, epoch: Some(1.0), loss: None, eval_loss: Some(1.75), grad_norm: None, learning_rate: None, samples_per_second: None, steps_per_second: None, tokens_per_second: None, mfu: None, eta_seconds: None }))"#
            ]],
        );
        check(
            "{'train_runtime': 3601.2, 'train_samples_per_second': 35.5, 'train_steps_per_second': 1.11, 'train_loss': 1.9, 'epoch': 3.0}",
            expect_test::expect![[
                r#"Some(Progress(Progress { step: None, total_steps: None, epoch: Some(3.0), loss: None, eval_loss: None, grad_norm: None, learning_rate: None, samples_per_second: Some(35.5), steps_per_second: Some(1.11), tokens_per_second: None, mfu: None, eta_seconds: None }))"#
            ]],
        );
        check("{'model_type': 'llama', 'hidden_size': 4096}", expect_test::expect!["None"]);
    }

    #[test]
    fn progress_bars() {
        check(
            " 10%|█         | 50/500 [00:25<03:45,  2.00it/s]",
            expect_test::expect![[
                r#"Some(Bar(Progress { step: Some(50.0), total_steps: Some(500.0), epoch: None, loss: None, eval_loss: None, grad_norm: None, learning_rate: None, samples_per_second: None, steps_per_second: Some(2.0), tokens_per_second: None, mfu: None, eta_seconds: Some(225.0) }))"#
            ]],
        );
        check(
            "Epoch 2:  45%|████▌     | 450/1000 [01:23<01:42,  5.39it/s, v_num=0, train_loss=0.234]",
            expect_test::expect![
                "Some(Bar(Progress { step: Some(450.0), total_steps: Some(1000.0), epoch: Some(2.0), loss: Some(0.234), eval_loss: None, grad_norm: None, learning_rate: None, samples_per_second: None, steps_per_second: Some(5.39), tokens_per_second: None, mfu: None, eta_seconds: Some(102.0) }))"
            ],
        );
        // Redrawn with carriage returns, slow steps in s/it, remaining time not yet known.
        check(
            "  0%|          | 0/200 [00:00<?, ?it/s]\r  1%|          | 2/200 [00:09<15:03,  4.56s/it]",
            expect_test::expect![
                "Some(Bar(Progress { step: Some(2.0), total_steps: Some(200.0), epoch: None, loss: None, eval_loss: None, grad_norm: None, learning_rate: None, samples_per_second: None, steps_per_second: Some(0.2192982456140351), tokens_per_second: None, mfu: None, eta_seconds: Some(903.0) }))"
            ],
        );
    }

    #[test]
    fn key_value_lines() {
        check(
            "2026-11-30 02:11:58 | INFO | step=1200 loss=2.3100 lr=3.0e-04 tokens/s=51234 mfu=41.5% eta=1:02:03",
            expect_test::expect![
                "Some(Progress(Progress { step: Some(1200.0), total_steps: None, epoch: None, loss: Some(2.31), eval_loss: None, grad_norm: None, learning_rate: Some(0.0003), samples_per_second: None, steps_per_second: None, tokens_per_second: Some(51234.0), mfu: Some(0.415), eta_seconds: Some(3723.0) }))"
            ],
        );
        check(
            "iter=88 epoch=1 loss=0.57 mfu=0.38",
            expect_test::expect![
                "Some(Progress(Progress { step: Some(88.0), total_steps: None, epoch: Some(1.0), loss: Some(0.57), eval_loss: None, grad_norm: None, learning_rate: None, samples_per_second: None, steps_per_second: None, tokens_per_second: None, mfu: Some(0.38), eta_seconds: None }))"
            ],
        );
        check("Namespace(batch_size=32, epochs=3, lr=0.001, seed=42)", expect_test::expect!["None"]);
        check("export NCCL_DEBUG=INFO NCCL_IB_HCA=mlx5", expect_test::expect!["None"]);
        check("[rank3]:     loss = model(batch).loss", expect_test::expect!["None"]);
    }

    #[test]
    fn checkpoints_and_noise() {
        check(
            "[INFO|trainer.py:3704] 2026-11-30 02:10:00,001 >> Saving model checkpoint to out/checkpoint-500",
            expect_test::expect!["Some(CheckpointStart)"],
        );
        check("[rank3]:   File \"/workspace/train.py\", line 212, in <module>", expect_test::expect!["None"]);
        check("node-7:88210:88301 [0] NCCL INFO Channel 00/32 : 0 1 2 3 4 5 6 7", expect_test::expect!["None"]);
    }
}
