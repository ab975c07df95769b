//! The runtime's univariate detector: the dynamic threshold's band and the anomaly likelihood of its
//! residuals, followed by a record stage.
//!
//! The raw surprise of a point is the larger of the band score and the likelihood score (each above 1 when
//! anomalous). The record stage divides it by the largest raw surprise seen before, decayed a little every
//! point and never below [`UnivariateParams::record_floor`]: the final score is above 1 only for a point that is
//! outside the band *and* beyond anything the series showed recently. A level shift alarms once, not for every
//! point until the baseline catches up; a series that is always spiky stops alarming on its usual spikes. The
//! record is forgotten when the threshold's warm-up ends, since its early surprises were measured against a
//! rough baseline. The expected value and the band are the threshold's.
//!
//! Beside the record stage sits a novelty check: a value beyond the whole range the series has shown, by
//! more than [`NoveltyParams::tolerance`] of that range and in the watched direction, is anomalous however
//! surprised the record stage is, provided the band or the likelihood finds it at least
//! [`NoveltyParams::min_surprise`] unusual. A series that reaches a level it has never reached is what an
//! operator wants to hear about, even when an old spike set the record higher than this point's deviation.
//!
//! And beside the record stage sits a sustained stage: the smallest raw surprise of the last
//! [`SustainParams::points`] points, divided by a record of its own (decayed and floored like the first) and
//! multiplied by [`SustainParams::gain`]. A brief spike hardly moves that record, since the smallest surprise
//! around a one-point spike is small, so a deviation that lasts (a level shift, a stuck value, a slow
//! excursion) alarms even after a much larger spike has deafened the record stage. The stages' score is the
//! largest of the three and the stuck-value stage's.
//!
//! Last among the stages, the stuck-value stage ([`super::stuck`]): a run of one repeated value that lasts
//! [`StuckParams::factor`] times the longest run the series has completed, and at least
//! [`StuckParams::min_points`] points, scores 2.2 or more — a frozen gauge, which the band takes for
//! normal when the frozen value is near the expected one. It scores once the threshold's warm-up is over,
//! on every side (a held value is neither a rise nor a drop), and learns from the first point.
//!
//! Beside the stages runs the second family, adaptive resonance ([`super::art`]): the novelty of the
//! last few points' shape among the shapes the series has shown. Its score, times
//! [`UnivariateParams::art_weight`] and kept to the watched side of the expected value for a one-sided
//! rule, joins the stages' score through [`super::ensemble`]: the final score is above 1 when one family
//! is far out (above 2) or both are out (above 1). The two families fail differently (the band misses a
//! change of shape that stays inside it, resonance misses a slow drift it keeps learning, and each has
//! false alarms of its own), so a point both find unusual is the strongest evidence. During resonance's
//! probation its score is 0, and the stages alone must reach 2.
//!
//! Last, the alert level (`alert_level = "spot"`; the default is `"fixed"`): the stages' scores of the first
//! [`SpotParams::calibration`] points after warm-up calibrate SPOT ([`super::spot`]), and from then on the
//! final score is the stages' score divided by SPOT's level, the score a normal point of this series passes
//! with probability `spot.q`. A series whose stages score high all the time and one whose stages hardly
//! ever score get levels of their own, rather than 1 for both. While calibrating, and with
//! `alert_level = "fixed"`, the level is 1.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::art::{Art, ArtParams};
use super::likelihood::{Likelihood, LikelihoodParams};
use super::spot::{AlertLevel, Spot, SpotParams};
use super::stuck::{Stuck, StuckParams};
use super::threshold::{Threshold, ThresholdParams};
use super::{Direction, StreamDetector, Verdict};

