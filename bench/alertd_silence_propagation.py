#!/usr/bin/env python3
"""How fast a silence made on one alertd replica mutes on the others (docs/alerting.md, "High
availability"): three `argus serve --role alertd` processes as one cluster on loopback; 100 silences,
each posted to one replica in turn; the time until both other replicas answer it on
GET /api/v2/silence/{id} (polled every 5 ms). Prints p50, p99 and max; the goal is p99 <= 1 s.

    bench/alertd_silence_propagation.py [--argus PATH] [--n 100] [--json OUT]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None):
    req = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    req.add_header("content-type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        return 0, b""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--argus", default=os.environ.get("ARGUS", "target/release/argus"))
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--json")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="argus-ha-")
    yml = os.path.join(tmp, "alertd.yml")
    with open(yml, "w") as f:
        f.write("route: {receiver: none}\nreceivers: [{name: none}]\n")
    gossip = [free_port() for _ in range(3)]
    web = [free_port() for _ in range(3)]
    procs = []
    try:
        for i in range(3):
            peers = ", ".join(f'"127.0.0.1:{gossip[j]}"' for j in range(3) if j != i)
            cfg = os.path.join(tmp, f"r{i}.toml")
            with open(cfg, "w") as f:
                f.write(
                    f'[alertd]\nconfig_file = "{yml}"\n\n[alertd.cluster]\nlisten = "127.0.0.1:{gossip[i]}"\n'
                    f'peers = [{peers}]\nname = "r{i}"\nsecret = "bench secret, thirty-two chars."\n'
                )
            log = open(os.path.join(tmp, f"r{i}.log"), "w")
            procs.append(
                subprocess.Popen(
                    [a.argus, "serve", "--config", cfg, "--role", "alertd", "--no-collector",
                     "--listen", f"127.0.0.1:{web[i]}", "--data-dir", os.path.join(tmp, f"d{i}")],
                    stdout=log, stderr=log,
                )
            )
        deadline = time.time() + 60
        for p in web:
            while http("GET", f"http://127.0.0.1:{p}/-/ready")[0] != 200:
                if time.time() > deadline:
                    sys.exit(f"replicas not ready; logs in {tmp}")
                time.sleep(0.1)
        lat = []
        for k in range(a.n):
            src = k % 3
            now = datetime.now(timezone.utc)
            body = {
                "matchers": [{"name": "host", "value": f"node-{k}", "isRegex": False, "isEqual": True}],
                "startsAt": now.isoformat().replace("+00:00", "Z"),
                "endsAt": (now + timedelta(hours=1)).isoformat().replace("+00:00", "Z"),
                "createdBy": "bench", "comment": "propagation",
            }
            t0 = time.monotonic()
            st, out = http("POST", f"http://127.0.0.1:{web[src]}/api/v2/silences", body)
            if st != 200:
                sys.exit(f"silence refused: {st} {out!r}")
            sid = json.loads(out)["silenceID"]
            pending = {j for j in range(3) if j != src}
            while pending:
                for j in list(pending):
                    if http("GET", f"http://127.0.0.1:{web[j]}/api/v2/silence/{sid}")[0] == 200:
                        pending.discard(j)
                if time.monotonic() - t0 > 10:
                    sys.exit(f"silence {sid} did not reach replicas {pending} within 10 s")
                time.sleep(0.005)
            lat.append(time.monotonic() - t0)
        lat.sort()
        res = {
            "silences": a.n,
            "p50_s": round(statistics.median(lat), 3),
            "p99_s": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 3),
            "max_s": round(lat[-1], 3),
        }
        print(json.dumps(res))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(res, f)
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
