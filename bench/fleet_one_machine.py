#!/usr/bin/env python3
"""A 250-node H100 fleet into one machine: the embedded store against VictoriaMetrics on the same stream,
in the same run, with the default analyzer (issue 28, "Fleet on one machine").

usage: python3 bench/fleet_one_machine.py [--nodes 250] [--minutes 30]
           [--argus-bin target/release/argus] [--vm-bin victoria-metrics] [--out bench/results/fleet_one_machine.json]

1. Starts, on loopback, VictoriaMetrics (single node, Debian's) and two Argus processes on one data
   directory's worth of work: `argus serve --role store` (the embedded store, defaults) and
   `argus serve --role rules,analyzer,alertd` reading and writing through it (default analyzer rules,
   default rule files), so the store's CPU and memory are measured apart from the analyzer's.
2. Every 10 s, each of --nodes synthetic 8xH100 nodes (bench/lib/h100.py: 1,973 series a node) sends
   its collection at the current time; the same line-protocol bodies go to VictoriaMetrics and to the
   Argus store, each through its own sender thread (two keep-alive writers), for --minutes.
   With --vm-shards N (default 2), the same rules and analyzer also run on VictoriaMetrics as N rules
   and N analyzer processes (`--role rules --shard I/N`, `--role analyzer --shard I/N`) posting to an
   alertd process of their own. --faults faults (bench/lib/h100.py: Xid 79, a hot GPU, an uncorrectable
   ECC error, an IB port down, a GPU idle among busy peers) start from minute --fault-at, one every 30 s,
   on different nodes; both alertds' active alerts are read every 10 s, and the sets of alerts each
   has held (Watchdog aside) whose anomaly or condition began (`startsAt`) within the run are compared
   at the end. The stream goes on for one more minute (TAIL_S), so that an alert that began in the
   last steps has fired on both sides, on the same data.
   With --history-minutes, that much history is written to both stores first, up to the current step
   (so that no gap separates it from the live stream: a store with Prometheus' 5-minute lookback and
   VictoriaMetrics answer differently across a gap), and the readers start as the live stream does.
3. Every 10 s: each process's CPU seconds and RSS; the analyzer's step time and lag
   (`argus_analyzer_tick_seconds`, and how far its latest evaluated step trails the wall clock,
   `argus_analyzer_lag_seconds` where reported); the senders' backlog.
4. Reports over the run (after the first --skip-minutes, while series are being created):
   CPU seconds per million points ingested (store role vs VictoriaMetrics), RSS at the end and peak
   (store role; store + analyzer process against VictoriaMetrics + 1 GiB), analyzer step time p50 /
   p99 / max, ticks dropped or late, and whether each sender kept up.
Python 3 standard library only.
"""
import argparse, datetime, json, os, queue, shutil, statistics, sys, threading, time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib import client, h100, server  # noqa: E402
from lib.procs import Proc, get, log, scrape, total  # noqa: E402

STEP = 10
TAIL_S = 60


class Sender(threading.Thread):
    """Posts each tick's bodies to one server (bench/lib/client.py's writers: two keep-alive connections,
    429/503 retried); counts points acknowledged, and ticks that failed or ended past their deadline."""

    def __init__(self, port, path):
        super().__init__(daemon=True)
        self.port, self.path, self.q = port, path, queue.Queue()
        self.acked_points, self.failed, self.late_ticks, self.busy_s = 0, 0, 0, 0.0

    def run(self):
        while True:
            item = self.q.get()
            if item is None:
                return
            deadline, bodies = item
            t0 = time.time()
            try:
                client.ingest(self.port, [b for b, _ in bodies], writers=2, path=self.path)
                self.acked_points += sum(p for _, p in bodies)
            except (client.WriteError, OSError) as e:
                # A tick whose writes did not all succeed counts as failed whole, none of its points acked.
                log(f"{self.port}{self.path}: {e}")
                self.failed += len(bodies)
            self.busy_s += time.time() - t0
            if time.time() > deadline:
                self.late_ticks += 1


