#!/usr/bin/env python3
"""Score what alertd (or Alertmanager) sent for a storm of this package, with score_storm.py's metrics.

usage: score.py STORM.jsonl NOTIFICATIONS.jsonl TRUTH.json [--json]

TRUTH.json: {"incidents": [{"host", "start", "end"}]} in storm time (epoch seconds), as the generators write.
The rules are score_storm.py's, with the incidents read from TRUTH.json instead of SMD's label column:
raw episodes are the storm's firing alerts, known by (host, metric, startsAt), active from their first firing
POST until the POST that resolves them; an incident is alertable when an episode of its host starts inside it;
a notification covers it when sent between its first episode start and 15 minutes after it ends, carrying as
firing an episode of that host that started inside it (or was active when it began) and was active when sent
(5 minutes of grace after it resolved). Also reported: the raw alerts' own median delay (first POST of the
incident's first episode after that episode's start), against which the notifications' delay is judged.
"""
import json, os, sys, threading
from datetime import datetime
from statistics import median

_LOCK = threading.Lock()
GRACE = 300
AFTER = 900


def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


_STORMS = {}


def episodes_of(storm):
    """The storm's raw episodes, its first and last POST time, and its episodes by host. Read once per
    file as it is on disk (a grid search scores hundreds of replays of one storm); never modified after."""
    st = os.stat(storm)
    key = (os.path.abspath(storm), st.st_size, st.st_mtime_ns)
    with _LOCK:
        if key in _STORMS:
            return _STORMS[key]
    episodes = {}  # (host, metric, startsAt seconds) -> [start, first_sent, resolved_at]
    t0 = t1 = None
    for line in open(storm):
        e = json.loads(line)
        t = ts(e["at"])
        t0 = t if t0 is None else min(t0, t)
        t1 = t if t1 is None else max(t1, t)
        for a in e["alerts"]:
            s = ts(a["startsAt"])
            ep = episodes.setdefault((a["labels"]["host"], a["labels"]["metric"], s), [s, t, float("inf")])
            if ts(a["endsAt"]) <= t:
                ep[2] = min(ep[2], t)
    by_host = {}
    for (h, _, _), ep in episodes.items():
        by_host.setdefault(h, []).append(ep)
    with _LOCK:
        _STORMS[key] = (episodes, t0, t1, by_host)
    return _STORMS[key]


def score(storm, notes, truth):
    segs = [(i["host"], i["start"], i["end"]) for i in json.load(open(truth))["incidents"]]
    episodes, t0, t1, by_host = episodes_of(storm)
    sent = []
    for line in open(notes):
        n = json.loads(line)
        t = ts(n["at"])
        valid = []
        for a in n["payload"].get("alerts", []):
            if a.get("status", "firing") != "firing" or not a.get("startsAt"):
                continue
            lab = a.get("labels", {})
            ep = episodes.get((lab.get("host"), lab.get("metric"), round(ts(a["startsAt"]))))
            if ep is not None and ep[1] <= t <= ep[2] + GRACE:
                valid.append((lab["host"], ep[0], ep[2]))
        sent.append((t, valid))
    hours = (t1 - t0) / 3600 if t0 is not None else 0
    alertable = notified = 0
    delays, raw_delays, covering, missed = [], [], set(), []
    for host, a, b in segs:
        eps = [ep for ep in by_host.get(host, []) if a <= ep[0] <= b]
        if not eps:
            continue
        alertable += 1
        first_ep = min(eps, key=lambda ep: ep[0])
        first = first_ep[0]
        raw_delays.append((first_ep[1] - first) / 60)
        hit = None
        for i, (t, valid) in enumerate(sent):
            if not (first <= t <= b + AFTER):
                continue
            if any(h == host and s <= b and r >= a for h, s, r in valid):
                covering.add(i)
                if hit is None:
                    hit = t
        if hit is not None:
            notified += 1
            delays.append((hit - first) / 60)
        else:
            missed.append({"host": host, "start": a, "end": b})
    n_ep = len(episodes)
    return {
        "hours": round(hours, 1),
        "episodes": n_ep,
        "notifications": len(sent),
        "reduction": round(100 * (1 - len(sent) / n_ep), 1) if n_ep else 0.0,
        "alertable": alertable,
        "notified": notified,
        "recall": round(100 * notified / alertable, 1) if alertable else 100.0,
        "median_delay_min": round(median(delays), 2) if delays else None,
        "raw_median_delay_min": round(median(raw_delays), 2) if raw_delays else None,
        "precision": round(100 * len(covering) / len(sent), 1) if sent else 0.0,
        "covering": len(covering),
        "delays_min": [round(d, 3) for d in delays],
        "missed": missed,
    }


def line(s):
    return (f"raw episodes {s['episodes']}, notifications {s['notifications']}, reduction {s['reduction']} %, "
            f"recall {s['recall']} % ({s['notified']}/{s['alertable']}), median delay {s['median_delay_min']} min "
            f"(raw {s['raw_median_delay_min']} min), precision {s['precision']} %")


if __name__ == "__main__":
    r = score(*sys.argv[1:4])
    print(json.dumps(r) if "--json" in sys.argv else line(r))
