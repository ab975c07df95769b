"""The sender: a static-threshold alerting rule evaluated every `step` seconds, as make_storm.py's.

Per series: the rule's expression is "value > threshold"; it fires after two consecutive evaluations above
(`for` two evaluations: startsAt = the first of them), is re-sent at every evaluation while firing with
endsAt = now + 4 steps, and is sent once more with endsAt = now at the first evaluation not above (like
Prometheus). The value at an evaluation is the latest sample at or before it, no older than `lookback`
seconds (Prometheus' 5-minute staleness), so a sender may evaluate faster or slower than the data's own step.

Output: one JSON line per evaluation time with alerts, {"at", "alerts": [Alertmanager v2 alerts]}, in time
order, the format `argus alertd replay` reads.
"""
import bisect, json
from datetime import datetime, timezone

BASE = 1600000000.0  # every storm's test period starts here, as in make_storm.py


def iso(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def quantile(xs, q):
    xs = sorted(xs)
    i = (len(xs) - 1) * q
    lo = int(i)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


class Series:
    """One metric of one host: sample times (epoch s, sorted), values, and the rule's threshold."""

    def __init__(self, host, metric, times, values, threshold, extra=None):
        self.host, self.metric, self.times, self.values, self.threshold = host, metric, times, values, threshold
        self.extra = extra or {}


def evaluate(series, step, lookback=300.0, cluster="storm"):
    """{eval time: [alerts]} for every series, evaluating at multiples of `step` from each series' first sample.
    Returns (events, episodes)."""
    events, episodes = {}, 0
    for s in series:
        if not s.times:
            continue
        lb = max(lookback, 2 * (s.times[1] - s.times[0]) if len(s.times) > 1 else lookback)
        labels = {"alertname": "MetricHigh", "severity": "warning", "cluster": cluster, "host": s.host,
                  "metric": s.metric, **s.extra}
        t, end = s.times[0], s.times[-1]
        above, starts = 0, None
        while t <= end:
            i = bisect.bisect_right(s.times, t) - 1
            v = s.values[i] if i >= 0 and t - s.times[i] <= lb else None
            if v is not None and v > s.threshold:
                above += 1
                if above == 2:
                    starts = t - step
                    episodes += 1
                if starts is not None:
                    events.setdefault(t, []).append(alert(labels, s, v, starts, t + 4 * step))
            else:
                if starts is not None:
                    events.setdefault(t, []).append(alert(labels, s, v, starts, t))
                above, starts = 0, None
            t += step
    return events, episodes


def alert(labels, s, v, starts, ends):
    value = "no value" if v is None else f"{v:.3f}"
    return {"labels": labels, "annotations": {"summary": f"{s.metric} on {s.host} is {value}, above {s.threshold:.3f}"},
            "startsAt": iso(starts), "endsAt": iso(ends), "generatorURL": f"storm://{s.host}/{s.metric}"}


def write(path, events):
    with open(path, "w") as f:
        for t in sorted(events):
            f.write(json.dumps({"at": iso(t), "alerts": events[t]}) + "\n")


def write_truth(path, incidents, note):
    """incidents: [(host, start, end)] in storm time (epoch s), each one labelled incident."""
    with open(path, "w") as f:
        json.dump({"note": note, "incidents": [{"host": h, "start": a, "end": b} for h, a, b in incidents]}, f, indent=0)
