//! The synthetic faults of `argus eval pages`, fixed before anything was measured: per series-day one
//! fault with probability 0.1, of five kinds in equal shares, each sized in the standard deviation of
//! the series over that day (docs/eval-pages.md, "Faults").

use super::data::{DataSet, Input};
use argus_model::Sample;

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
pub const DAY: i64 = 24 * HOUR;

/// A notification counts for a fault until this long after its last altered point (a return to normal
/// is news too), and a fault counts as notified in time when a notification comes this soon after it
/// starts.
pub const GRACE: i64 = 5 * MINUTE;

/// The fault specification. Never changed to improve a figure: the benchmark's figures are only
/// comparable across releases while this stays as it is.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    pub seed: u64,
    /// Chance of a fault in each series-day.
    pub probability: f64,
}

impl Default for Spec {
    fn default() -> Spec {
        Spec { seed: 1, probability: 0.1 }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// +3 daily standard deviations for an hour.
    Step,
    /// One point at +6 daily standard deviations.
    Spike,
    /// A linear rise to +3 daily standard deviations over two hours.
    Drift,
    /// The value held constant for 30 minutes.
    Stuck,
    /// One GPU of a host's eight at half its peers' median for 30 minutes (half its own level where
    /// the series has no group of eight).
    GpuDrop,
}

pub const KINDS: [Kind; 5] = [Kind::Step, Kind::Spike, Kind::Drift, Kind::Stuck, Kind::GpuDrop];

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Step => "step",
            Kind::Spike => "spike",
            Kind::Drift => "drift",
            Kind::Stuck => "stuck",
            Kind::GpuDrop => "gpu_drop",
        }
    }

    /// How long the fault alters the series; a spike alters one point.
    pub fn duration(self) -> i64 {
        match self {
            Kind::Step => HOUR,
            Kind::Spike => 0,
            Kind::Drift => 2 * HOUR,
            Kind::Stuck | Kind::GpuDrop => 30 * MINUTE,
        }
    }
}

/// One injected fault.
#[derive(Debug, Clone, PartialEq)]
pub struct Fault {
    /// Index into the data set's series.
    pub series: usize,
    pub kind: Kind,
    /// The first altered point (ms).
    pub start: i64,
    /// The last altered point (ms).
    pub last: i64,
    /// The series' standard deviation over the day the fault was drawn in.
    pub day_sd: f64,
    /// For [`Kind::GpuDrop`]: whether the level came from seven peers (else the series' own).
    pub from_peers: bool,
}

impl Fault {
    /// Whether an alert that started at `t` belongs to this fault.
    pub fn covers(&self, t: i64) -> bool {
        t >= self.start && t <= self.last + GRACE
    }
}

/// What planning saw besides the faults.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    pub faults: Vec<Fault>,
    /// Series-days in which a fault was drawn, whose live part was too short to hold it and the grace
    /// period after it (the last, partial day of a series).
    pub no_room: usize,
    /// Series-days drawn over.
    pub days: usize,
}

/// Draws the faults of `set`. Each series is cut into days from `live_from` (its first sample plus the
/// analyzer's warm-up, before which nothing alerts); every day draws, in order, a number for "is there a
/// fault" and one for its kind, and a day with a fault one more for its start. The generator is
/// SplitMix64 seeded with the spec's seed mixed with the data set's name, so each data set's faults do
/// not depend on which other data sets run.
pub fn plan(spec: &Spec, set: &DataSet, warmup: i64) -> Plan {
    let mut rng = SplitMix64::new(spec.seed ^ fnv1a(set.name.as_bytes()));
    let mut out = Plan::default();
    for (i, s) in set.series.iter().enumerate() {
        let (Some(first), Some(end)) = (s.samples.first(), s.samples.last()) else { continue };
        let live_from = first.t + warmup;
        let end = end.t + set.step;
        let mut day = live_from;
        while day < end {
            out.days += 1;
            let hit = rng.next_f64() < spec.probability;
            let kind = KINDS[rng.below(KINDS.len() as u64) as usize];
            let day_end = (day + DAY).min(end);
            if hit {
                // The fault and its grace period fit in the day.
                let latest = day_end - kind.duration() - set.step - GRACE;
                let room: Vec<usize> =
                    (0..s.samples.len()).filter(|&j| (day..=latest).contains(&s.samples[j].t)).collect();
                if room.is_empty() {
                    out.no_room += 1;
                } else {
                    let j = room[rng.below(room.len() as u64) as usize];
                    let start = s.samples[j].t;
                    let last = start + kind.duration().max(set.step) - set.step;
                    out.faults.push(Fault {
                        series: i,
                        kind,
                        start,
                        last,
                        day_sd: sd(s.samples.iter().filter(|p| p.t >= day && p.t < day + DAY).map(|p| p.v)),
                        from_peers: kind == Kind::GpuDrop && eight(set, i).is_some(),
                    });
                }
            }
            day += DAY;
        }
    }
    out
}

/// Alters the series of `set` by `faults`, each against the clean data (a GPU's peers are read as they
/// were before any fault).
pub fn apply(set: &mut DataSet, faults: &[Fault]) {
    let clean: Vec<Input> = set.series.clone();
    for f in faults {
        let peers: Vec<&Input> = match (f.from_peers, eight(set, f.series)) {
            (true, Some(members)) => members.into_iter().filter(|&m| m != f.series).map(|m| &clean[m]).collect(),
            _ => Vec::new(),
        };
        let duration = f.kind.duration().max(set.step) as f64;
        for p in set.series[f.series].samples.iter_mut().filter(|p| p.t >= f.start && p.t <= f.last) {
            p.v = match f.kind {
                Kind::Step => p.v + 3.0 * f.day_sd,
                Kind::Spike => p.v + 6.0 * f.day_sd,
                Kind::Drift => p.v + 3.0 * f.day_sd * ((p.t - f.start + set.step) as f64 / duration),
                Kind::Stuck => value_at(&clean[f.series].samples, f.start).unwrap_or(p.v),
                Kind::GpuDrop => {
                    let at: Vec<f64> = peers.iter().filter_map(|q| value_at(&q.samples, p.t)).collect();
                    match median(at) {
                        Some(m) if f.from_peers => 0.5 * m,
                        _ => 0.5 * p.v,
                    }
                }
            };
        }
    }
}

/// The members of series `i`'s group when it has exactly eight (a host's eight GPUs).
fn eight(set: &DataSet, i: usize) -> Option<Vec<usize>> {
    let g = set.series[i].group?;
    let members: Vec<usize> = (0..set.series.len()).filter(|&j| set.series[j].group == Some(g)).collect();
    (members.len() == 8).then_some(members)
}

fn value_at(samples: &[Sample], t: i64) -> Option<f64> {
    samples.binary_search_by_key(&t, |s| s.t).ok().map(|j| samples[j].v)
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { 0.5 * (v[n / 2 - 1] + v[n / 2]) })
}

/// Population standard deviation (0 for fewer than two values).
pub fn sd(values: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = values.filter(|v| v.is_finite()).collect();
    if v.len() < 2 {
        return 0.0;
    }
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64).sqrt()
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// SplitMix64 (Steele, Lea and Flood 2014): small, fast and fully determined by its seed.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [0, n) (n > 0), without modulo bias worth speaking of for the small n used here.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}
