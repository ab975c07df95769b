#!/usr/bin/env python3
# Copied unchanged from the project's shared tools, shared/tools/score_storm.py (sha256 73c31b8c0b2d587f…), so that every
# benchmark reproduces from a clone of this repository alone. Change it here and there together.
"""Score what alertd sent for a storm made by make_storm.py.

usage: score_storm.py STORM.jsonl NOTIFICATIONS.jsonl DIR [DIR ...]   (the same DIRs as for make_storm.py)

NOTIFICATIONS.jsonl: one line per notification sent, {"at": RFC3339, "receiver": NAME, "payload": <Alertmanager
webhook v4 JSON with "alerts": [{"status", "labels", "startsAt", ...}]>}.

Raw episodes are the firing alerts of the storm, each known by (host, metric, startsAt) and active from its first
firing POST until the POST that resolves it. Incidents are the runs of label 1 in each test.csv (shifted to the
storm's clock). An incident is alertable when an episode of its host starts inside it. A notification covers an
incident when it is sent between the incident's first episode start and 15 minutes after the incident ends, and
carries, as firing, an episode of that host that exists in the storm, started inside the incident (or was still
active when it began) and was active when the notification was sent (5 minutes of grace after it resolved).
Alerts in a notification that match no episode of the storm count for nothing.

Prints: raw episodes/hour, notifications/hour, reduction, alertable incidents, notified ones (recall), median
minutes from an incident's first episode start to its first covering notification, and the share of
notifications that cover some incident (precision). Exit 0 when reduction >= 92 %, recall >= 95 % and the
median delay <= 2 minutes.
"""
import csv, json, os, sys
from datetime import datetime
from statistics import median

BASE = 1600000000.0  # make_storm.py shifts every test period to start here
GRACE = 300
AFTER = 900

def ts(s): return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()

def incidents(d):
    host = os.path.basename(os.path.normpath(d)); segs = []; start = None; prev = None; shift = None
    with open(os.path.join(d, "test.csv")) as f:
        r = csv.reader(f); next(r)
        for row in r:
            if shift is None: shift = BASE - float(row[0])
            t, lab = float(row[0]) + shift, row[-1] in ("1", "1.0")
            if lab and start is None: start = t
            if not lab and start is not None: segs.append((host, start, prev)); start = None
            prev = t
    if start is not None: segs.append((host, start, prev))
    return segs

def main():
    storm, notes, dirs = sys.argv[1], sys.argv[2], sys.argv[3:]
    segs = [s for d in dirs for s in incidents(d)]
    episodes = {}  # (host, metric, startsAt) -> [start, first_sent, resolved_at]
    t0 = t1 = None
    for line in open(storm):
        e = json.loads(line); t = ts(e["at"]); t0 = t if t0 is None else min(t0, t); t1 = t if t1 is None else max(t1, t)
        for a in e["alerts"]:
            key = (a["labels"]["host"], a["labels"]["metric"], a["startsAt"])
            ep = episodes.setdefault(key, [ts(a["startsAt"]), t, float("inf")])
            if ts(a["endsAt"]) <= t: ep[2] = min(ep[2], t)
    sent = []  # (t, [(host, start, first_sent, resolved)])
    for line in open(notes):
        n = json.loads(line); t = ts(n["at"]); valid = []
        for a in n["payload"].get("alerts", []):
            if a.get("status", "firing") != "firing": continue
            lab = a.get("labels", {})
            ep = episodes.get((lab.get("host"), lab.get("metric"), a.get("startsAt")))
            if ep is None:  # tolerate startsAt written with another but equal RFC3339 spelling
                for (h, m, s), cand in episodes.items():
                    if h == lab.get("host") and m == lab.get("metric") and a.get("startsAt") and abs(ts(s) - ts(a["startsAt"])) < 1:
                        ep = cand; break
            if ep is not None and ep[1] <= t <= ep[2] + GRACE:
                valid.append((lab["host"], ep[0], ep[1], ep[2]))
        sent.append((t, valid))
    hours = (t1 - t0) / 3600
    alertable = notified = 0; delays = []; covering = set()
    for host, a, b in segs:
        starts = [ep[0] for (h, _, _), ep in episodes.items() if h == host and a <= ep[0] <= b]
        if not starts: continue
        alertable += 1
        first = min(starts)
        hit = None
        for i, (t, valid) in enumerate(sent):
            if not (first <= t <= b + AFTER): continue
            if any(h == host and s <= b and r >= a for h, s, _, r in valid):
                covering.add(i)
                if hit is None: hit = t
        if hit is not None:
            notified += 1; delays.append((hit - first) / 60)
    n_ep = len(episodes)
    reduction = 1 - len(sent) / n_ep if n_ep else 0
    recall = notified / alertable if alertable else 1
    med = median(delays) if delays else float("inf")
    print(f"raw episodes {n_ep} ({n_ep / hours:.1f}/h), notifications {len(sent)} ({len(sent) / hours:.2f}/h), reduction {100 * reduction:.1f} %")
    print(f"incidents alertable {alertable}, notified {notified} (recall {100 * recall:.1f} %), median delay {med:.1f} min, "
          f"precision {100 * len(covering) / len(sent) if sent else 0:.1f} %")
    sys.exit(0 if reduction >= 0.92 and recall >= 0.95 and med <= 2 else 1)

if __name__ == "__main__":
    main()
