#!/usr/bin/env python3
"""alertd's cluster against Alertmanager 0.25's own cluster under failures (issue 27, failover bench).

usage: python3 bench/alertd_failover.py [--shared ../shared] [--minutes 42] [--speed 30]
           [--kill-every 120] [--argus-bin target/release/argus] [--work-dir /tmp/argus-failover]

1. Builds the storm with make_storm.py over the shared SMD machines (or reuses --storm FILE).
2. Starts on loopback, in the same run: three Alertmanager replicas as one cluster (`--cluster.peer`),
   one lone Alertmanager, three `argus serve --role alertd` replicas as one cluster (`[alertd.cluster]`)
   and one lone alertd. Alertmanager: group_by [host], 30s / 5m / 4h, send_resolved false; alertd:
   config/alertd.yml as shipped (incident correlation on). Every duration of both configurations is
   divided by --speed; both clusters get the same `peer_timeout` (--peer-timeout, not scaled), and
   gossip runs at each one's default interval. One webhook receiver (this script) records them all.
3. Replays the storm from its start in accelerated real time (stream second s at wall W0 + s / speed,
   startsAt/endsAt rewritten the same way) to every server, each server fed by its own sender
   thread with a 2 s timeout (a stopped server makes its own queue wait, as Prometheus' notifier does).
4. Every --kill-every wall seconds one replica index is drawn (seeded) and that replica of both
   clusters is killed with SIGKILL and restarted 5 s later on its data directory; for the alertd one,
   `/-/ready` is polled from the restart and the first ready answer is recorded (it must say it
   merged, or that the settle timeout passed). Once, a replica of both clusters is isolated with
   SIGSTOP for 120 s, then resumed.
   A second lone server of each (the control) gets the same stream, to show how far two identical
   servers differ already.
5. Scores each cluster (and each control) against its lone twin:
   - lost groups: group keys (for alertd, incidents) the lone server notified and the cluster never did;
   - lost alerts: alerts (by labels) that the lone server notified firing and the cluster never did;
   - duplicates: a POST for the same group and the same set of firing alerts as one already posted
     by that system less than half the repeat interval before (later ones are repeats it was asked to
     send); as a share of the system's notifications.
   Writes summary.json and summary.md in --work-dir.

Python 3 standard library only.
"""
import argparse, collections, json, os, queue, random, signal, subprocess, sys, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import storm_vs_alertmanager as svm  # noqa: E402  (shared helpers: times, durations, receiver)

SECRET = "failover bench cluster secret, 42 chars"


def spawn(cmd, log_path):
    return subprocess.Popen(cmd, stdout=open(log_path, "a"), stderr=subprocess.STDOUT)