def rfc3339_s(s):
    """An RFC 3339 time as Unix seconds (UTC, fraction kept); +inf when absent or unreadable."""
    try:
        d = datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
        return d.timestamp()
    except (AttributeError, ValueError):
        return float("inf")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=250)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--skip-minutes", type=float, default=5, help="left out of the per-point figures (series creation)")
    ap.add_argument("--argus-bin", default=os.path.join(ROOT, "target", "release", "argus"))
    ap.add_argument("--vm-bin", default=shutil.which("victoria-metrics") or "victoria-metrics")
    ap.add_argument("--vm-shards", type=int, default=2, help="rules and analyzer shards on VictoriaMetrics (0: none)")
    ap.add_argument("--vm-latency-offset", default="0s",
                    help="VictoriaMetrics' -search.latencyOffset: 0s so that rules and the analyzer read the newest "
                         "samples, as docs/backends.md advises for readers that need them (its default is 30s)")
    ap.add_argument("--history-minutes", type=float, default=0,
                    help="history written to both stores before the rules and analyzers start (they warm up on it)")
    ap.add_argument("--faults", type=int, default=10, help="faults injected, one every 30 s (bench/lib/h100.py kinds in turn)")
    ap.add_argument("--fault-at", type=float, default=10, help="minute of the run the first fault starts")
    ap.add_argument("--work-dir", default="/tmp/argus-fleet-one-machine")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "fleet_one_machine.json"))
    a = ap.parse_args()
    shutil.rmtree(a.work_dir, ignore_errors=True)
    os.makedirs(a.work_dir)
    vm_port, store_port, an_port = server.free_port(), server.free_port(), server.free_port()
    vm = Proc("vm", [a.vm_bin, f"-storageDataPath={a.work_dir}/vm", f"-httpListenAddr=127.0.0.1:{vm_port}",
                     "-retentionPeriod=100y", "-loggerLevel=WARN", f"-search.latencyOffset={a.vm_latency_offset}"],
              vm_port, "/health", a.work_dir)
    store = Proc("argus-store", [a.argus_bin, "serve", "--listen", f"127.0.0.1:{store_port}", "--data-dir",
                                 f"{a.work_dir}/argus-store", "--role", "store", "--no-collector"], store_port, "/-/ready", a.work_dir)
    procs = [vm, store]

    def start_readers():
        """The rules/analyzer/alertd process on the Argus store and, with --vm-shards, the shards on
        VictoriaMetrics: started once the history is in, so that they warm up on it."""
        shard_alertd = None
        cfg = os.path.join(a.work_dir, "analyzer.toml")
        open(cfg, "w").write(f'[server]\nlisten = "127.0.0.1:{an_port}"\n[store]\nbackend = "prometheus"\n'
                             f'[store.remote]\nflavour = "victoriametrics"\nurl = "http://127.0.0.1:{store_port}"\n')
        analyzer = Proc("argus-analyzer", [a.argus_bin, "serve", "--config", cfg, "--data-dir", f"{a.work_dir}/argus-analyzer",
                                           "--role", "rules,analyzer,alertd", "--no-collector"], an_port, "/-/ready", a.work_dir)
        procs.append(analyzer)
        # The same rules and analyzer on VictoriaMetrics, sharded: --vm-shards rules and analyzer processes
        # each, posting to an alertd of their own.
        if a.vm_shards:
            ad_port = server.free_port()
            shard_alertd = Proc("vm-alertd", [a.argus_bin, "serve", "--listen", f"127.0.0.1:{ad_port}", "--data-dir",
                                              f"{a.work_dir}/vm-alertd", "--role", "alertd", "--no-collector"], ad_port, "/-/ready", a.work_dir)
            procs.append(shard_alertd)
            for role in ("rules", "analyzer"):
                for i in range(a.vm_shards):
                    port = server.free_port()
                    c = os.path.join(a.work_dir, f"vm-{role}-{i}.toml")
                    open(c, "w").write(f'[server]\nlisten = "127.0.0.1:{port}"\nalert_urls = ["http://127.0.0.1:{ad_port}"]\n'
                                       f'[store]\nbackend = "prometheus"\n[store.remote]\nflavour = "victoriametrics"\n'
                                       f'url = "http://127.0.0.1:{vm_port}"\n')
                    procs.append(Proc(f"vm-{role}-{i}", [a.argus_bin, "serve", "--config", c, "--data-dir", f"{a.work_dir}/vm-{role}-{i}",
                                                         "--role", role, "--no-collector", "--shard", f"{i}/{a.vm_shards}"],
                                      port, "/metrics", a.work_dir))
        return analyzer, shard_alertd

    nodes = [h100.Node(i) for i in range(a.nodes)]
    per_node = len(nodes[0].series())
    senders = {"vm": Sender(vm_port, "/api/v2/write?precision=ns"), "argus": Sender(store_port, "/api/v2/write?precision=ns")}
    samples = []
    try:
        for p in procs:
            p.wait_ready()
        if a.history_minutes > 0:
            t = time.time() // STEP * STEP - a.history_minutes * 60
            log(f"writing {a.history_minutes} min of history to both stores, up to the current step")
            while t <= time.time() // STEP * STEP:
                bodies = client.bodies(ln for n in nodes for ln in n.lines(int(t) * 10**9))
                for port in (vm_port, store_port):
                    client.ingest(port, bodies, writers=2)
                t += STEP
            log("history written")
        analyzer, shard_alertd = start_readers()
        for s in senders.values():
            s.start()
        start = time.time() // STEP * STEP + STEP
        # The readers get ready while the live stream runs: waiting for them first would leave a gap.
        readers_ready = {}

        def wait_readers():
            for p in procs[2:]:
                try:
                    p.wait_ready()
                    readers_ready[p.name] = True
                except RuntimeError as e:
                    readers_ready[p.name] = str(e)
                    log(str(e))
        threading.Thread(target=wait_readers, daemon=True).start()
        end = start + a.minutes * 60
        kinds = ["xid79", "hot", "ecc", "ib_down", "util_drop"]
        faults = []
        for k in range(a.faults):
            n, kind, g = (k * 37 + 11) % a.nodes, kinds[k % len(kinds)], (k * 3) % 8
            nodes[n].fault(start + a.fault_at * 60 + k * 30, kind, g)
            faults.append({"node": n, "kind": kind, "gpu": g, "at_s": a.fault_at * 60 + k * 30})
        seen = {"embedded": {}, "victoriametrics": {}}

        def alerts_seen(port, into, t):
            """Each alert's label set: (first seen, s into the run; its earliest `startsAt`, epoch s)."""
            try:
                st, body = get(port, "/api/v2/alerts", 30)
            except OSError:
                return
            if st != 200:
                return
            for al in json.loads(body):
                labels = al.get("labels", {})
                if labels.get("alertname") == "Watchdog" or al.get("status", {}).get("state") == "suppressed":
                    continue
                key = json.dumps(labels, sort_keys=True)
                began = rfc3339_s(al.get("startsAt"))
                seen_at, was = into.get(key, (t - start, began))
                into[key] = (seen_at, min(was, began))
        skip_until = start + a.skip_minutes * 60
        base = None
        gen_s = []
        t = start
        log(f"{a.nodes} nodes x {per_node} series = {a.nodes * per_node:,} series, "
            f"{a.nodes * per_node / STEP:,.0f} points/s, {a.minutes} min")
        while t < end + TAIL_S:
            time.sleep(max(0, t - time.time()))
            g0 = time.time()
            bodies = client.bodies(ln for n in nodes for ln in n.lines(int(t) * 10**9))
            per_body = a.nodes * per_node / len(bodies)
            bodies = [(b, per_body) for b in bodies]
            gen_s.append(time.time() - g0)
            for s in senders.values():
                s.q.put((t + STEP, bodies))
            alerts_seen(an_port, seen["embedded"], t)
            if shard_alertd:
                alerts_seen(shard_alertd.port, seen["victoriametrics"], t)
            # Sample every process at each tick.
            am = scrape(an_port) or {}
            shard_ticks = {}
            for p in procs:
                if p.name.startswith("vm-analyzer-"):
                    m = scrape(p.port) or {}
                    shard_ticks[p.name] = (total(m, "argus_analyzer_tick_seconds_sum"),
                                           total(m, "argus_analyzer_tick_seconds_count"))
            row = {"t": t, "cpu": {p.name: p.cpu() for p in procs}, "rss_kib": {p.name: p.kib("VmRSS") for p in procs},
                   "shard_ticks": shard_ticks,
                   "acked": {k: s.acked_points for k, s in senders.items()},
                   "tick_sum": total(am, "argus_analyzer_tick_seconds_sum"),
                   "tick_count": total(am, "argus_analyzer_tick_seconds_count"),
                   "backlog": {k: s.q.qsize() for k, s in senders.items()}}
            samples.append(row)
            if base is None and t >= skip_until:
                base = row
            if t < end:
                last_in_run = row
            if len(samples) % 30 == 0:
                log(f"t+{t - start:.0f}s rss MiB " + ", ".join(f"{k} {v / 1024:.0f}" for k, v in row["rss_kib"].items())
                    + f"; backlog {row['backlog']}; generate {gen_s[-1]:.2f}s")
            t += STEP
        for s in senders.values():
            s.q.put(None)
        for s in senders.values():
            s.join(300)
        last = {"cpu": last_in_run["cpu"], "rss_kib": last_in_run["rss_kib"],
                "hwm_kib": {p.name: p.kib("VmHWM") for p in procs}, "acked": last_in_run["acked"]}
        am = scrape(an_port) or {}
        analyzer_metrics = {k: v for k, v in am.items() if k.startswith("argus_analyzer_")
                            and ("series" in k or "failures" in k or "lag" in k)}
    finally:
        for p in procs:
            p.stop()
    base = base or samples[0]
    pts = {k: last["acked"][k] - base["acked"][k] for k in senders}
    cpu_per_m = {
        "vm": (last["cpu"]["vm"] - base["cpu"]["vm"]) / max(1, pts["vm"]) * 1e6,
        "argus_store": (last["cpu"]["argus-store"] - base["cpu"]["argus-store"]) / max(1, pts["argus"]) * 1e6,
        "argus_analyzer_cores": (last["cpu"]["argus-analyzer"] - base["cpu"]["argus-analyzer"]) / (samples[-1]["t"] - base["t"]),
    }
    # Step time per interval between samples (mean of the ticks in it).
    steps = []
    for x, y in zip(samples, samples[1:]):
        dc = y["tick_count"] - x["tick_count"]
        if dc > 0 and y["t"] > base["t"]:
            steps.append((y["tick_sum"] - x["tick_sum"]) / dc)
    # The same for each analyzer shard on VictoriaMetrics.
    shard_steps = {}
    for x, y in zip(samples, samples[1:]):
        for name, (s1, c1) in y.get("shard_ticks", {}).items():
            s0, c0 = x.get("shard_ticks", {}).get(name, (0, 0))
            if c1 > c0 and y["t"] > base["t"]:
                shard_steps.setdefault(name, []).append((s1 - s0) / (c1 - c0))
    res = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "nodes": a.nodes, "series": a.nodes * per_node,
        "shard_step_s": {k: {"p50": pct(v, 0.5), "p99": pct(v, 0.99), "max": max(v)} for k, v in shard_steps.items()},
        "minutes": a.minutes, "skip_minutes": a.skip_minutes, "points_acked": last["acked"], "points_measured": pts,
        "failed_batches": {k: s.failed for k, s in senders.items()}, "late_ticks": {k: s.late_ticks for k, s in senders.items()},
        "sender_busy_s": {k: round(s.busy_s) for k, s in senders.items()},
        "cpu_s_per_million_points": {k: round(v, 3) for k, v in cpu_per_m.items() if k != "argus_analyzer_cores"},
        "argus_store_over_vm_cpu": round(cpu_per_m["argus_store"] / cpu_per_m["vm"], 3),
        "analyzer_cores": round(cpu_per_m["argus_analyzer_cores"], 3),
        "rss_end_mib": {k: round(v / 1024) for k, v in last["rss_kib"].items()},
        "rss_peak_mib": {k: round(v / 1024) for k, v in last["hwm_kib"].items()},
        "analyzer_step_s": {"p50": pct(steps, 0.5), "p99": pct(steps, 0.99), "max": max(steps) if steps else None},
        "analyzer_metrics": analyzer_metrics, "generate_s_p50": round(statistics.median(gen_s), 3),
    }
    res["faults"] = faults
    res["readers_ready"] = readers_ready
    if shard_alertd:
        # Alerts that began within the run (the tail only lets them fire).
        e = {k for k, (_, began) in seen["embedded"].items() if began < end}
        v = {k for k, (_, began) in seen["victoriametrics"].items() if began < end}
        res["alerts"] = {"embedded": len(e), "victoriametrics_sharded": len(v), "both": len(e & v),
                         "only_embedded": [json.loads(x) for x in sorted(e - v)],
                         "only_victoriametrics": [json.loads(x) for x in sorted(v - e)],
                         "equal": e == v,
                         "began_after_run": {k: sum(1 for _, b in x.values() if b >= end) for k, x in seen.items()},
                         "first_seen_s": {x: [seen["embedded"].get(x, (None,))[0], seen["victoriametrics"].get(x, (None,))[0]]
                                          for x in sorted(e | v)}}
    else:
        res["alerts"] = {"embedded": sorted(seen["embedded"])}
    pk = res["rss_peak_mib"]
    res["argus_total_peak_over_vm_mib"] = pk["argus-store"] + pk["argus-analyzer"] - pk["vm"]
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    json.dump({**res, "samples": samples}, open(a.out, "w"), indent=1)
    print(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
