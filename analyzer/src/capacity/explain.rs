//! Why a recommendation is what it is: the rule that set it (a stable name), a one-line sentence, the
//! arithmetic, and every term the planner used. [`CapacityPlanner::plan`](super::CapacityPlanner::plan)
//! builds it from the very values it decided with, so the explanation cannot disagree with the number.
//! The planner sees only the top of the forecast's band; the forecast's model, horizon and band at that
//! peak are added where the forecast is known ([`Recommendation::explain_forecast`]).

use super::{Outlook, PlanInput, PlannerConfig, Recommendation, millis};
use crate::forecast::Forecast;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The rule that set the recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Wanted capacity is above the standing recommendation and `scale_up_cooldown` has passed.
    ScaleUp,
    /// Wanted capacity is above the standing recommendation, but the last change is more recent than
    /// `scale_up_cooldown`.
    ScaleUpHeldByCooldown,
    /// Wanted capacity, and the most wanted over the scale-down window, are below the standing
    /// recommendation by more than `scale_down_margin`.
    ScaleDown,
    /// Down, but only to the most wanted over the last `scale_down_cooldown` (the stabilisation window),
    /// which is above what is wanted now.
    ScaleDownToWindowMax,
    /// Wanted capacity is below the standing recommendation by no more than `scale_down_margin`.
    ScaleDownWithinMargin,
    /// Wanted capacity is below by more than the margin, but the last change is more recent than
    /// `scale_down_cooldown`.
    ScaleDownHeldByCooldown,
    /// Wanted capacity is below by more than the margin now, but something within the margin was wanted
    /// within the last `scale_down_cooldown`.
    ScaleDownHeldByWindow,
    /// The recommendation is `min_capacity`, more than the demand wants.
    ClampedMin,
    /// The recommendation is `max_capacity`, less than the demand wants.
    ClampedMax,
    /// Wanted capacity equals the standing recommendation.
    Unchanged,
}

/// A bound on the recommendation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Min,
    Max,
}

/// A forecast at its peak over the horizon: the step where its upper band is highest, which is what the
/// planner sizes for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ForecastPeak {
    /// The model that made the forecast (`ensemble` when horizon steps blend two).
    pub model: String,
    /// How far ahead the forecast reaches.
    pub horizon_seconds: f64,
    /// The peak's time, in Unix milliseconds.
    pub at_ms: i64,
    /// The forecast's mean at the peak.
    #[schema(value_type = Option<f64>)]
    pub mean: f64,
    /// The lower edge of the forecast's 80 % band at the peak.
    #[schema(value_type = Option<f64>)]
    pub lower: f64,
    /// The upper edge of the band at the peak: the highest over the horizon.
    pub upper: f64,
}

impl ForecastPeak {
    /// The step of `forecast` (made at `made_at_ms`, its points `step_ms` apart from one step later)
    /// whose upper band is highest; the first such step on a tie, none when no upper point is a number.
    pub fn from_forecast(forecast: &Forecast, made_at_ms: i64, step_ms: i64, model: &str) -> Option<ForecastPeak> {
        let (k, upper) = forecast.upper.iter().copied().enumerate().filter(|(_, v)| v.is_finite()).fold(
            None,
            |best: Option<(usize, f64)>, (k, v)| match best {
                Some((_, b)) if b >= v => best,
                _ => Some((k, v)),
            },
        )?;
        let at = |v: &[f64]| v.get(k).copied().unwrap_or(f64::NAN);
        Some(ForecastPeak {
            model: model.to_string(),
            horizon_seconds: (forecast.upper.len() as i64 * step_ms) as f64 / 1000.0,
            at_ms: made_at_ms + (k as i64 + 1) * step_ms,
            mean: at(&forecast.mean),
            lower: at(&forecast.lower),
            upper,
        })
    }
}