def cpu_seconds(pid):
    """utime + stime of a live process, from /proc."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


class Server:
    """One server process that can be killed, restarted, stopped and resumed; `cpu` adds up the CPU
    seconds of every process it ran."""

    def __init__(self, name, cmd, port, ready_paths, log_path):
        self.name, self.cmd, self.port, self.paths, self.log_path = name, cmd, port, ready_paths, log_path
        self.cpu = 0.0
        self.proc = spawn(cmd, log_path)

    def wait_ready(self, timeout=60):
        svm.wait_ready(self.port, self.paths, self.proc, timeout)

    def kill(self):
        self.cpu += cpu_seconds(self.proc.pid)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def restart(self):
        self.proc = spawn(self.cmd, self.log_path)

    def stop(self):
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)

    def end(self):
        if self.proc.poll() is None:
            self.cpu += cpu_seconds(self.proc.pid)
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def am_servers(work, speed, rport, am_bin, peer_timeout, replicas, lone="lone"):
    f = lambda s: svm.fmt_ms(svm.dur_ms(s) / speed)
    out = []
    gossip = [svm.free_port() for _ in range(replicas)]
    for i in range(replicas):
        name = f"am{i}" if replicas > 1 else f"am-{lone}"
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        path = "am" if replicas > 1 else f"am-{lone}"
        cfg = (f"global:\n  resolve_timeout: {f('5m')}\nroute:\n  receiver: hook\n  group_by: [host]\n"
               f"  group_wait: {f('30s')}\n  group_interval: {f('5m')}\n  repeat_interval: {f('4h')}\n"
               f"receivers:\n  - name: hook\n    webhook_configs:\n      - url: http://127.0.0.1:{rport}/{path}\n"
               f"        send_resolved: false\n")
        open(os.path.join(d, "alertmanager.yml"), "w").write(cfg)
        port = svm.free_port()
        cmd = [am_bin, "--config.file=" + os.path.join(d, "alertmanager.yml"), "--storage.path=" + os.path.join(d, "data"),
               f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
        if replicas > 1:
            cmd += [f"--cluster.listen-address=127.0.0.1:{gossip[i]}", f"--cluster.peer-timeout={peer_timeout:g}s"]
            cmd += [f"--cluster.peer=127.0.0.1:{gossip[j]}" for j in range(replicas) if j != i]
        else:
            cmd += ["--cluster.listen-address="]
        out.append(Server(name, cmd, port, ["/-/ready"], os.path.join(d, "log")))
    return out


def alertd_servers(work, speed, rport, argus_bin, alertd_yml, peer_timeout, replicas, lone="lone"):
    text, _ = svm.scale_yaml(open(alertd_yml).read(), speed)
    path = "alertd" if replicas > 1 else f"alertd-{lone}"
    text = svm.re.sub(r"url:\s*http://127\.0\.0\.1:\d+/\S*", f"url: http://127.0.0.1:{rport}/{path}", text)
    gossip = [svm.free_port() for _ in range(replicas)]
    out = []
    for i in range(replicas):
        name = f"alertd{i}" if replicas > 1 else f"alertd-{lone}"
        d = os.path.join(work, name)
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, "alertd.yml"), "w").write(text)
        port = svm.free_port()
        toml = f'[server]\nlisten = "127.0.0.1:{port}"\n[alertd]\nconfig_file = "{d}/alertd.yml"\n'
        if replicas > 1:
            peers = ", ".join(f'"127.0.0.1:{gossip[j]}"' for j in range(replicas) if j != i)
            toml += (f'[alertd.cluster]\nlisten = "127.0.0.1:{gossip[i]}"\npeers = [{peers}]\nname = "r{i}"\n'
                     f'peer_timeout = "{peer_timeout:g}s"\nsettle_timeout = "10s"\nsecret = "{SECRET}"\n')
        open(os.path.join(d, "argus.toml"), "w").write(toml)
        cmd = [argus_bin, "serve", "--config", os.path.join(d, "argus.toml"), "--role", "alertd", "--no-collector",
               "--data-dir", os.path.join(d, "data")]
        out.append(Server(name, cmd, port, ["/-/ready"], os.path.join(d, "log")))
    return out


class Sender(threading.Thread):
    """Posts every body it is given to one server, in order, with a short timeout."""

    def __init__(self, server):
        super().__init__(daemon=True)
        self.server, self.q, self.conn = server, queue.Queue(), [None]
        self.status = collections.Counter()

    def run(self):
        while True:
            body = self.q.get()
            if body is None:
                return
            st = -1
            try:
                c = svm.http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=2)
                c.request("POST", "/api/v2/alerts", body=body, headers={"Content-Type": "application/json"})
                r = c.getresponse(); r.read(); st = r.status
                c.close()
            except (OSError, svm.http.client.HTTPException):
                pass
            self.status[st] += 1


def first_ready(server, timeout=60):
    """Polls /-/ready from now: the body of its first 200, or None."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            c = svm.http.client.HTTPConnection("127.0.0.1", server.port, timeout=1)
            c.request("GET", "/-/ready")
            r = c.getresponse(); body = r.read().decode()
            if r.status == 200:
                return body.strip()
        except OSError:
            pass
        time.sleep(0.05)
    return None


def notifications(got, path):
    out = []
    for w, p, body in got:
        if p != "/" + path:
            continue
        payload = json.loads(body)
        firing = frozenset(tuple(sorted(a.get("labels", {}).items())) for a in payload.get("alerts", [])
                           if a.get("status") == "firing")
        out.append((w, payload.get("groupKey", ""), firing))
    return out