/// Parameters of the univariate ensemble.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct UnivariateParams {
    pub threshold: ThresholdParams,
    pub likelihood: LikelihoodParams,
    /// Per-point decay of the record; 0 turns the record stage off (the score is then the raw surprise).
    pub record_decay: f64,
    /// The record never falls below this.
    pub record_floor: f64,
    pub novelty: NoveltyParams,
    pub sustain: SustainParams,
    /// The stuck-value stage; off unless both its factor and its minimum run are above 0.
    pub stuck: StuckParams,
    /// How the level that maps to a final score of 1 is set: by SPOT on the series' own scores, or 1.
    pub alert_level: AlertLevel,
    /// SPOT's parameters; the univariate default keeps at most 250 peaks per series (2 KiB).
    pub spot: SpotParams,
    /// The adaptive-resonance detector beside the stages.
    pub art: ArtParams,
    /// The resonance score is multiplied by this before it joins the stages' score in the ensemble; 0 turns
    /// the resonance detector off (the final score is then the stages' own).
    pub art_weight: f64,
}

/// When a surprise that lasts counts as anomalous, whatever brief spikes came before.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SustainParams {
    /// Points a surprise must last: the stage scores the smallest raw surprise of the last `points`; 0 turns
    /// the stage off (as does turning the record stage off, whose decay and floor it shares).
    pub points: usize,
    /// Multiplies the sustained surprise over its record: above 1, a lasting surprise alarms a little before
    /// it reaches its record (a lasting deviation is rarer than a brief one of the same size).
    pub gain: f64,
}

impl Default for SustainParams {
    fn default() -> Self {
        SustainParams { points: 12, gain: 1.5 }
    }
}

/// When a value beyond the series' whole range counts as anomalous on its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NoveltyParams {
    /// Share of the range seen so far a value must lie beyond it; 0 turns the check off.
    pub tolerance: f64,
    /// Points seen before the check starts: a range learnt from fewer says little.
    pub after: u64,
    /// The raw surprise (band or likelihood score) a novel value needs as well.
    pub min_surprise: f64,
    /// The score a novel value gets, at the least; above 2, so it is a strong finding in `ensemble` on its own.
    pub score: f64,
}

impl Default for NoveltyParams {
    fn default() -> Self {
        NoveltyParams { tolerance: 0.01, after: 150, min_surprise: 0.5, score: 2.2 }
    }
}

impl Default for UnivariateParams {
    fn default() -> Self {
        UnivariateParams {
            threshold: ThresholdParams::default(),
            likelihood: LikelihoodParams::default(),
            record_decay: 0.999,
            record_floor: 1.0,
            novelty: NoveltyParams::default(),
            sustain: SustainParams::default(),
            stuck: STUCK,
            // SPOT is opt-in here: on NAB it lowered the standard score from 63.80 to 50.13
            // (bench/results/spot-2026-12-07.json). The stages' record already adapts each series' level.
            alert_level: AlertLevel::Fixed,
            spot: SpotParams { max_peaks: 250, ..SpotParams::default() },
            art: ArtParams::default(),
            art_weight: ART_WEIGHT,
        }
    }
}

/// The default [`UnivariateParams::stuck`]: off. Left out one data set at a time on `argus eval pages`,
/// every setting tried (factor 2, 4 or 8, at least 3 or 5 points) added false pages and at most one fault
/// notified within 5 minutes (bench/results/pages-2026-12-08-stuck-*.json, docs/eval-pages.md): a series that idles
/// at exactly 0 looks, alone, like one that froze.
pub const STUCK: StuckParams = StuckParams::OFF;

/// The default [`UnivariateParams::art_weight`].
pub const ART_WEIGHT: f64 = 1.0;

/// The univariate ensemble over one series; serialisable like its parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Univariate {
    threshold: Threshold,
    likelihood: Likelihood,
    record_decay: f64,
    record_floor: f64,
    record: f64,
    /// Absent from models saved before the check existed: they resume with the default check, learning the
    /// range afresh. It watches the threshold's direction.
    #[serde(default)]
    novelty: Novelty,
    /// Absent from models saved before the stage existed: they resume with the default stage.
    #[serde(default)]
    sustain: Sustain,
    /// Absent from state saved before the stage existed (analyzer state versions 1 to 3): it resumes with
    /// the stage off, as it ran then.
    #[serde(default)]
    stuck: Stuck,
    /// Absent from state saved before the alert level existed (analyzer state version 1): it resumes with
    /// the default level (fixed, as before).
    #[serde(default)]
    alert: Alert,
    /// The resonance detector and its weight; `null` when turned off. Absent from state saved before it
    /// existed (analyzer state versions 1 and 2): it resumes with the default detector, in probation.
    #[serde(default = "default_art")]
    art: Option<(Art, f64)>,
}

