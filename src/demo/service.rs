//! The demo's inference service: Alibaba's Stable-Diffusion serving trace as vLLM-style metrics.
//!
//! The eight replayed GPUs are the eight pods of one service, scrape job [`JOB`], each an instance on
//! the demo host. From the trace (demo/alibaba_inference.csv, same steps as the GPU excerpt): the
//! gateway's generative QPS per container, shared among the pods in proportion to their GPU duty cycle;
//! the gateway queue, split evenly; the end-to-end latency of the trace's requests (pipeline inference
//! time) as `vllm:e2e_request_latency_seconds`, and their gateway queuing time as
//! `vllm:time_to_first_token_seconds` (a diffusion request produces no tokens; the wait before its work
//! starts is the closest measure), each minute's requests spread over the buckets as that minute's
//! samples are. Derived plainly: requests running by Little's law (rate × mean latency), KV-cache use as
//! the pod's share of its GPU memory, and token counters from the request trace's mean prompt length
//! (four characters a token) and mean denoising steps per request (counted as generated tokens).

use super::counter::Counter;
use anyhow::{Result, bail};
use std::fmt::Write as _;

const CSV: &str = include_str!("../../demo/alibaba_inference.csv");
const SHAPE: &str = include_str!("../../demo/alibaba_request_shape.csv");
/// The scrape job the collector would give the service.
pub const JOB: &str = "sd-serving";
const MODEL: &str = "stable-diffusion";

/// A histogram of the trace: its upper bounds (as vLLM writes them) and per pod a counter per bucket
/// (cumulative, `+Inf` last).
struct Histogram {
    name: &'static str,
    bounds: Vec<String>,
    buckets: Vec<Vec<Counter>>,
}

pub struct Service {
    /// Requests per second of each pod.
    requests: Vec<Counter>,
    /// Requests running per pod (Little's law).
    running: Vec<Vec<f64>>,
    /// Gateway queue per pod.
    waiting: Vec<f64>,
    e2e: Histogram,
    ttft: Histogram,
    prompt_tokens: f64,
    generated_tokens: f64,
}

struct Row {
    qps: f64,
    queue: Option<f64>,
    e2e: Vec<f64>,
    wait: Vec<f64>,
}

