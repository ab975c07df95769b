#!/usr/bin/env python3
"""A rolling upgrade of an alertd cluster from one release to the next (issue 27: replicas one release
apart interoperate, so an upgrade never needs a full stop).

usage: python3 bench/alertd_rolling_upgrade.py --old-bin OLD_ARGUS --new-bin NEW_ARGUS
           [--work-dir /tmp/argus-rolling-upgrade] [--peer-timeout 2]

Build the older release first, e.g.:
    git worktree add /tmp/prev <commit> && (cd /tmp/prev && cargo build --release --bin argus)

1. Starts three `argus serve --role alertd` replicas of the OLD binary as one cluster on loopback
   (correlation by host, so group keys carry incident numbers), one webhook receiver (this script).
2. Five rounds: before the upgrade, after each of the three replicas was replaced by the NEW binary on
   its own data directory (SIGTERM, start, wait for /-/ready), and once more at the end. In each round:
   - a new alert is posted to all three replicas: the receiver must get exactly one notification;
   - a silence is made on one replica (a different one each round, so old and new make them): the
     time until the two others list it is measured;
   - every silence made so far must be listed by every replica.
3. Counts "not merged" warnings in every replica's log (an item one release could not read).
   Writes summary.json in --work-dir and prints it.

Python 3 standard library only.
"""
import argparse, json, os, shutil, sys, time, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import storm_vs_alertmanager as svm  # noqa: E402
from alertd_failover import Server, first_ready  # noqa: E402

SECRET = "rolling upgrade bench cluster secret"
CONFIG = """global: {{resolve_timeout: 1h}}
route: {{receiver: hook, group_by: [cluster], group_wait: 1s, group_interval: 2s, repeat_interval: 1h}}
receivers:
  - {{name: hook, webhook_configs: [{{url: 'http://127.0.0.1:{port}/hook', send_resolved: false}}]}}
argus:
  correlation: {{labels: [host], window: 10m}}
"""


def request(port, method, path, body=None):
    c = svm.http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    data = json.dumps(body).encode() if body is not None else None
    c.request(method, path, body=data, headers={"Content-Type": "application/json"})
    r = c.getresponse()
    out = r.read()
    c.close()
    if r.status >= 300:
        raise RuntimeError(f"{method} {path} on :{port}: {r.status} {out[:200]!r}")
    return json.loads(out) if out else None


def silence_ids(port):
    return {s["id"] for s in request(port, "GET", "/api/v2/silences")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--old-bin", required=True)
    ap.add_argument("--new-bin", required=True)
    ap.add_argument("--work-dir", default="/tmp/argus-rolling-upgrade")
    ap.add_argument("--peer-timeout", type=float, default=2)
    a = ap.parse_args()
    shutil.rmtree(a.work_dir, ignore_errors=True)
    os.makedirs(a.work_dir)
    rec = svm.Receiver()
    gossip = [svm.free_port() for _ in range(3)]
    servers, bins = [], ["old"] * 3

    def server(i, binary):
        d = os.path.join(a.work_dir, f"r{i}")
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "alertd.yml"), "w").write(CONFIG.format(port=rec.port))
        port = servers[i].port if i < len(servers) else svm.free_port()
        peers = ", ".join(f'"127.0.0.1:{gossip[j]}"' for j in range(3) if j != i)
        open(os.path.join(d, "argus.toml"), "w").write(
            f'[server]\nlisten = "127.0.0.1:{port}"\n[alertd]\nconfig_file = "{d}/alertd.yml"\n'
            f'[alertd.cluster]\nlisten = "127.0.0.1:{gossip[i]}"\npeers = [{peers}]\nname = "r{i}"\n'
            f'peer_timeout = "{a.peer_timeout:g}s"\nsettle_timeout = "10s"\nsecret = "{SECRET}"\n')
        cmd = [binary, "serve", "--config", os.path.join(d, "argus.toml"), "--role", "alertd", "--no-collector",
               "--data-dir", os.path.join(d, "data")]
        return Server(f"r{i}", cmd, port, ["/-/ready"], os.path.join(d, "log"))

    rounds, made = [], []
    try:
        servers.extend(server(i, a.old_bin) for i in range(3))
        for s in servers:
            s.wait_ready()
        steps = ["all old", "r0 upgraded", "r1 upgraded", "r2 upgraded", "all new"]
        for k, step in enumerate(steps):
            if 1 <= k <= 3:
                i = k - 1
                servers[i].end()
                servers[i] = server(i, a.new_bin)
                bins[i] = "new"
                ready = first_ready(servers[i], timeout=60)
            else:
                ready = None
            # One alert to every replica: one notification.
            before = len(rec.got)
            alert = [{"labels": {"alertname": "HostDown", "cluster": "c", "host": f"h{k}", "severity": "critical"},
                      "startsAt": svm.iso_us(time.time())}]
            for s in servers:
                request(s.port, "POST", "/api/v2/alerts", alert)
            time.sleep(3 * a.peer_timeout + 4)
            with rec.lock:
                got = [json.loads(b) for _, p, b in rec.got[before:] if p == "/hook"]
            hosts = [al["labels"]["host"] for n in got for al in n["alerts"] if al["status"] == "firing"]
            # A silence made on a different replica each round.
            maker = k % 3
            body = {"matchers": [{"name": "host", "value": f"s{k}", "isRegex": False, "isEqual": True}],
                    "startsAt": svm.iso_s(time.time()), "endsAt": svm.iso_s(time.time() + 3600),
                    "createdBy": "bench", "comment": f"round {k} {uuid.uuid4()}"}
            t0 = time.time()
            sid = request(servers[maker].port, "POST", "/api/v2/silences", body)["silenceID"]
            made.append(sid)
            seen = {}
            while len(seen) < 2 and time.time() - t0 < 10:
                for j, s in enumerate(servers):
                    if j != maker and j not in seen and sid in silence_ids(s.port):
                        seen[j] = round(time.time() - t0, 3)
                time.sleep(0.005)
            missing = {s.name: sorted(set(made) - silence_ids(s.port)) for s in servers}
            rounds.append({
                "step": step, "binaries": list(bins), "ready": ready,
                "notifications": len(got), "notified_hosts": hosts,
                "silence_made_on": f"r{maker} ({bins[maker]})",
                "silence_seen_after_s": {f"r{j} ({bins[j]})": t for j, t in sorted(seen.items())},
                "silences_missing": {n: m for n, m in missing.items() if m},
            })
            svm.log(json.dumps(rounds[-1]))
    finally:
        for s in servers:
            s.end()
        rec.srv.shutdown()
    not_merged = {f"r{i}": open(os.path.join(a.work_dir, f"r{i}", "log")).read().count("not merged") for i in range(3)}
    ok = all(r["notifications"] == 1 and len(r["silence_seen_after_s"]) == 2 and not r["silences_missing"]
             for r in rounds) and not any(not_merged.values())
    res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "old_bin": a.old_bin, "new_bin": a.new_bin,
           "peer_timeout_s": a.peer_timeout, "rounds": rounds, "not_merged_warnings": not_merged, "ok": ok}
    json.dump(res, open(os.path.join(a.work_dir, "summary.json"), "w"), indent=1)
    print(json.dumps(res, indent=1))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