/// Why a pool's recommendation is what it is: the `explanation` of a `GET /api/v1/capacity` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Explanation {
    /// The rule that set `recommended`.
    pub rule: Rule,
    /// The rule in one line, with its numbers.
    pub sentence: String,
    /// Every step of the computation, from the peak to the recommendation.
    pub arithmetic: String,
    /// Demand now (running + pending).
    #[schema(value_type = Option<f64>)]
    pub demand_now: f64,
    /// The demand forecast at the peak of its upper band (absent where no forecast was named).
    pub forecast: Option<ForecastPeak>,
    /// `max(demand_now, forecast_upper)`: the peak capacity is sized for.
    pub peak: f64,
    pub target_utilization: f64,
    /// The share of capacity kept from low-priority work for critical jobs.
    pub reserve_fraction: f64,
    /// Whether a low-priority forecast split the demand; without one, all demand counts as low priority.
    pub low_priority_split: bool,
    /// The low-priority peak, which must fit within `1 - reserve_fraction` of the capacity.
    pub low_priority_peak: f64,
    /// With a split, `peak - low_priority_peak` (at least 0): the critical work that may use the reserve.
    pub critical_peak: Option<f64>,
    /// The low-priority forecast at the peak of its upper band, with a split.
    pub low_priority_forecast: Option<ForecastPeak>,
    /// `ceil(low_priority_peak / (target_utilization × (1 - reserve_fraction)))`.
    pub low_priority_capacity: u64,
    /// `base + reservation`: the capacity wanted before the bounds.
    pub wanted: u64,
    pub min_capacity: u64,
    pub max_capacity: Option<u64>,
    /// The bound that made `desired` differ from `wanted`.
    pub clamped: Option<Bound>,
    /// The standing recommendation before this step (the pool's capacity at the first step).
    pub previous: u64,
    /// The most capacity wanted over the last `scale_down_cooldown`, this step included: how far down a
    /// scale-down may go.
    pub window_max: u64,
    /// `previous × (1 - scale_down_margin)`: a scale-down needs the wanted capacity below it.
    pub scale_down_below: f64,
    pub scale_down_margin: f64,
    pub scale_up_cooldown_seconds: f64,
    pub scale_down_cooldown_seconds: f64,
    /// When the standing recommendation last changed (Unix ms), this step included; null before any change.
    pub last_change_ms: Option<i64>,
    /// The earliest a scale-up may be made (Unix ms): `last_change_ms + scale_up_cooldown`, at or before
    /// `timestamp_ms` when one may be made now; null before any change.
    pub next_scale_up_ms: Option<i64>,
    /// The earliest a scale-down may be made (Unix ms): `last_change_ms + scale_down_cooldown`, at or
    /// before `timestamp_ms` when one may be made now; null before any change.
    pub next_scale_down_ms: Option<i64>,
}

impl Recommendation {
    /// Names the forecasts the planner's peaks came from: the demand's and, with a split, the
    /// low-priority part's.
    pub fn explain_forecast(&mut self, demand: Option<ForecastPeak>, low_priority: Option<ForecastPeak>) {
        if let Some(e) = &mut self.explanation {
            e.forecast = demand;
            if e.low_priority_split {
                e.low_priority_forecast = low_priority;
            }
        }
    }
}

/// How the wanted capacity was sized from a step's input, before hysteresis and cooldown.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sizing {
    pub peak: f64,
    pub low_peak: f64,
    pub low_capacity: u64,
    pub base: u64,
    pub reservation: u64,
    pub wanted: u64,
    pub desired: u64,
    pub clamped: Option<Bound>,
}

/// What the planner decided at a step, and from what.
#[derive(Debug, Clone, Copy)]
pub(super) struct Decision {
    /// The rule of the hysteresis and cooldowns, before the bounds are considered.
    pub rule: Rule,
    pub previous: u64,
    /// When the standing recommendation last changed before this step, and after it.
    pub changed_before: Option<i64>,
    pub changed_after: Option<i64>,
    pub window_max: u64,
    pub keep: f64,
}

/// The explanation of `rec`, made from `input` as `sizing` and `decision` say.
pub(super) fn explain(
    config: &PlannerConfig,
    input: &PlanInput,
    sizing: &Sizing,
    decision: &Decision,
    rec: &Recommendation,
) -> Explanation {
    // A bound that set the number is the reason for it, unless a hold kept the number elsewhere.
    let rule = match (sizing.clamped, decision.rule) {
        (Some(Bound::Min), Rule::ScaleUp | Rule::ScaleDown | Rule::Unchanged) => Rule::ClampedMin,
        (Some(Bound::Max), Rule::ScaleUp | Rule::ScaleDown | Rule::Unchanged) => Rule::ClampedMax,
        (_, rule) => rule,
    };
    let after = |cooldown: Duration| decision.changed_after.map(|t| t.saturating_add(millis(cooldown)));
    let e = Explanation {
        rule,
        sentence: String::new(),
        arithmetic: String::new(),
        demand_now: input.demand.now,
        forecast: None,
        peak: sizing.peak,
        target_utilization: config.target_utilization,
        reserve_fraction: config.reserve_fraction,
        low_priority_split: input.low_priority.is_some(),
        low_priority_peak: sizing.low_peak,
        critical_peak: input.low_priority.map(|_| (sizing.peak - sizing.low_peak).max(0.0)),
        low_priority_forecast: None,
        low_priority_capacity: sizing.low_capacity,
        wanted: sizing.wanted,
        min_capacity: config.min_capacity,
        max_capacity: config.max_capacity,
        clamped: sizing.clamped,
        previous: decision.previous,
        window_max: decision.window_max,
        scale_down_below: decision.keep,
        scale_down_margin: config.scale_down_margin,
        scale_up_cooldown_seconds: config.scale_up_cooldown.as_secs_f64(),
        scale_down_cooldown_seconds: config.scale_down_cooldown.as_secs_f64(),
        last_change_ms: decision.changed_after,
        next_scale_up_ms: after(config.scale_up_cooldown),
        next_scale_down_ms: after(config.scale_down_cooldown),
    };
    let text = Text { e: &e, rec, config, input, decision };
    let (sentence, arithmetic) = (text.sentence(), text.arithmetic());
    Explanation { sentence, arithmetic, ..e }
}