def group_ids(ns):
    """Each group key's identity across systems: alertd numbers a lone server's incidents 1, 2, ...
    and a cluster's by their content, so an incident is named by its key without the number and the
    hosts of every alert ever notified under it."""
    hosts = collections.defaultdict(set)
    for _, g, f in ns:
        hosts[g] |= {dict(a).get("host", "") for a in f}
    return {g: (svm.re.sub(r":incident=\d+", "", g), frozenset(h)) for g, h in hosts.items()}


def repeats(ns, repeat_s):
    """POSTs for a group and a set of firing alerts already posted less than half the repeat interval
    before. A lone server sends some too: the same alerts firing again after they resolved."""
    n, last = 0, {}
    for w, g, f in sorted(ns):
        k = (g, f)
        if k in last and w - last[k] < repeat_s / 2:
            n += 1
        last[k] = w
    return n


def score(cluster, lone, repeat_s):
    dup = repeats(cluster, repeat_s)
    alerts = lambda ns: {a for _, _, f in ns for a in f}
    lost = alerts(lone) - alerts(cluster)
    groups = lambda ns: set(group_ids(ns).values())
    return {"notifications": len(cluster), "duplicates": dup, "lone_duplicates": repeats(lone, repeat_s),
            "lone_groups_notified": len(groups(lone)), "lost_groups": len(groups(lone) - groups(cluster)),
            "duplicate_share": round(dup / max(1, len(cluster)), 5),
            "lone_notifications": len(lone), "alerts_notified": len(alerts(cluster)),
            "lone_alerts_notified": len(alerts(lone)), "lost_alerts": len(lost),
            "lost_examples": [dict(a) for a in list(lost)[:5]]}


def scores(got, repeat_s):
    """Each cluster against its lone twin, and each control against the lone twin both ways (what two
    identical lone servers already differ by)."""
    n = lambda path: notifications(got, path)
    return {
        "alertmanager": score(n("am"), n("am-lone"), repeat_s),
        "alertd": score(n("alertd"), n("alertd-lone"), repeat_s),
        "alertmanager_control": score(n("am-control"), n("am-lone"), repeat_s),
        "alertmanager_control_reverse": score(n("am-lone"), n("am-control"), repeat_s),
        "alertd_control": score(n("alertd-control"), n("alertd-lone"), repeat_s),
        "alertd_control_reverse": score(n("alertd-lone"), n("alertd-control"), repeat_s),
    }


def table(res):
    md = [f"failover bench {res['date']}: {res['posts']} posts ({res['alerts']} alerts), {res['minutes']} min at "
          f"{res['speed']}x, {res['kills']} kills, {sum(1 for e in res['events'] if 'stop' in e)} SIGSTOP of 120 s, "
          f"peer_timeout {res['peer_timeout_s']} s", "",
          "| system | notifications | duplicates (its lone twin's) | share | lost groups (vs its lone twin) | "
          "lost alerts (vs its lone twin) | lone twin notifications | CPU per replica / lone |",
          "|---|---|---|---|---|---|---|---|"]
    for name in ("alertmanager", "alertd", "alertmanager_control", "alertd_control"):
        r = res[name]
        rev = res.get(name + "_reverse")
        back = f" ({rev['lost_alerts']} the other way)" if rev else ""
        cpu = f"{r['cpu_per_replica_over_lone']:.2f}" if "cpu_per_replica_over_lone" in r else "–"
        md.append(f"| {name} | {r['notifications']} | {r['duplicates']} ({r['lone_duplicates']}) | "
                  f"{100 * r['duplicate_share']:.2f} % | {r['lost_groups']} of {r['lone_groups_notified']} | "
                  f"{r['lost_alerts']} of {r['lone_alerts_notified']}{back} | {r['lone_notifications']} | {cpu} |")
    md.append("")
    md.append(f"alertd replicas ready before merging: {res['alertd_ready_before_merge']} of "
              f"{len(res['alertd_first_ready'])} restarts")
    return "\n".join(md) + "\n"