fn default_art() -> Option<(Art, f64)> {
    Some((Art::default(), ART_WEIGHT))
}

/// The alert level: SPOT, once calibrated on the stages' scores after warm-up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Alert {
    level: AlertLevel,
    params: SpotParams,
    /// The stages' scores since warm-up ended, until `params.calibration` of them calibrate SPOT. Single
    /// precision, like the threshold's warm-up buffer: it is per series.
    calibrating: Vec<f32>,
    spot: Option<Spot>,
}

impl Default for Alert {
    fn default() -> Self {
        let p = UnivariateParams::default();
        Alert::new(p.alert_level, p.spot)
    }
}

impl Alert {
    fn new(level: AlertLevel, params: SpotParams) -> Self {
        Alert { level, params, calibrating: Vec::new(), spot: None }
    }

    /// The final score of a point whose stages scored `score`; `warm` once the threshold's warm-up is over.
    fn apply(&mut self, score: f64, warm: bool) -> f64 {
        if self.level == AlertLevel::Fixed || !warm {
            return score;
        }
        if let Some(spot) = &mut self.spot {
            let level = spot.level();
            spot.update(score);
            return if level > 0.0 { score / level } else { score };
        }
        self.calibrating.push(score as f32);
        if self.calibrating.len() >= self.params.calibration.max(1) {
            let scores: Vec<f64> = std::mem::take(&mut self.calibrating).into_iter().map(f64::from).collect();
            // A series whose scores have no tail yet (constant, or nearly) collects a new window.
            self.spot = Spot::calibrate(&self.params, &scores).ok();
        }
        score
    }
}

/// The sustained stage's parameters, the last raw surprises and its record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Sustain {
    params: SustainParams,
    /// The last `params.points` raw surprises, oldest first.
    recent: VecDeque<f64>,
    record: f64,
}

impl Default for Sustain {
    fn default() -> Self {
        Sustain::new(SustainParams::default(), UnivariateParams::default().record_floor)
    }
}

impl Sustain {
    fn new(params: SustainParams, floor: f64) -> Self {
        Sustain { recent: VecDeque::new(), params, record: floor }
    }

    /// The sustained score after a point of raw surprise `raw` (0 until `points` points are in); decays and
    /// raises the record like the record stage's.
    fn update(&mut self, raw: f64, decay: f64, floor: f64) -> f64 {
        let points = self.params.points;
        if points == 0 {
            return 0.0;
        }
        if self.recent.len() == points {
            self.recent.pop_front();
        }
        self.recent.push_back(raw);
        if self.recent.len() < points {
            return 0.0;
        }
        let lasting = self.recent.iter().copied().fold(f64::INFINITY, f64::min);
        let score = self.params.gain * lasting / self.record;
        self.record = (self.record * decay).max(lasting).max(floor);
        score
    }

    /// Forgets the surprises measured against the warm-up's rough baseline.
    fn reset(&mut self, floor: f64) {
        self.recent.clear();
        self.record = floor;
    }
}

/// The novelty check's parameters and the range seen so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Novelty {
    params: NoveltyParams,
    seen: u64,
    /// The lowest and highest finite values seen (meaningless while `seen` is 0).
    lo: f64,
    hi: f64,
}

impl Default for Novelty {
    fn default() -> Self {
        Novelty::new(NoveltyParams::default())
    }
}

impl Novelty {
    fn new(params: NoveltyParams) -> Self {
        Novelty { params, seen: 0, lo: 0.0, hi: 0.0 }
    }

