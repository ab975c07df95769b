#!/usr/bin/env python3
"""Does the analyzer's work split evenly over shards? (issue 28, "Sharding scales")

usage: python3 bench/shard_scaling.py [--hosts 1600] [--shards 1,2,4] [--measure-minutes 4]
           [--argus-bin target/release/argus] [--out bench/results/shard_scaling.json]

1. Starts `argus serve --role store` (the embedded store) and `argus serve --role alertd`, on loopback.
2. Writes --warmup of history, then every 10 s the next sample, for --hosts hosts of 8 GPUs each:
   `gpu_utilization_ratio`, `gpu_temperature_celsius`, `gpu_power_watts` per GPU and
   `host_cpu_busy_ratio` per host (25 series a host: 40,000 series for 1,600 hosts), the series the
   analyzer's default rules select (each GPU rule with its peer detector by (cluster, host)).
3. For each N of --shards: N processes `argus serve --role analyzer --shard I/N` on fresh data
   directories (no saved models), reading from and writing to the store role, posting alerts to the
   alertd role, with the default rules and `[analyzer] warmup` = --warmup. Once every shard tracks its
   share of the series and has evaluated twice since, each shard's CPU (utime + stime) is measured over
   --measure-minutes, with its step time (`argus_analyzer_tick_seconds`, mean over the window).
4. Reports per N: the series each shard tracks, CPU per shard (seconds per minute), and
   N x mean shard CPU / (1-shard CPU): 1.00 is a perfect 1/N split; the goal is within 15 %.
Python 3 standard library only.
"""
import argparse, json, os, random, shutil, statistics, sys, threading, time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from lib import client, server  # noqa: E402
from lib.procs import Proc, log, scrape, total  # noqa: E402

STEP = 10


class Fleet:
    """Bounded random walks for every series; `lines(t)` is one step of all of them."""

    def __init__(self, hosts, seed=28):
        self.rng = random.Random(seed)
        self.hosts = hosts
        r = self.rng
        self.gpu = [[[r.uniform(0.3, 0.95), r.uniform(45, 75), r.uniform(300, 650)] for _ in range(8)] for _ in range(hosts)]
        self.cpu = [r.uniform(0.1, 0.6) for _ in range(hosts)]

    def lines(self, t):
        r, ns, out = self.rng, int(t) * 10**9, []
        for h in range(self.hosts):
            tags = f"cluster=prod,rack=rack-{h // 16:03d},host=h100-{h:04d}"
            for g, v in enumerate(self.gpu[h]):
                v[0] = min(1.0, max(0.0, v[0] + r.gauss(0, 0.02)))
                v[1] = min(90.0, max(30.0, v[1] + r.gauss(0, 0.3)))
                v[2] = min(700.0, max(70.0, v[2] + r.gauss(0, 8)))
                out.append(f"gpu,{tags},gpu={g} utilization_ratio={v[0]:.4f},temperature_celsius={v[1]:.1f},"
                           f"power_watts={v[2]:.1f} {ns}")
            self.cpu[h] = min(1.0, max(0.0, self.cpu[h] + r.gauss(0, 0.02)))
            out.append(f"host,{tags} cpu_busy_ratio={self.cpu[h]:.4f} {ns}")
        return out