impl Service {
    /// The service of the pods whose duty cycles (percent, per minute) are `util`.
    pub fn new(util: &[&[f64]]) -> Result<Service> {
        let (e2e_bounds, wait_bounds, rows) = parse(CSV)?;
        let (prompt_chars, denoise) = shape(SHAPE)?;
        let n = rows.len();
        if util.iter().any(|u| u.len() != n) {
            bail!("demo/alibaba_inference.csv: {n} steps, the GPU excerpt has another number");
        }
        // A step without samples keeps the previous step's latency spread.
        let held = |pick: fn(&Row) -> &Vec<f64>| -> Vec<Vec<f64>> {
            let first = rows.iter().map(pick).find(|c| c.iter().sum::<f64>() > 0.0).cloned().unwrap_or_default();
            let mut last = first;
            rows.iter()
                .map(|r| {
                    if pick(r).iter().sum::<f64>() > 0.0 {
                        last = pick(r).clone();
                    }
                    let total: f64 = last.iter().sum();
                    let mut acc = 0.0;
                    last.iter()
                        .map(|c| {
                            acc += c / total.max(1.0);
                            acc
                        })
                        .collect()
                })
                .collect()
        };
        let e2e_share = held(|r| &r.e2e);
        let wait_share = held(|r| &r.wait);
        let per_container: Vec<f64> = {
            let mut last = rows.iter().map(|r| r.qps).find(|q| q.is_finite()).unwrap_or(0.0);
            rows.iter()
                .map(|r| {
                    if r.qps.is_finite() {
                        last = r.qps;
                    }
                    last
                })
                .collect()
        };
        let pods = util.len();
        let rate: Vec<Vec<f64>> = (0..pods)
            .map(|p| {
                (0..n)
                    .map(|m| {
                        let mean = util.iter().map(|u| u[m]).sum::<f64>() / pods as f64;
                        let weight = if mean > 0.0 { util[p][m] / mean } else { 1.0 };
                        per_container[m] * weight
                    })
                    .collect()
            })
            .collect();
        let e2e_mean: Vec<f64> = e2e_share.iter().map(|s| mean_of(&e2e_bounds, s)).collect();
        let running = rate.iter().map(|r| r.iter().zip(&e2e_mean).map(|(q, l)| q * l).collect()).collect();
        let mut queue_last = rows.iter().find_map(|r| r.queue).unwrap_or(0.0);
        let waiting = rows
            .iter()
            .map(|r| {
                queue_last = r.queue.unwrap_or(queue_last);
                queue_last / pods as f64
            })
            .collect();
        // Buckets below the fastest request of the trace would count nothing, ever: only the highest of
        // them is written (histogram_quantile needs no more), which keeps the demo's history small.
        let histogram = |name, bounds: &[f64], share: &[Vec<f64>]| {
            let first = (0..bounds.len()).find(|&b| share.iter().any(|s| s[b] > 0.0)).unwrap_or(0);
            let kept = first.saturating_sub(1)..bounds.len();
            Histogram {
                name,
                bounds: bounds[kept.clone()]
                    .iter()
                    .map(|b| if b.is_finite() { format!("{b}") } else { "+Inf".into() })
                    .collect(),
                buckets: rate
                    .iter()
                    .map(|r| kept.clone().map(|b| Counter::new((0..n).map(|m| r[m] * share[m][b]).collect())).collect())
                    .collect(),
            }
        };
        Ok(Service {
            e2e: histogram("vllm:e2e_request_latency_seconds", &e2e_bounds, &e2e_share),
            ttft: histogram("vllm:time_to_first_token_seconds", &wait_bounds, &wait_share),
            requests: rate.into_iter().map(Counter::new).collect(),
            running,
            waiting,
            prompt_tokens: prompt_chars / 4.0,
            generated_tokens: denoise,
        })
    }

    /// The service's series at `t`, counters counted from `origin`; `serving[p]` says whether pod `p`
    /// still serves (a failed GPU's pod stops at `stopped_at`), `memory[p]` its share of GPU memory.
    pub fn lines(&self, t: i64, origin: i64, host: &str, stopped: &[Option<i64>], memory: &[f64], out: &mut String) {
        for (p, requests) in self.requests.iter().enumerate() {
            let until = stopped[p].map_or(t, |s| s.min(t));
            let done = requests.since(origin, until);
            let up = until == t;
            let running = if up { super::at(&self.running[p], t) } else { 0.0 };
            let waiting = super::at(&self.waiting, t);
            let labels =
                format!("cluster=demo,demo=true,host={host},job={JOB},instance={host}:{},model_name={MODEL}", 8000 + p);
            // Scraping takes a few milliseconds, a little longer while the pod is busy.
            let duration = 0.004 + 0.002 * running.min(4.0);
            let _ = writeln!(
                out,
                "scrape,{labels} up=1,duration_seconds={duration},samples={} {t}",
                8 + self.e2e.bounds.len() + self.ttft.bounds.len()
            );
            // A series is `{measurement}_{field}`: vLLM's names split at their last underscore.
            let _ = writeln!(out, "vllm:num_requests,{labels} running={running},waiting={waiting} {t}");
            let _ = writeln!(out, "vllm:kv_cache_usage,{labels} perc={} {t}", memory[p]);
            let _ = writeln!(out, "vllm:request_success,{labels} total={done} {t}");
            let _ = writeln!(out, "vllm:prompt_tokens,{labels} total={} {t}", done * self.prompt_tokens);
            let _ = writeln!(out, "vllm:generation_tokens,{labels} total={} {t}", done * self.generated_tokens);
            for h in [&self.e2e, &self.ttft] {
                for (b, le) in h.bounds.iter().enumerate() {
                    let _ = writeln!(
                        out,
                        "{},{labels},le={le} bucket={} {t}",
                        h.name,
                        h.buckets[p][b].since(origin, until)
                    );
                }
                let _ = writeln!(out, "{},{labels} count={done} {t}", h.name);
            }
        }
    }
}

