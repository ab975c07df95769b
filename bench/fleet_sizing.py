#!/usr/bin/env python3
"""Sizing an H100 fleet from measurement (issue 28, item 6): what one 8xH100 node sends, what the
analyzer and rules add for it, and what it costs the embedded store, against VictoriaMetrics on the
same data.

usage: python3 bench/fleet_sizing.py [--nodes 16] [--hours 2] [--live-minutes 6]
           [--argus-bin target/release/argus] [--vm-bin victoria-metrics] [--out bench/results/fleet_sizing.json]

1. History: --hours of --nodes synthetic H100 nodes (bench/lib/h100.py) at 10 s, ending now, written
   as line protocol with two keep-alive writers to VictoriaMetrics and to `argus serve` (embedded
   store, default configuration, --no-collector), one after the other on a fresh data directory each.
   Measured per server: CPU seconds per million points ingested, and bytes per point on disk after a
   flush and once background work has settled.
2. Live (Argus only, the server of step 1 kept running): every 10 s each node's next collection at
   the current time, for --live-minutes, so the default analyzer and the default rules run on it.
   Then counted through the query API: series by name, split into what nodes send and what the
   server derives (analyzer scores and bands, rule outputs), the derived ones per host, and the
   points per second of each; the server's RSS before any write and at the end.
3. Prints the node's series by family and the fleet table (nodes -> series, points/s, disk per day,
   ingest cores, head memory) computed from those measurements; writes everything as JSON to --out.
Python 3 standard library only.
"""
import argparse, collections, json, os, shutil, statistics, sys, time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib import client, h100, server  # noqa: E402
from lib.procs import log  # noqa: E402

STEP = 10


def query(srv, q, at=None):
    params = {"query": q}
    if at:
        params["time"] = at
    status, body, raw = client.get_json(srv.port, "/api/v1/query", params, timeout=120)
    if status != 200:
        raise RuntimeError(f"query {q!r}: {status} {raw}")
    return body["data"]["result"]


