#!/usr/bin/env python3
"""alertd against Alertmanager: alerts ingested and processed per second on one core (issue 7, third goal).

usage: python3 bench/alertd_throughput.py [--storm storm.jsonl | --shared ../shared] [--argus-bin target/release/argus]
           [--repeat 3] [--batch 64] [--writers 2] [--limit N] [--work-dir /tmp/argus-alertd-throughput]

The workload is the storm of make_storm.py (every POST of it, 197 k alerts for the shipped SMD data), re-cut into
batches of --batch alerts (64, Prometheus' batch size to Alertmanager) in the stream's order. Just before each run
every alert's times are rewritten relative to the moment of the run as if each POST happened now
(startsAt = now - (at - startsAt), endsAt = now + (endsAt - at)): firing alerts arrive firing (endsAt ahead) and
resolving ones resolved, as from a live Prometheus.

One run: starts the server pinned to one core (`taskset -c 1`, normal priority) on loopback with a webhook
receiver in this script (Alertmanager 0.25: group_by [host], group_wait 30s, group_interval 5m,
repeat_interval 4h, send_resolved false; alertd: `argus serve --no-collector` with config/alertd.yml, its webhook
pointed at the receiver), reads the server's utime+stime from /proc, then --writers threads (this script is
pinned to core 0) POST the batches to /api/v2/alerts as fast as they are accepted, each on its own keep-alive
connection (429/503 retried after Retry-After; any other non-2xx fails the run). CPU is read again at the last
acknowledgement, and once more when the server has settled (its CPU time unchanged for --settle-s, at most
--max-settle-s): that includes processing done after the API answered (dispatch, grouping, notifications).
Then GET /api/v2/alerts (active alerts the server holds, for a sanity check) and SIGTERM.

Figures per server (medians over --repeat runs, servers alternated): alerts/s wall (alerts / first send to last
ack), alerts per server CPU-second at the last ack and after settling, and the ratio alertd / Alertmanager.
The 2-core machine is shared, so wall rates are noisy; alerts per CPU-second are steadier.
Python 3 standard library only; --out FILE.json also writes every run's figures.
"""
import argparse, glob, http.client, json, os, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib.client import ingest  # noqa: E402
from lib.lp_receiver import cpu_seconds  # noqa: E402
from storm_vs_alertmanager import Receiver, iso_us, log, start_alertd, start_am, ts  # noqa: E402


def load_batches(storm, batch, limit):
    """[(at, alert)] in stream order, cut into lists of `batch` alerts."""
    items = []
    for line in open(storm):
        e = json.loads(line); at = ts(e["at"])
        for al in e["alerts"]:
            items.append((at, al))
            if limit and len(items) >= limit:
                break
        if limit and len(items) >= limit:
            break
    return [items[i:i + batch] for i in range(0, len(items), batch)]


def bodies_now(batches):
    now = time.time(); out = []
    for b in batches:
        alerts = []
        for at, al in b:
            al = dict(al)
            al["startsAt"] = iso_us(now - (at - ts(al["startsAt"])))
            al["endsAt"] = iso_us(now + (ts(al["endsAt"]) - at))
            alerts.append(al)
        out.append(json.dumps(alerts).encode())
    return out


def settle(pid, quiet_s, max_s):
    start = time.monotonic(); last = cpu_seconds(pid); since = time.monotonic()
    while time.monotonic() - start < max_s:
        time.sleep(0.25)
        c = cpu_seconds(pid)
        if c != last:
            last, since = c, time.monotonic()
        elif time.monotonic() - since >= quiet_s:
            break
    return last, time.monotonic() - start


def active_alerts(port):
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.request("GET", "/api/v2/alerts"); r = c.getresponse(); body = r.read()
        return len(json.loads(body)) if r.status == 200 else f"HTTP {r.status}"
    except (OSError, ValueError, http.client.HTTPException) as e:
        return repr(e)