    /// The novelty score of `value` given its raw surprise (0 when not novel, or beyond the range on the
    /// side `direction` does not watch); widens the range.
    fn update(&mut self, value: f64, raw: f64, direction: Direction) -> f64 {
        if !value.is_finite() {
            return 0.0;
        }
        let (lo, hi, seen) = (self.lo, self.hi, self.seen);
        (self.lo, self.hi) = if seen == 0 { (value, value) } else { (lo.min(value), hi.max(value)) };
        self.seen += 1;
        let p = &self.params;
        if p.tolerance <= 0.0 || seen < p.after.max(1) || raw < p.min_surprise {
            return 0.0;
        }
        let margin = p.tolerance * (hi - lo);
        let deviation = if value > hi + margin {
            value - hi
        } else if value < lo - margin {
            value - lo
        } else {
            return 0.0;
        };
        if direction.keeps(deviation) { p.score } else { 0.0 }
    }
}

impl Univariate {
    pub fn new(params: UnivariateParams) -> Self {
        Univariate {
            novelty: Novelty::new(params.novelty),
            sustain: Sustain::new(params.sustain, params.record_floor),
            stuck: Stuck::new(params.stuck),
            threshold: Threshold::new(params.threshold),
            likelihood: Likelihood::new(params.likelihood),
            record_decay: params.record_decay,
            record_floor: params.record_floor,
            record: params.record_floor,
            alert: Alert::new(params.alert_level, params.spot),
            art: (params.art_weight > 0.0).then(|| (Art::new(params.art), params.art_weight)),
        }
    }

    /// The resonance detector, when on.
    pub fn art(&self) -> Option<&Art> {
        self.art.as_ref().map(|(a, _)| a)
    }

    /// The stages' `score` joined with the resonance score of `value` (weighted, on the watched side of the
    /// expected value only); the stages' score alone when resonance is off.
    fn resonate(&mut self, score: f64, t_ms: i64, value: f64, expected: Option<f64>) -> f64 {
        let Some((art, weight)) = &mut self.art else { return score };
        let resonance = *weight * art.update(t_ms, value).score;
        let direction = self.threshold.direction();
        let watched = match expected {
            _ if direction == Direction::Both => true,
            Some(e) => direction.keeps(value - e),
            None => false,
        };
        super::ensemble(&[score, if watched { resonance } else { 0.0 }])
    }

    /// SPOT's state, once calibrated.
    pub fn spot(&self) -> Option<&Spot> {
        self.alert.spot.as_ref()
    }
}

