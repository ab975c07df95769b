#!/usr/bin/env python3
"""CPU per alert of an alertd cluster replica against a lone alertd, at a load where alert work
dominates (issue 27: a replica costs <= 1.2x the CPU per alert of a single alertd at the same load).

usage: python3 bench/alertd_replica_cpu.py [--storm storm.jsonl | --shared ../shared] [--limit 50000]
           [--repeat 3] [--tail-s 10] [--argus-bin target/release/argus] [--work-dir /tmp/argus-replica-cpu]

The workload is the alert storm of make_storm.py, cut into batches of 64 alerts with their times rewritten
to now (as bench/alertd_throughput.py does). One run is either
- lone: three independent `argus serve --role alertd` (config/alertd.yml as shipped, incident
  correlation on), each fed the whole stream by its own writer, so that they share the 2-core machine as
  the replicas do and only the cluster differs (--lone-servers 1 runs one alone), or
- cluster: three replicas of the same as one cluster (`[alertd.cluster]`, default gossip and peer timeout),
  every batch posted to every replica (as Prometheus posts to every Alertmanager), one writer per replica.
Each server's utime+stime is read from /proc once it answers ready and 3 s have passed, and again
--tail-s after its last batch was acknowledged (processing after the answer and the gossip it causes
included). Figures: CPU seconds per 1,000 alerts per server; for the cluster, the mean over its replicas.
Lone and cluster runs alternate, --repeat times; medians and the ratio of medians are reported.
Also measured: each replica's idle CPU over 10 s before the load (gossip alone).

Python 3 standard library only; --out FILE.json writes every run's figures.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from alertd_failover import alertd_servers, cpu_seconds  # noqa: E402
from alertd_throughput import bodies_now, load_batches  # noqa: E402
from lib.client import ingest  # noqa: E402
import storm_vs_alertmanager as svm  # noqa: E402


def one_run(kind, a, batches, n_alerts, rec, run_dir):
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    if kind == "cluster":
        servers = alertd_servers(run_dir, 1, rec.port, a.argus_bin, a.alertd_config, 15, 3)
    else:
        servers = [s for i in range(a.lone_servers)
                   for s in alertd_servers(os.path.join(run_dir, f"lone{i}"), 1, rec.port, a.argus_bin,
                                           a.alertd_config, 15, 1)]
    try:
        for s in servers:
            s.wait_ready()
        time.sleep(3)
        idle0 = [cpu_seconds(s.proc.pid) for s in servers]
        time.sleep(10)
        idle = [cpu_seconds(s.proc.pid) - c for s, c in zip(servers, idle0)]
        bodies = bodies_now(batches)
        cpu0 = [cpu_seconds(s.proc.pid) for s in servers]
        results = [None] * len(servers)

        def feed(i):
            results[i] = ingest(servers[i].port, bodies, writers=1, path="/api/v2/alerts",
                                content_type="application/json")

        threads = [threading.Thread(target=feed, args=(i,)) for i in range(len(servers))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(a.tail_s)
        cpu = [cpu_seconds(s.proc.pid) - c for s, c in zip(servers, cpu0)]
        wall = max(r["last_ack"] for r in results) - min(r["first_send"] for r in results)
        per_k = [round(c / n_alerts * 1000, 4) for c in cpu]
        r = {"kind": kind, "alerts": n_alerts, "servers": len(servers), "wall_s": round(wall, 2),
             "cpu_s": [round(c, 2) for c in cpu], "cpu_s_per_1000_alerts": per_k,
             "mean_cpu_s_per_1000_alerts": round(statistics.mean(per_k), 4),
             "idle_cpu_s_per_10s": [round(c, 3) for c in idle],
             "retries": sum(r["retries"] for r in results)}
        svm.log(json.dumps(r))
        return r
    finally:
        for s in servers:
            s.end()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--storm")
    ap.add_argument("--limit", type=int, default=50000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tail-s", type=float, default=10)
    ap.add_argument("--lone-servers", type=int, default=3, help="lone servers run side by side in a lone run")
    ap.add_argument("--argus-bin", default=os.path.join(ROOT, "target", "release", "argus"))
    ap.add_argument("--alertd-config", default=os.path.join(ROOT, "config", "alertd.yml"))
    ap.add_argument("--work-dir", default="/tmp/argus-replica-cpu")
    ap.add_argument("--out")
    a = ap.parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    storm = a.storm or os.path.join(a.work_dir, "storm.jsonl")
    if not a.storm:
        dirs = sorted(svm.glob.glob(os.path.join(a.shared, "data", "smd", "machine-*")))
        subprocess.run([sys.executable, os.path.join(HERE, "lib", "make_storm.py"), storm, *dirs], check=True)
    batches = load_batches(storm, 64, a.limit)
    n_alerts = sum(len(b) for b in batches)
    rec = svm.Receiver()
    runs = []
    for i in range(a.repeat):
        for kind in ("lone", "cluster") if i % 2 == 0 else ("cluster", "lone"):
            runs.append(one_run(kind, a, batches, n_alerts, rec, os.path.join(a.work_dir, f"{kind}-{i}")))
    rec.srv.shutdown()
    med = {k: statistics.median(r["mean_cpu_s_per_1000_alerts"] for r in runs if r["kind"] == k)
           for k in ("lone", "cluster")}
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "alerts": n_alerts, "repeat": a.repeat,
           "lone_servers": a.lone_servers,
           "median_cpu_s_per_1000_alerts": med, "replica_over_lone": round(med["cluster"] / med["lone"], 3),
           "runs": runs}
    print(json.dumps({k: v for k, v in res.items() if k != "runs"}, indent=1))
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