def history(spec, work, name, bodies, points):
    d = os.path.join(work, name)
    shutil.rmtree(d, ignore_errors=True)
    srv = server.Server(spec, d, os.path.join(work, f"{name}.log"))
    srv.start()
    time.sleep(2)
    rss0 = srv.status_kib("VmRSS")
    cpu0 = srv.cpu_seconds()
    st = client.ingest(srv.port, bodies, writers=2)
    cpu = srv.cpu_seconds() - cpu0
    status, _, body = srv.request("POST", "/internal/force_flush")
    if status not in (200, 204):
        raise RuntimeError(f"{name}: force_flush answered {status}: {body[:200]!r}")
    settled = srv.settle(stable_s=5, timeout=600, max_cpu=0.5)
    size = server.dir_size(d)[0]
    res = {"cpu_s": round(cpu, 2), "cpu_s_per_million_points": round(cpu / points * 1e6, 3),
           "ingest_wall_s": round(st["last_ack"] - st["first_send"], 1), "retries": st["retries"],
           "bytes_on_disk": size, "bytes_per_point": round(size / points, 3), "settle_s": settled,
           "rss_empty_kib": rss0, "rss_after_history_kib": srv.status_kib("VmRSS")}
    log(f"{name}: {res}")
    return srv, res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--hours", type=float, default=2)
    ap.add_argument("--live-minutes", type=float, default=6)
    ap.add_argument("--argus-bin", default=os.path.join(ROOT, "target", "release", "argus"))
    ap.add_argument("--vm-bin", default=shutil.which("victoria-metrics") or "victoria-metrics")
    ap.add_argument("--work-dir", default="/tmp/argus-fleet-sizing")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "fleet_sizing.json"))
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    nodes = [h100.Node(i) for i in range(a.nodes)]
    per_node = nodes[0].series()
    fam = collections.Counter(f for _, f in per_node)
    sent_names = {n for n, _ in per_node}
    now = time.time() // STEP * STEP
    t0 = now - a.hours * 3600
    ts = [t0 + i * STEP for i in range(int(a.hours * 3600 / STEP))]
    log(f"{a.nodes} nodes x {len(per_node)} series, {len(ts)} steps: generating")
    bodies = client.bodies((ln for t in ts for n in nodes for ln in n.lines(int(t) * 10**9)), per=4000)
    points = len(ts) * len(nodes) * len(per_node)  # every series a sample at every step
    log(f"{points:,} points in {len(bodies)} bodies, {sum(map(len, bodies)) / 1e6:.0f} MB")

    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "nodes": a.nodes, "hours": a.hours,
           "history_points": points, "node_series": len(per_node), "node_families": dict(fam)}
    if shutil.which(a.vm_bin):
        srv, res["victoriametrics"] = history(server.vm_spec(a.vm_bin, ""), a.work_dir, "vm", bodies, points)
        srv.stop()
    srv, res["argus"] = history(server.argus_spec(a.argus_bin, ""), a.work_dir, "argus", bodies, points)
    del bodies

    # Live: the analyzer and rules work on what arrives now.
    try:
        end = time.time() + a.live_minutes * 60
        ticks = []
        while time.time() < end:
            t = time.time() // STEP * STEP
            client.ingest(srv.port, client.bodies(ln for n in nodes for ln in n.lines(int(t) * 10**9)), writers=1)
            ticks.append(t)
            time.sleep(max(0, t + STEP - time.time()) + 0.05)
        time.sleep(15)
        at = time.time()
        names = query(srv, 'count by (__name__) ({__name__=~".+"})', at)
        by_name = {r["metric"]["__name__"]: int(float(r["value"][1])) for r in names}
        # Points per second: samples in whole steps ending at the last collection sent (the derived
        # series are written at the analyzer's and the rules' own steps within it).
        k = min(30, len(ticks) - 1)
        last = ticks[-1] + 0.5
        pts = {}
        # Per name: count_over_time drops the name, so series of two names would collide in one query.
        for n in by_name:
            r = query(srv, f'sum(count_over_time({{__name__="{n}"}}[{k * STEP}s]))', last)
            pts[n] = float(r[0]["value"][1]) / (k * STEP) if r else 0.0
        derived = {n: c for n, c in by_name.items() if n not in sent_names}
        sent = {n: c for n, c in by_name.items() if n in sent_names}
        per_host = query(srv, 'count by (host) ({__name__=~"argus_.*|ALERTS.*", host!=""})', at)
        per_host = sorted(int(float(r["value"][1])) for r in per_host)
        res["live"] = {
            "minutes": a.live_minutes, "series_sent": sum(sent.values()), "series_derived": derived,
            "derived_per_host_median": statistics.median(per_host) if per_host else 0,
            "derived_per_host_max": max(per_host) if per_host else 0,
            "points_per_s_sent": round(sum(v for n, v in pts.items() if n in sent_names), 1),
            "points_per_s_derived": round(sum(v for n, v in pts.items() if n not in sent_names), 1),
            "rss_end_kib": srv.status_kib("VmRSS"), "rss_peak_kib": srv.status_kib("VmHWM"),
        }
        log(f"live: {res['live']}")
    finally:
        srv.stop()

    live = res["live"]
    node_series = len(per_node) + live["derived_per_host_median"]
    node_pps = (live["points_per_s_sent"] + live["points_per_s_derived"]) / a.nodes
    arg = res["argus"]
    mem_per_series = (live["rss_end_kib"] - arg["rss_empty_kib"]) * 1024 / max(1, live["series_sent"] + sum(derived.values()))
    table = []
    for n in (8, 32, 128, 250, 500, 1000, 2000):
        pps = n * node_pps
        table.append({"nodes": n, "gpus": 8 * n, "series": int(n * node_series), "points_per_s": round(pps),
                      "disk_gib_per_day_argus": round(pps * 86400 * arg["bytes_per_point"] / 2**30, 1),
                      "disk_gib_per_day_vm": round(pps * 86400 * res["victoriametrics"]["bytes_per_point"] / 2**30, 1)
                      if "victoriametrics" in res else None,
                      "ingest_cores_argus": round(pps * arg["cpu_s_per_million_points"] / 1e6, 2),
                      "memory_gib_argus": round((arg["rss_empty_kib"] * 1024 + n * node_series * mem_per_series) / 2**30, 1)})
    res["node_series_with_derived"] = node_series
    res["node_points_per_s"] = round(node_pps, 1)
    res["memory_bytes_per_series"] = round(mem_per_series)
    res["fleet"] = table
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    json.dump(res, open(a.out, "w"), indent=1)
    print(f"series one node sends: {len(per_node)}")
    for f, c in fam.most_common():
        print(f"  {c:5d}  {f}")
    print(f"derived per host (median): {live['derived_per_host_median']}; by name: {derived}")
    print("| nodes | GPUs | series | points/s | Argus disk/day | VM disk/day | Argus ingest cores | Argus memory |")
    print("|---|---|---|---|---|---|---|---|")
    for r in table:
        print(f"| {r['nodes']} | {r['gpus']} | {r['series']:,} | {r['points_per_s']:,} | {r['disk_gib_per_day_argus']} GiB | "
              f"{r['disk_gib_per_day_vm']} GiB | {r['ingest_cores_argus']} | {r['memory_gib_argus']} GiB |")


if __name__ == "__main__":
    main()