/// The mean of a spread over buckets (cumulative shares), each bucket at its midpoint and the last
/// (unbounded) one at its lower bound.
fn mean_of(bounds: &[f64], cumulative: &[f64]) -> f64 {
    let mut prev_share = 0.0;
    let mut prev_bound = 0.0;
    let mut mean = 0.0;
    for (b, share) in bounds.iter().zip(cumulative) {
        let mid = if b.is_finite() { (prev_bound + b) / 2.0 } else { prev_bound };
        mean += (share - prev_share) * mid;
        prev_share = *share;
        if b.is_finite() {
            prev_bound = *b;
        }
    }
    mean
}

type Parsed = (Vec<f64>, Vec<f64>, Vec<Row>);

/// `timestamp_anon,generative_qps_sum,containers,queue_size,e2e_le_<s>…,queue_le_<s>…`.
fn parse(csv: &str) -> Result<Parsed> {
    let file = "demo/alibaba_inference.csv";
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let bound = |prefix: &str| -> Result<Vec<(usize, f64)>> {
        header
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.strip_prefix(prefix).map(|b| (i, b)))
            .map(|(i, b)| match b {
                "+Inf" => Ok((i, f64::INFINITY)),
                b => b.parse().map(|v| (i, v)).map_err(|_| anyhow::anyhow!("{file}:1: bad bucket bound {b:?}")),
            })
            .collect()
    };
    let (e2e, wait) = (bound("e2e_le_")?, bound("queue_le_")?);
    if header.get(..4) != Some(&["timestamp_anon", "generative_qps_sum", "containers", "queue_size"][..])
        || e2e.last().is_none_or(|b| b.1.is_finite())
        || wait.last().is_none_or(|b| b.1.is_finite())
    {
        bail!("{file}:1: unexpected header");
    }
    let mut rows = Vec::new();
    for (n, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != header.len() {
            bail!("{file}:{}: {} fields, the header has {}", n + 2, f.len(), header.len());
        }
        let num = |i: usize| super::number(f[i], "alibaba_inference.csv", n + 2);
        let (sum, containers) = (num(1)?.unwrap_or(0.0), num(2)?.unwrap_or(0.0));
        rows.push(Row {
            qps: if containers > 0.0 { sum / containers } else { f64::NAN },
            queue: num(3)?,
            e2e: e2e.iter().map(|(i, _)| num(*i).map(Option::unwrap_or_default)).collect::<Result<_>>()?,
            wait: wait.iter().map(|(i, _)| num(*i).map(Option::unwrap_or_default)).collect::<Result<_>>()?,
        });
    }
    let bounds = |v: Vec<(usize, f64)>| v.into_iter().map(|(_, b)| b).collect();
    Ok((bounds(e2e), bounds(wait), rows))
}

/// `requests,prompt_chars_mean,denoising_steps_mean`: one row.
fn shape(csv: &str) -> Result<(f64, f64)> {
    let row = csv.lines().nth(1).unwrap_or_default();
    let f: Vec<&str> = row.split(',').collect();
    let [_, prompt, denoise] = f[..] else { bail!("demo/alibaba_request_shape.csv:2: expected 3 fields") };
    let num = |s| super::number(s, "alibaba_request_shape.csv", 2).map(Option::unwrap_or_default);
    Ok((num(prompt)?, num(denoise)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_excerpt_loads_with_vllm_buckets() {
        let (e2e, wait, rows) = parse(CSV).unwrap();
        assert_eq!(rows.len(), 380);
        assert_eq!((e2e.len(), wait.len()), (22, 23));
        assert!(rows.iter().filter(|r| r.qps.is_finite()).count() > 300);
        let (prompt, denoise) = shape(SHAPE).unwrap();
        assert!(prompt > 10.0 && denoise > 10.0);
    }

    #[test]
    fn the_mean_of_a_spread_takes_bucket_midpoints() {
        // Half the requests within 0..10 s, half within 10..20 s: 5 and 15 on average, 10.
        assert_eq!(mean_of(&[10.0, 20.0, f64::INFINITY], &[0.5, 1.0, 1.0]), 10.0);
    }
}