def run_shards(a, n, store_port, alertd_port, expected_series):
    procs = []
    for i in range(n):
        d = os.path.join(a.work_dir, f"shards{n}-{i}")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        port = server.free_port()
        cfg = (f'[server]\nlisten = "127.0.0.1:{port}"\nalert_urls = ["http://127.0.0.1:{alertd_port}"]\n'
               f'[store]\nbackend = "prometheus"\n[store.remote]\nflavour = "victoriametrics"\n'
               f'url = "http://127.0.0.1:{store_port}"\n[analyzer]\nwarmup = "{a.warmup}"\n')
        open(os.path.join(d, "argus.toml"), "w").write(cfg)
        procs.append(Proc(f"shards{n}-{i}", [a.argus_bin, "serve", "--config", os.path.join(d, "argus.toml"),
                                              "--data-dir", os.path.join(d, "data"), "--role", "analyzer", "--no-collector",
                                              "--shard", f"{i}/{n}"], port, "/metrics", a.work_dir))
    ports = [p.port for p in procs]
    try:
        for p in procs:
            p.wait_ready()
        # Warmed up: every shard's series tracked add up to the whole, then two more evaluations each.
        started = time.time()
        while True:
            ms = [(scrape(port) or {}) for port in ports]
            tracked = [total(m, "argus_analyzer_series") for m in ms]
            if sum(tracked) >= expected_series:
                break
            if time.time() - started > a.warm_timeout:
                raise RuntimeError(f"{n} shards track {tracked} series after {a.warm_timeout} s, want {expected_series}")
            time.sleep(2)
        evals0 = [total(m, "argus_analyzer_evaluations_total") for m in ms]
        rules = max(1, len([k for k in ms[0] if k.startswith("argus_analyzer_evaluations_total{")]))
        while True:
            ms = [(scrape(port) or {}) for port in ports]
            if all(total(m, "argus_analyzer_evaluations_total") - e >= 2 * rules for m, e in zip(ms, evals0)):
                break
            time.sleep(1)
        warm_s = time.time() - started
        c0 = [p.cpu() for p in procs]
        t0 = [(total(m, "argus_analyzer_tick_seconds_sum"), total(m, "argus_analyzer_tick_seconds_count")) for m in ms]
        w0 = time.time()
        time.sleep(a.measure_minutes * 60)
        w = time.time() - w0
        c1 = [p.cpu() for p in procs]
        ms = [(scrape(port) or {}) for port in ports]
        t1 = [(total(m, "argus_analyzer_tick_seconds_sum"), total(m, "argus_analyzer_tick_seconds_count")) for m in ms]
        shards = []
        for i in range(n):
            ticks = t1[i][1] - t0[i][1]
            shards.append({"series": total(ms[i], "argus_analyzer_series"),
                           "cpu_s_per_min": round((c1[i] - c0[i]) / w * 60, 2),
                           "mean_tick_s": round((t1[i][0] - t0[i][0]) / ticks, 3) if ticks else None,
                           "failures": total(ms[i], "argus_analyzer_evaluation_failures_total")})
        return {"shards": n, "warm_s": round(warm_s), "window_s": round(w), "per_shard": shards}
    finally:
        for p in procs:
            p.stop(30)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hosts", type=int, default=1600)
    ap.add_argument("--shards", default="1,2,4")
    ap.add_argument("--warmup", default="1h", help="[analyzer] warmup, and the history written first")
    ap.add_argument("--measure-minutes", type=float, default=4)
    ap.add_argument("--warm-timeout", type=float, default=900)
    ap.add_argument("--argus-bin", default=os.path.join(ROOT, "target", "release", "argus"))
    ap.add_argument("--work-dir", default="/tmp/argus-shard-scaling")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "shard_scaling.json"))
    a = ap.parse_args()
    shutil.rmtree(a.work_dir, ignore_errors=True)
    os.makedirs(a.work_dir)
    hours = {"h": 3600, "m": 60}[a.warmup[-1]] * float(a.warmup[:-1]) / 3600
    store_port, alertd_port = server.free_port(), server.free_port()
    store, alertd = (Proc(role, [a.argus_bin, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir",
                                 os.path.join(a.work_dir, role), "--role", role, "--no-collector"], port, "/-/ready", a.work_dir)
                     for role, port in (("store", store_port), ("alertd", alertd_port)))
    fleet = Fleet(a.hosts)
    series = a.hosts * 25
    stop = threading.Event()
    try:
        store.wait_ready()
        alertd.wait_ready()
        now = time.time() // STEP * STEP
        steps = int(hours * 3600 / STEP)
        log(f"{a.hosts} hosts, {series} series: writing {steps} steps of history")
        for k in range(steps + 1):
            client.ingest(store_port, client.bodies(fleet.lines(now - (steps - k) * STEP)), writers=2)
        log("history written; live feed every 10 s")

        def feed():
            last = now
            while not stop.is_set():
                t = time.time() // STEP * STEP
                while last < t:
                    last += STEP
                    client.ingest(store_port, client.bodies(fleet.lines(last)), writers=1)
                stop.wait(max(0.1, last + STEP - time.time() + 0.2))

        threading.Thread(target=feed, daemon=True).start()
        runs = []
        for n in [int(x) for x in a.shards.split(",")]:
            log(f"{n} shard(s)")
            r = run_shards(a, n, store_port, alertd_port, series)
            log(json.dumps(r))
            runs.append(r)
    finally:
        stop.set()
        for p in (store, alertd):
            p.stop(30)
    one = statistics.mean(s["cpu_s_per_min"] for r in runs if r["shards"] == 1 for s in r["per_shard"]) \
        if any(r["shards"] == 1 for r in runs) else None
    for r in runs:
        mean = statistics.mean(s["cpu_s_per_min"] for s in r["per_shard"])
        r["mean_cpu_s_per_min"] = round(mean, 2)
        r["n_times_mean_over_one"] = round(r["shards"] * mean / one, 3) if one else None
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "hosts": a.hosts, "series": series,
           "warmup": a.warmup, "measure_minutes": a.measure_minutes, "runs": runs}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    json.dump(res, open(a.out, "w"), indent=1)
    print(f"analyzer shards over {series} series ({a.hosts} hosts), default rules, CPU over {a.measure_minutes} min")
    print("| shards | series per shard | CPU s/min per shard | mean | N x mean / one shard | mean step time |")
    print("|---|---|---|---|---|---|")
    for r in runs:
        ps = r["per_shard"]
        print(f"| {r['shards']} | {', '.join(str(int(s['series'])) for s in ps)} | "
              f"{', '.join(str(s['cpu_s_per_min']) for s in ps)} | {r['mean_cpu_s_per_min']} | "
              f"{r['n_times_mean_over_one']} | {', '.join(str(s['mean_tick_s']) for s in ps)} s |")


if __name__ == "__main__":
    main()