def rescore(work_dir):
    """Scores a finished run again from its notifications.jsonl, keeping its other figures."""
    res = json.load(open(os.path.join(work_dir, "summary.json")))
    got = [(r["wall"], r["path"], json.dumps(r["payload"]))
           for r in map(json.loads, open(os.path.join(work_dir, "notifications.jsonl")))]
    cpu = {k: res[k].get("cpu_per_replica_over_lone") for k in ("alertmanager", "alertd") if k in res}
    res.update(scores(got, svm.dur_ms("4h") / 1000 / res["speed"]))
    for k, v in cpu.items():
        if v is not None:
            res[k]["cpu_per_replica_over_lone"] = v
    json.dump(res, open(os.path.join(work_dir, "summary.json"), "w"), indent=1)
    open(os.path.join(work_dir, "summary.md"), "w").write(table(res))
    print(table(res))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--storm")
    ap.add_argument("--minutes", type=float, default=42, help="wall minutes of replay")
    ap.add_argument("--speed", type=float, default=30)
    ap.add_argument("--kill-every", type=float, default=120, help="wall seconds between kills (0: none)")
    ap.add_argument("--isolate-at", type=float, default=0.5,
                    help="share of the run at which one replica is stopped for 120 s (negative: never)")
    ap.add_argument("--peer-timeout", type=float, default=2, help="seconds, both clusters (not scaled)")
    ap.add_argument("--tail", type=float, default=60, help="wall seconds after the last post")
    ap.add_argument("--seed", type=int, default=27)
    ap.add_argument("--argus-bin", default=os.path.join(ROOT, "target", "release", "argus"))
    ap.add_argument("--am-bin", default=svm.shutil.which("prometheus-alertmanager") or "prometheus-alertmanager")
    ap.add_argument("--alertd-config", default=os.path.join(ROOT, "config", "alertd.yml"))
    ap.add_argument("--work-dir", default="/tmp/argus-failover")
    ap.add_argument("--rescore", metavar="WORK_DIR", help="score a finished run's notifications again, and stop")
    a = ap.parse_args()
    if a.rescore:
        return rescore(a.rescore)
    rng = random.Random(a.seed)
    svm.shutil.rmtree(a.work_dir, ignore_errors=True)
    os.makedirs(a.work_dir)
    dirs = sorted(svm.glob.glob(os.path.join(a.shared, "data", "smd", "machine-*")))
    storm = a.storm or os.path.join(a.work_dir, "storm.jsonl")
    if not a.storm:
        subprocess.run([sys.executable, os.path.join(HERE, "lib", "make_storm.py"), storm, *dirs], check=True)
    lines = [json.loads(l) for l in open(storm)]
    lines.sort(key=lambda e: svm.ts(e["at"]))
    T0 = svm.ts(lines[0]["at"])
    horizon = T0 + a.minutes * 60 * a.speed
    lines = [e for e in lines if svm.ts(e["at"]) < horizon]
    svm.log(f"{len(lines)} posts, {sum(len(e['alerts']) for e in lines)} alerts, {a.minutes} wall minutes at {a.speed}x")

    rec = svm.Receiver()
    am = am_servers(a.work_dir, a.speed, rec.port, a.am_bin, a.peer_timeout, 3)
    am1 = am_servers(a.work_dir, a.speed, rec.port, a.am_bin, a.peer_timeout, 1)
    ad = alertd_servers(a.work_dir, a.speed, rec.port, a.argus_bin, a.alertd_config, a.peer_timeout, 3)
    ad1 = alertd_servers(a.work_dir, a.speed, rec.port, a.argus_bin, a.alertd_config, a.peer_timeout, 1)
    # A second lone server of each, fed the same stream: how far two identical servers already differ
    # (timers a few ms apart batch alerts differently), the floor under the cluster's differences.
    am2 = am_servers(a.work_dir, a.speed, rec.port, a.am_bin, a.peer_timeout, 1, "control")
    ad2 = alertd_servers(a.work_dir, a.speed, rec.port, a.argus_bin, a.alertd_config, a.peer_timeout, 1, "control")
    everything = am + am1 + ad + ad1 + am2 + ad2
    events, readies = [], []
    try:
        for s in everything:
            s.wait_ready()
        senders = [Sender(s) for s in everything]
        for t in senders:
            t.start()
        W0 = float(int(time.time()) + 3)
        wall = lambda s: W0 + (s - T0) / a.speed
        end_wall = W0 + a.minutes * 60
        kills = []
        t = W0 + a.kill_every
        while a.kill_every > 0 and t < end_wall - 30:
            kills.append(t)
            t += a.kill_every
        isolate = W0 + a.isolate_at * a.minutes * 60 + a.kill_every / 2

        def both(i, action, event=None):
            """Applies `action` (kill, restart, stop, resume) to replica i of both clusters."""
            for s in (am[i], ad[i]):
                getattr(s, action)()
            if event:
                events.append({"at": round(time.time() - W0, 1), event: i})

        def chaos():
            for k in kills:
                time.sleep(max(0, k - time.time()))
                i = rng.randrange(3)
                both(i, "kill", "kill")
                time.sleep(5)
                both(i, "restart")
                readies.append({"replica": i, "first_ready": first_ready(ad[i])})
            svm.log("kills done")

        def isolation():
            time.sleep(max(0, isolate - time.time()))
            i = rng.randrange(3)
            both(i, "stop", "stop")
            time.sleep(120)
            both(i, "resume", "resume")

        threading.Thread(target=chaos, daemon=True).start()
        if a.isolate_at >= 0:
            threading.Thread(target=isolation, daemon=True).start()
        for n, e in enumerate(lines):
            delay = wall(svm.ts(e["at"])) - time.time()
            if delay > 0:
                time.sleep(delay)
            alerts = []
            for al in e["alerts"]:
                al = dict(al)
                al["startsAt"] = svm.iso_us(wall(svm.ts(al["startsAt"])))
                al["endsAt"] = svm.iso_us(wall(svm.ts(al["endsAt"])))
                alerts.append(al)
            body = json.dumps(alerts).encode()
            for t in senders:
                t.q.put(body)
            if n % 200 == 0:
                svm.log(f"{n}/{len(lines)}, notifications so far {len(rec.got)}, events {len(events)}")
        time.sleep(max(0, end_wall - time.time()) + a.tail)
    finally:
        for s in everything:
            s.end()
        rec.srv.shutdown()

    with rec.lock:
        got = list(rec.got)
    with open(os.path.join(a.work_dir, "notifications.jsonl"), "w") as f:
        for w, p, body in got:
            f.write(json.dumps({"wall": round(w - W0, 3), "path": p, "payload": json.loads(body)}) + "\n")
    repeat_s = svm.dur_ms("4h") / 1000 / a.speed
    res = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "minutes": a.minutes, "speed": a.speed, "peer_timeout_s": a.peer_timeout, "seed": a.seed,
        "posts": len(lines), "alerts": sum(len(e["alerts"]) for e in lines),
        "kills": sum(1 for e in events if "kill" in e), "events": events,
        "alertd_first_ready": readies,
        "alertd_ready_before_merge": sum(1 for r in readies
                                         if not r["first_ready"] or not ("merged" in r["first_ready"] or "settle timeout" in r["first_ready"])),
        **scores(got, repeat_s),
        "post_statuses": {t.server.name: dict(t.status) for t in senders},
        "cpu_s": {s.name: round(s.cpu, 2) for s in everything},
    }
    for name, cluster, lone in (("alertmanager", am, am1), ("alertd", ad, ad1)):
        per_replica = sum(s.cpu for s in cluster) / len(cluster)
        res[name]["cpu_per_replica_over_lone"] = round(per_replica / max(lone[0].cpu, 1e-9), 3)
    json.dump(res, open(os.path.join(a.work_dir, "summary.json"), "w"), indent=1)
    open(os.path.join(a.work_dir, "summary.md"), "w").write(table(res))
    print(table(res))


if __name__ == "__main__":
    main()