def one_run(server, a, batches, n_alerts, rec, run_dir):
    pin = ("taskset", "-c", str(a.server_core))
    if server == "am":
        p, port, _ = start_am(run_dir, 1, rec.port, a.am_bin, prefix=pin)
    else:
        p, port, _ = start_alertd(run_dir, 1, rec.port, a.argus_bin, a.alertd_config, prefix=pin)
    try:
        time.sleep(1)
        load = os.getloadavg()[0]
        notes0 = len(rec.got)
        bodies = bodies_now(batches)
        cpu0 = cpu_seconds(p.pid)
        st = ingest(port, bodies, writers=a.writers, path="/api/v2/alerts", content_type="application/json")
        cpu1 = cpu_seconds(p.pid)
        cpu2, settle_s = settle(p.pid, a.settle_s, a.max_settle_s)
        wall = st["last_ack"] - st["first_send"]
        r = {"server": server, "alerts": n_alerts, "batches": len(bodies), "wall_s": round(wall, 3),
             "alerts_per_s": round(n_alerts / wall, 1), "cpu_ack_s": round(cpu1 - cpu0, 2),
             "cpu_settled_s": round(cpu2 - cpu0, 2), "settle_s": round(settle_s, 1),
             "alerts_per_cpu_s_ack": round(n_alerts / max(cpu1 - cpu0, 0.01), 1),
             "alerts_per_cpu_s_settled": round(n_alerts / max(cpu2 - cpu0, 0.01), 1),
             "retries": st["retries"], "statuses": {str(k): v for k, v in st["statuses"].items()},
             "active_alerts_after": active_alerts(port), "notifications": len(rec.got) - notes0,
             "load_before": round(load, 2)}
        log(json.dumps(r))
        return r
    finally:
        p.terminate()
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill(); p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--storm", help="reuse a storm.jsonl made by make_storm.py")
    ap.add_argument("--servers", default="am,alertd")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--writers", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only the first N alerts of the storm")
    ap.add_argument("--server-core", type=int, default=1)
    ap.add_argument("--client-core", type=int, default=0)
    ap.add_argument("--settle-s", type=float, default=3)
    ap.add_argument("--max-settle-s", type=float, default=90)
    ap.add_argument("--cooldown", type=float, default=3)
    ap.add_argument("--argus-bin", default=os.path.join(ROOT, "target", "release", "argus"))
    ap.add_argument("--am-bin", default="prometheus-alertmanager")
    ap.add_argument("--alertd-config", default=os.path.join(ROOT, "config", "alertd.yml"))
    ap.add_argument("--work-dir", default="/tmp/argus-alertd-throughput")
    ap.add_argument("--out", help="write every run's figures to this JSON file")
    a = ap.parse_args()
    if a.client_core >= 0:
        os.sched_setaffinity(0, {a.client_core})
    os.makedirs(a.work_dir, exist_ok=True)
    storm = a.storm
    if not storm:
        storm = os.path.join(a.work_dir, "storm.jsonl")
        dirs = sorted(glob.glob(os.path.join(a.shared, "data", "smd", "machine-*")))
        subprocess.run([sys.executable, os.path.join(HERE, "lib", "make_storm.py"), storm, *dirs], check=True)
    batches = load_batches(storm, a.batch, a.limit)
    n_alerts = sum(len(b) for b in batches)
    log(f"{n_alerts} alerts in {len(batches)} batches of up to {a.batch}")
    servers = [s for s in a.servers.split(",") if s]
    rec = Receiver(); runs = []
    try:
        for i in range(a.repeat):
            for s in servers:
                runs.append(one_run(s, a, batches, n_alerts, rec, os.path.join(a.work_dir, f"run{i}")))
                time.sleep(a.cooldown)
    finally:
        rec.srv.shutdown()
    med = {}
    for s in servers:
        rs = [r for r in runs if r["server"] == s]
        med[s] = {k: statistics.median(r[k] for r in rs)
                  for k in ("alerts_per_s", "alerts_per_cpu_s_ack", "alerts_per_cpu_s_settled", "wall_s",
                            "cpu_ack_s", "cpu_settled_s")}
    lines = [f"| server | alerts/s (wall) | alerts per CPU-s at last ack | alerts per CPU-s settled | wall s | CPU s ack | CPU s settled |",
             "|---|---|---|---|---|---|---|"]
    for s in servers:
        m = med[s]
        lines.append(f"| {s} | {m['alerts_per_s']:.0f} | {m['alerts_per_cpu_s_ack']:.0f} | {m['alerts_per_cpu_s_settled']:.0f} "
                     f"| {m['wall_s']:.2f} | {m['cpu_ack_s']:.2f} | {m['cpu_settled_s']:.2f} |")
    if "am" in med and "alertd" in med:
        lines.append("| alertd / am | " + " | ".join(
            f"{med['alertd'][k] / med['am'][k]:.2f}x" if med['am'][k] else "n/a"
            for k in ("alerts_per_s", "alerts_per_cpu_s_ack", "alerts_per_cpu_s_settled")) + " | | | |")
    text = f"{n_alerts} alerts, batches of {a.batch}, {a.writers} writers, medians of {a.repeat} alternated runs\n\n" + "\n".join(lines)
    print(text)
    if a.out:
        json.dump({"runs": runs, "medians": med, "alerts": n_alerts, "batch": a.batch}, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