impl StreamDetector for Univariate {
    fn name(&self) -> &'static str {
        "univariate"
    }

    fn update(&mut self, t_ms: i64, value: f64) -> Verdict {
        let (verdict, z) = self.threshold.peek(value);
        let warming = self.threshold.period().is_none();
        self.threshold.update(t_ms, value);
        // The likelihood learns the residuals on the watched side only: a rule that watches rises must not
        // alarm because a drop is unusually long or deep.
        let raw = verdict.score.max(self.likelihood.update(self.threshold.direction().watched(z)));
        let novel = self.novelty.update(value, raw, self.threshold.direction());
        let stuck = self.stuck.update(value, !warming);
        if self.record_decay <= 0.0 {
            let score = self.resonate(raw.max(novel).max(stuck), t_ms, value, verdict.expected);
            let score = self.alert.apply(score, !warming);
            return Verdict { score, ..verdict };
        }
        let lasting = self.sustain.update(raw, self.record_decay, self.record_floor);
        let score = (raw / self.record).max(novel).max(lasting).max(stuck);
        let score = self.resonate(score, t_ms, value, verdict.expected);
        self.record = (self.record * self.record_decay).max(raw).max(self.record_floor);
        if warming && self.threshold.period().is_some() {
            self.record = self.record_floor;
            self.sustain.reset(self.record_floor);
        }
        let score = self.alert.apply(score, !warming);
        Verdict { score, ..verdict }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stages alone, without the resonance detector: the tests of the stages' behaviour.
    fn stages() -> UnivariateParams {
        UnivariateParams { art_weight: 0.0, ..Default::default() }
    }

    fn noise(i: u64) -> f64 {
        super::super::threshold::tests::noise(i as usize)
    }

    /// The ensemble with both families, as the runtime runs it: a flat series then a step alarms at the
    /// step and not before, whatever noise the flat part has.
    #[test]
    fn with_resonance_a_flat_series_is_quiet_and_its_step_alarms() {
        let mut e = Univariate::new(UnivariateParams::default());
        assert!(e.art().is_some());
        let flat: Vec<f64> = (0..3000).map(|i| e.update(i as i64, 10.0 + 0.2 * noise(i)).score).collect();
        let worst = flat.iter().cloned().fold(0.0, f64::max);
        assert!(worst < 1.0, "{worst} at {:?}", flat.iter().position(|&s| s == worst));
        let step: Vec<f64> = (3000..3100).map(|i| e.update(i as i64, 14.0 + 0.2 * noise(i)).score).collect();
        assert!(step[0] > 1.0, "{:?}", &step[..5]);
        assert!(step[50..].iter().all(|&s| s < 1.0), "{step:?}");
    }

    #[test]
    fn with_resonance_a_periodic_series_is_quiet_after_warm_up() {
        let mut e = Univariate::new(UnivariateParams::default());
        let wave = |i: u64| 50.0 + 20.0 * (i as f64 * std::f64::consts::TAU / 48.0).sin() + noise(i);
        let s: Vec<f64> = (0..6000).map(|i| e.update(i as i64, wave(i)).score).collect();
        let worst = s[700..].iter().cloned().fold(0.0, f64::max);
        assert!(worst < 1.0, "{worst} at {:?}", s.iter().position(|&v| v == worst));
        // Both families see a cycle that breaks off: a drop to the trough's depth at the crest.
        let glitch: Vec<f64> =
            (6000..6020).map(|i| e.update(i as i64, if i == 6012 { 10.0 } else { wave(i) }).score).collect();
        assert!(glitch[12] > 1.0, "{glitch:?}");
    }

    #[test]
    fn with_resonance_the_same_input_gives_the_same_scores_across_a_save_and_restore() {
        let series = |i: u64| 5.0 + (i as f64 / 7.0).sin() + 0.3 * noise(i) + if i > 2500 { 3.0 } else { 0.0 };
        let (mut a, mut b) =
            (Univariate::new(UnivariateParams::default()), Univariate::new(UnivariateParams::default()));
        let first: Vec<Verdict> = (0..3000).map(|i| a.update(i as i64, series(i))).collect();
        let second: Vec<Verdict> = (0..3000).map(|i| b.update(i as i64, series(i))).collect();
        assert_eq!(first, second);
        assert!(a.art().is_some_and(Art::is_live));
        let mut back: Univariate = serde_json::from_str(&serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(back, a);
        for i in 3000..4000 {
            assert_eq!(back.update(i as i64, series(i)), a.update(i as i64, series(i)), "point {i}");
        }
    }

    #[test]
    fn with_resonance_a_one_sided_rule_still_ignores_the_other_side() {
        let mut params = UnivariateParams::default();
        params.threshold.direction = Direction::Above;
        let mut e = Univariate::new(params);
        for i in 0..2000 {
            e.update(i as i64, 10.0 + noise(i));
        }
        let dropped: Vec<f64> = (2000..2100).map(|i| e.update(i as i64, -10.0 + noise(i)).score).collect();
        assert!(dropped.iter().all(|&s| s < 1.0), "{dropped:?}");
        let risen: Vec<f64> = (2100..2110).map(|i| e.update(i as i64, 40.0 + noise(i)).score).collect();
        assert!(risen[0] > 1.0, "{risen:?}");
    }

    #[test]
    fn state_without_resonance_resumes_with_a_fresh_detector_and_off_stays_off() {
        let mut e = Univariate::new(UnivariateParams::default());
        for i in 0..1000 {
            e.update(i, (i as f64 / 10.0).sin());
        }
        let mut json: serde_json::Value = serde_json::to_value(&e).unwrap();
        json.as_object_mut().unwrap().remove("art");
        let back: Univariate = serde_json::from_value(json).unwrap();
        assert_eq!(back.art, default_art());
        let off: Univariate =
            serde_json::from_str(&serde_json::to_string(&Univariate::new(stages())).unwrap()).unwrap();
        assert_eq!(off.art(), None);
    }

    #[test]
    fn spot_sets_the_level_from_the_series_own_scores() {
        let noise = |i: u64| super::super::threshold::tests::noise(i as usize);
        let fixed = stages();
        assert_eq!(fixed.alert_level, AlertLevel::Fixed);
        let with_spot = UnivariateParams { alert_level: AlertLevel::Spot, ..stages() };
        let (mut spot, mut plain) = (Univariate::new(with_spot), Univariate::new(fixed));
        // Warm-up (640 points), then 1,000 points of calibration.
        for i in 0..1640 {
            let v = 10.0 + noise(i);
            assert_eq!(spot.update(i as i64, v), plain.update(i as i64, v), "the level is 1 until calibrated");
            assert_eq!(spot.spot().is_some(), i == 1639, "calibrated at point {i}");
        }
        assert_eq!(plain.spot(), None);
        let level = spot.spot().unwrap().level();
        // The same stages, divided by the series' own level.
        let (a, b) = (spot.update(1640, 10.5), plain.update(1640, 10.5));
        assert!((a.score * level - b.score).abs() < 1e-12, "{} · {level} vs {}", a.score, b.score);
        let before = spot.spot().unwrap().clone();
        assert!(spot.update(1641, 40.0).score > 2.0, "a spike far out of the band");
        assert_eq!(spot.spot(), Some(&before), "and, being an alarm, not learnt");
    }

    #[test]
    fn a_level_shift_alarms_at_its_start_and_while_it_lasts_not_after() {
        // The stages at the fixed level of 1; SPOT's level is tested above.
        let run = |params: UnivariateParams| {
            let mut e = Univariate::new(UnivariateParams { alert_level: AlertLevel::Fixed, ..params });
            let noise = |i: u64| super::super::threshold::tests::noise(i as usize);
            let quiet: Vec<f64> = (0..2000).map(|i| e.update(i as i64, 10.0 + noise(i)).score).collect();
            assert!(quiet[700..].iter().all(|&s| s < 1.0), "{}", quiet[700..].iter().cloned().fold(0.0, f64::max));
            (2000..2300).map(|i| e.update(i as i64, 30.0 + noise(i)).score).collect::<Vec<f64>>()
        };
        let shifted = run(stages());
        assert!(shifted[0] > 1.0, "{}", shifted[0]);
        // Once the surprise has lasted 12 points the sustained stage speaks, until the baseline has caught
        // up; then never again.
        assert!(shifted[11] > 1.0, "{shifted:?}");
        assert!(shifted[40..].iter().all(|&s| s < 1.0), "{shifted:?}");
        // The record stage alone: while the baseline catches up the surprise can edge past its record a few
        // times, then never again.
        let off = UnivariateParams { sustain: SustainParams { points: 0, ..Default::default() }, ..stages() };
        let shifted = run(off);
        assert!(shifted[0] > 1.0, "{}", shifted[0]);
        assert!(shifted[10..].iter().all(|&s| s < 1.0), "{shifted:?}");
    }

    /// A series that once spiked to 100 and settles around 10: the record stage stays deaf to deviations
    /// below that spike's for a long while, but a level never seen before still alarms.
    fn spiked_then_quiet(e: &mut Univariate) {
        let noise = |i: u64| super::super::threshold::tests::noise(i as usize);
        for i in 0..1500 {
            let v = if i == 1000 { 100.0 } else { 10.0 + noise(i) };
            e.update(i as i64, v);
        }
    }

    #[test]
    fn a_value_beyond_the_whole_range_alarms_despite_the_record() {
        // A drop to -5 deviates far less than the old spike did, so the record stage alone stays quiet; but
        // the series has never been that low.
        let mut e = Univariate::new(stages());
        spiked_then_quiet(&mut e);
        assert!(e.update(1500, -5.0).score >= 2.2);
        let params = UnivariateParams { novelty: NoveltyParams { tolerance: 0.0, ..Default::default() }, ..stages() };
        let mut e = Univariate::new(params);
        spiked_then_quiet(&mut e);
        assert!(e.update(1500, -5.0).score < 1.0);
        // Within the range seen (under the old spike) nothing changes: no alarm.
        let mut e = Univariate::new(stages());
        spiked_then_quiet(&mut e);
        assert!(e.update(1500, 60.0).score < 1.0);
    }

    #[test]
    fn novelty_keeps_to_the_watched_direction_and_waits_for_history() {
        let mut params = stages();
        params.threshold.direction = Direction::Above;
        let mut e = Univariate::new(params.clone());
        spiked_then_quiet(&mut e);
        assert!(e.update(1500, -5.0).score < 1.0, "a new low is not watched");
        let mut e = Univariate::new(params);
        spiked_then_quiet(&mut e);
        assert!(e.update(1500, 104.0).score >= 2.2);

        let mut n = Novelty::new(NoveltyParams::default());
        let both = Direction::Both;
        for i in 0..150 {
            assert_eq!(n.update(f64::from(i), 10.0, both), 0.0, "point {i} comes before the check starts");
        }
        assert_eq!(n.update(160.0, 10.0, both), 2.2);
        assert_eq!(n.update(161.0, 10.0, both), 0.0, "within 1 % of the range: {}..{}", n.lo, n.hi);
        assert_eq!(n.update(1000.0, 0.4, both), 0.0, "below the surprise the band must see too");
        assert_eq!(n.update(f64::NAN, 10.0, both), 0.0);
    }

    /// Quiet noise around 10 with one spike to 100 at point 1000, then `shift` from point 1500 on for
    /// `len` points; the scores of the shifted points.
    fn spike_then_shift(e: &mut Univariate, shift: f64, len: u64) -> Vec<f64> {
        spiked_then_quiet(e);
        let noise = |i: u64| super::super::threshold::tests::noise(i as usize);
        (1500..1500 + len).map(|i| e.update(i as i64, shift + noise(i)).score).collect()
    }

    #[test]
    fn a_lasting_shift_alarms_under_the_record_of_a_bigger_spike() {
        // The shift to 40 deviates less than the spike did and stays within the range seen, so neither the
        // record stage nor the novelty check would speak; it lasts, so the sustained stage does.
        let off = UnivariateParams { sustain: SustainParams { points: 0, ..Default::default() }, ..stages() };
        let quiet = spike_then_shift(&mut Univariate::new(off), 40.0, 40);
        assert!(quiet.iter().all(|&s| s < 1.0), "{quiet:?}");
        let scores = spike_then_shift(&mut Univariate::new(stages()), 40.0, 40);
        let first = scores.iter().position(|&s| s > 1.0).expect("the lasting shift alarms");
        assert!(first >= 11, "not before the surprise has lasted 12 points: {scores:?}");
        assert!(first < 20, "{scores:?}");
    }

    #[test]
    fn brief_spikes_do_not_raise_the_sustained_record() {
        let mut s = Sustain::new(SustainParams::default(), 1.0);
        for i in 0..100 {
            let raw = if i % 20 == 0 { 50.0 } else { 0.2 };
            assert!(s.update(raw, 0.999, 1.0) < 1.0, "point {i}");
        }
        assert_eq!(s.record, 1.0, "the smallest surprise around each spike is the quiet one");
        let lasting: Vec<f64> = (0..12).map(|_| s.update(3.0, 0.999, 1.0)).collect();
        assert_eq!(lasting[11], 1.5 * 3.0, "twelve points of surprise 3 against the floor, times the gain");
        assert!(lasting[..11].iter().all(|&v| v < 1.0), "{lasting:?}");
        assert_eq!(s.record, 3.0);
    }

    #[test]
    fn a_one_sided_rule_ignores_the_other_side_in_every_stage() {
        // A rule watching rises only: a long deep drop must score nothing, though its residuals are huge.
        let mut params = stages();
        params.threshold.direction = Direction::Above;
        let mut e = Univariate::new(params);
        let noise = |i: u64| super::super::threshold::tests::noise(i as usize);
        for i in 0..2000 {
            e.update(i as i64, 10.0 + noise(i));
        }
        let dropped: Vec<f64> = (2000..2100).map(|i| e.update(i as i64, -10.0 + noise(i)).score).collect();
        assert!(dropped.iter().all(|&s| s < 1.0), "{dropped:?}");
    }

    #[test]
    fn a_model_saved_before_the_novelty_check_or_the_sustained_stage_resumes_with_them() {
        let mut e = Univariate::new(stages());
        for i in 0..1000 {
            e.update(i, (i as f64 / 10.0).sin());
        }
        let mut json: serde_json::Value = serde_json::to_value(&e).unwrap();
        json.as_object_mut().unwrap().remove("novelty");
        json.as_object_mut().unwrap().remove("sustain");
        let back: Univariate = serde_json::from_value(json).unwrap();
        assert_eq!(back.novelty, Novelty::default());
        assert_eq!(back.sustain, Sustain::default());
    }

    #[test]
    fn a_resumed_model_keeps_its_direction_in_the_novelty_check() {
        // The stages' own scores: the novelty score is compared with its level, 2.2.
        let mut params = UnivariateParams { alert_level: AlertLevel::Fixed, ..stages() };
        params.threshold.direction = Direction::Above;
        let mut e = Univariate::new(params);
        spiked_then_quiet(&mut e);
        let mut json: serde_json::Value = serde_json::to_value(&e).unwrap();
        json.as_object_mut().unwrap().remove("novelty");
        let mut back: Univariate = serde_json::from_value(json).unwrap();
        for i in 1500..1700 {
            back.update(i, 10.0);
        }
        assert!(back.update(1700, -5.0).score < 1.0, "a new low is not watched after a resume either");
        assert!(back.update(1701, 104.0).score >= 2.2);
    }

    /// The ensemble as the runtime runs it, with the stuck stage at `stuck`: a noisy series for 2,000
    /// points (warm-up over), then its last value held for `held` points; the held points' scores.
    fn noisy_then_held(stuck: StuckParams, held: u64) -> Vec<f64> {
        let mut e = Univariate::new(UnivariateParams { stuck, ..Default::default() });
        let mut last = 0.0;
        for i in 0..2000 {
            last = 10.0 + noise(i);
            e.update(i as i64, last);
        }
        (2000..2000 + held).map(|i| e.update(i as i64, last).score).collect()
    }

    #[test]
    fn a_held_value_alarms_through_the_ensemble_only_with_the_stuck_stage() {
        let on = StuckParams { factor: 2.0, min_points: 3 };
        let scores = noisy_then_held(on, 30);
        // The run includes the last moving point: the third point of the run is the second held one.
        assert!(scores[0] < 1.0, "{scores:?}");
        assert!(scores[1] > 1.0, "{scores:?}");
        assert!(scores[1..].iter().all(|&s| s > 1.0), "{scores:?}");
        let off = noisy_then_held(StuckParams::OFF, 30);
        assert!(off.iter().all(|&s| s < 1.0), "{off:?}");
    }

    #[test]
    fn a_model_saved_before_the_stuck_stage_resumes_with_it_off() {
        let mut e = Univariate::new(UnivariateParams { stuck: StuckParams { factor: 2.0, min_points: 3 }, ..stages() });
        for i in 0..1000 {
            e.update(i, (i as f64 / 10.0).sin());
        }
        let mut json: serde_json::Value = serde_json::to_value(&e).unwrap();
        assert_eq!(json["stuck"]["params"]["min_points"], 3);
        json.as_object_mut().unwrap().remove("stuck");
        let back: Univariate = serde_json::from_value(json).unwrap();
        assert_eq!(back.stuck, Stuck::new(StuckParams::OFF));
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut e = Univariate::new(stages());
        for i in 0..1000 {
            e.update(i, (i as f64 / 10.0).sin());
        }
        let json = serde_json::to_string(&e).unwrap();
        let mut back: Univariate = serde_json::from_str(&json).unwrap();
        assert_eq!(back.update(1000, 0.3), e.update(1000, 0.3));
    }
}