/// The explanation's two lines of text.
struct Text<'a> {
    e: &'a Explanation,
    rec: &'a Recommendation,
    config: &'a PlannerConfig,
    input: &'a PlanInput,
    decision: &'a Decision,
}

impl Text<'_> {
    fn sentence(&self) -> String {
        let (e, r) = (self.e, self.rec);
        let (prev, rec, desired) = (e.previous, r.recommended, r.desired);
        let sizing = self.sizing();
        let down = dur(self.config.scale_down_cooldown);
        match e.rule {
            Rule::ScaleUp => format!("Recommend {rec}, up from {prev}: {sizing}"),
            Rule::ScaleDown => format!("Recommend {rec}, down from {prev}: {sizing}"),
            Rule::ScaleDownToWindowMax => format!(
                "Recommend {rec}, down from {prev} only as far as the most wanted over the last {down} \
                 (scale-down window); {desired} wanted now"
            ),
            Rule::ScaleUpHeldByCooldown => format!(
                "Hold {prev}: {desired} wanted ({sizing}), but the last change was less than \
                 scale_up_cooldown {} ago{}",
                dur(self.config.scale_up_cooldown),
                self.wait(e.next_scale_up_ms)
            ),
            Rule::ScaleDownWithinMargin => format!(
                "Hold {prev}: {desired} wanted is within scale_down_margin {} of {prev} (a scale-down needs \
                 less than {})",
                pct(e.scale_down_margin),
                n(e.scale_down_below)
            ),
            Rule::ScaleDownHeldByCooldown => format!(
                "Hold {prev}: {desired} wanted, but the last change was less than scale_down_cooldown {down} ago{}",
                self.wait(e.next_scale_down_ms)
            ),
            Rule::ScaleDownHeldByWindow => format!(
                "Hold {prev}: {desired} wanted now, but {} was wanted within the last {down} (scale-down window), \
                 within scale_down_margin {} of {prev}",
                e.window_max,
                pct(e.scale_down_margin)
            ),
            Rule::ClampedMin => {
                format!("Recommend {rec}, min_capacity: the demand wants only {} ({sizing})", e.wanted)
            }
            Rule::ClampedMax => format!("Recommend {rec}, max_capacity: the demand wants {} ({sizing})", e.wanted),
            Rule::Unchanged if r.current != rec => format!("Keep {rec} (the pool has {}): {sizing}", r.current),
            Rule::Unchanged => format!("Keep {rec}: {sizing}"),
        }
    }

    /// How the demand becomes the wanted capacity, in words.
    fn sizing(&self) -> String {
        let (e, r) = (self.e, self.rec);
        let mut s =
            format!("peak demand {} at {} target utilisation needs {}", n(e.peak), pct(e.target_utilization), r.base);
        if r.reservation > 0 {
            let reserve = pct(e.reserve_fraction);
            if e.low_priority_split {
                s += &format!(
                    ", and {} more keep {reserve} of it from the low-priority peak {} for critical work",
                    r.reservation,
                    n(e.low_priority_peak)
                );
            } else {
                s += &format!(
                    ", and {} more keep {reserve} of it free for critical work (no low-priority split: all demand \
                     counts as low priority)",
                    r.reservation
                );
            }
        }
        s
    }

    /// How long a cooldown holding the recommendation has left after the plan's time.
    fn wait(&self, until: Option<i64>) -> String {
        match until {
            Some(t) if t > self.rec.timestamp_ms => format!(" ({} left)", dur_ms(t - self.rec.timestamp_ms)),
            _ => String::new(),
        }
    }

    fn arithmetic(&self) -> String {
        let (e, r, c) = (self.e, self.rec, self.config);
        let (tu, rf) = (n(c.target_utilization), n(c.reserve_fraction));
        let mut parts = vec![
            format!(
                "peak = max(now {}, forecast upper {}) = {}",
                n(self.input.demand.now),
                n(self.input.demand.upper),
                n(e.peak)
            ),
            format!("ceil({} / {tu}) = {} for the peak", n(e.peak), r.base),
        ];
        let low = match self.input.low_priority {
            Some(Outlook { now, upper }) => format!(
                "low-priority peak max(now {}, forecast upper {}) = {} (critical {})",
                n(now),
                n(upper),
                n(e.low_priority_peak),
                n(e.critical_peak.unwrap_or(0.0))
            ),
            None => format!("no low-priority split, all {} low priority", n(e.low_priority_peak)),
        };
        parts.push(format!(
            "{low} within 1 - {rf}: ceil({} / ({tu} × {})) = {} → reservation {}",
            n(e.low_priority_peak),
            n(1.0 - c.reserve_fraction),
            e.low_priority_capacity,
            r.reservation
        ));
        parts.push(format!("wanted {} + {} = {}", r.base, r.reservation, e.wanted));
        match e.clamped {
            Some(Bound::Min) => parts.push(format!("raised to min_capacity {}", c.min_capacity)),
            Some(Bound::Max) => parts.push(format!("cut to max_capacity {}", r.desired)),
            None => {}
        }
        parts.push(self.decision());
        parts.join("; ")
    }

    /// The hysteresis and cooldown step, in symbols.
    fn decision(&self) -> String {
        let (e, r, c) = (self.e, self.rec, self.config);
        let (prev, desired, rec) = (e.previous, r.desired, r.recommended);
        let ago = self.decision.changed_before.map(|t| dur_ms(r.timestamp_ms.saturating_sub(t)));
        let since = ago.as_ref().map_or("no change yet".to_string(), |a| format!("last change {a} ago"));
        let (up, down) = (dur(c.scale_up_cooldown), dur(c.scale_down_cooldown));
        // Past a cooldown: how long ago the last change was against it, or that there was none.
        let passed = |name: &str, d: &str| match &ago {
            Some(a) => format!("last change {a} ago ≥ {name} {d}"),
            None => "no change yet".to_string(),
        };
        let floor = format!("{prev} × (1 - {}) = {}", n(c.scale_down_margin), n(e.scale_down_below));
        match self.decision.rule {
            Rule::ScaleUp => format!("{desired} > standing {prev}, {} → {rec}", passed("scale_up_cooldown", &up)),
            Rule::ScaleUpHeldByCooldown => {
                format!("{desired} > standing {prev}, but {since} < scale_up_cooldown {up} → {rec}")
            }
            Rule::ScaleDownWithinMargin => format!("{desired} ≥ {floor} → {rec}"),
            Rule::ScaleDownHeldByCooldown => {
                format!("{desired} < {floor}, but {since} < scale_down_cooldown {down} → {rec}")
            }
            Rule::ScaleDownHeldByWindow => {
                format!(
                    "{desired} < {floor}, but the most wanted over the last {down} is {} ≥ {} → {rec}",
                    e.window_max,
                    n(e.scale_down_below)
                )
            }
            Rule::ScaleDownToWindowMax | Rule::ScaleDown => format!(
                "{desired} < {floor}, {}, most wanted over the last {down} {} → {rec}",
                passed("scale_down_cooldown", &down),
                e.window_max
            ),
            Rule::Unchanged | Rule::ClampedMin | Rule::ClampedMax => format!("{desired} = standing {prev} → {rec}"),
        }
    }
}

/// A number as people write it: at most two decimals, no trailing zeros.
fn n(x: f64) -> String {
    if !x.is_finite() {
        return "none".to_string();
    }
    let s = format!("{x:.2}");
    let s = if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.') } else { &s };
    if s == "-0" { "0".to_string() } else { s.to_string() }
}

fn pct(x: f64) -> String {
    format!("{}%", n(x * 100.0))
}

fn dur(d: Duration) -> String {
    humantime::format_duration(d).to_string().replace(' ', "")
}

fn dur_ms(ms: i64) -> String {
    // Whole seconds: the planner's steps are whole seconds apart.
    dur(Duration::from_secs(u64::try_from(ms.max(0)).unwrap_or(0) / 1000))
}
