#!/usr/bin/env python3
"""alertd against Alertmanager on the storm (issue 7, second goal).

usage: python3 bench/storm_vs_alertmanager.py [--shared ../shared] [--hours 24] [--speed 60]
           [--argus-bin target/release/argus] [--servers am,alertd] [--work-dir /tmp/argus-storm-vs-am]

1. Builds the storm with make_storm.py (or reuses --storm FILE) and keeps its first --hours hours
   (`storm-24h.jsonl`, the stream's own clock).
2. Starts on loopback: a webhook receiver (this script, recording each notification's arrival time),
   Alertmanager (`prometheus-alertmanager`) with group_by [host], group_wait 30s, group_interval 5m,
   repeat_interval 4h, and `argus serve --no-collector` with config/alertd.yml; every duration of both
   configurations is divided by --speed (alertd's by rewriting each duration in its YAML), and both webhook
   URLs point at the receiver. send_resolved is false for both, as in config/alertd.yml.
3. Replays the stream: stream time s is sent at wall time W0 + (s - T0) / speed, and every startsAt/endsAt is
   rewritten the same way, so a firing alert's endsAt (4 steps ahead) scales too. Each line is POSTed to
   /api/v2/alerts of every server (order alternating per line). Then waits --tail-min stream minutes.
4. Maps every notification back to the stream's clock (its arrival time and its alerts' startsAt/endsAt) and
   writes out-SERVER.jsonl in the form score_storm.py reads; notifications that carry no storm alert (alertd's
   built-in Watchdog inside `argus serve`) are counted apart and left out.
5. Also runs `argus alertd replay` on storm-24h.jsonl in virtual time (out-alertd-virtual.jsonl): alertd's
   exact timers, no wall-clock scaling, the authoritative alertd figure.
6. Scores each with score_storm.py and prints a Markdown table (also summary.md / summary.json in --work-dir).

At 60x, 24 h of stream take 24 minutes of wall time. Python 3 standard library only.
"""
import argparse, glob, http.client, http.server, json, os, re, shutil, socket, subprocess, sys, threading, time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def ts(s):
    """RFC3339 (any fraction length) -> epoch seconds."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", s)
    if not m:
        raise ValueError(s)
    base = datetime.fromisoformat(m.group(1) + ("+00:00" if m.group(3) == "Z" else m.group(3))).timestamp()
    return base + (float("0" + m.group(2)) if m.group(2) else 0.0)


def iso_s(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_us(t):
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


def wait_ready(port, paths, proc, timeout=60):
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        for p in paths:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2); c.request("GET", p)
                if c.getresponse().status == 200:
                    return
            except OSError:
                pass
        time.sleep(0.2)
    raise RuntimeError(f"not ready on port {port}")


# --- durations -------------------------------------------------------------------------------------------------
UNITS = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000), ("w", 7 * 86_400_000)]


def dur_ms(s):
    total = 0; rest = s
    for part in re.findall(r"(\d+)(ms|s|m|h|d|w)", s):
        total += int(part[0]) * dict(UNITS)[part[1]]
        rest = rest.replace(part[0] + part[1], "", 1)
    if rest.strip():
        raise ValueError(s)
    return total


def fmt_ms(ms):
    ms = max(1, int(round(ms)))
    return f"{ms // 1000}s" if ms % 1000 == 0 else f"{ms}ms"


DUR_RE = re.compile(r"^(\s*-?\s*[A-Za-z_]+:\s*)((?:\d+(?:ms|s|m|h|d|w))+)(\s*(?:#.*)?)$")


def scale_yaml(text, speed):
    """Divides every `key: DURATION` value of a YAML file by speed; returns (text, [(key, old, new)])."""
    out = []; changed = []
    for line in text.splitlines():
        m = DUR_RE.match(line)
        if m:
            new = fmt_ms(dur_ms(m.group(2)) / speed)
            changed.append((m.group(1).strip().rstrip(":"), m.group(2), new))
            line = m.group(1) + new + m.group(3)
        out.append(line)
    return "\n".join(out) + "\n", changed


# --- receiver --------------------------------------------------------------------------------------------------
class Receiver:
    def __init__(self):
        self.got = []  # (wall time, path, body)
        self.lock = threading.Lock()
        rec = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                t = time.time()
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with rec.lock:
                    rec.got.append((t, self.path, body))
                self.send_response(200); self.send_header("Content-Length", "0"); self.end_headers()

            def log_message(self, *a):
                pass

        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.srv.server_address[1]
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()


# --- servers ---------------------------------------------------------------------------------------------------
def start_am(work, speed, rport, am_bin, prefix=()):
    d = os.path.join(work, "am"); shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
    f = lambda s: fmt_ms(dur_ms(s) / speed)
    cfg = f"""global:
  resolve_timeout: {f('5m')}
route:
  receiver: hook
  group_by: [host]
  group_wait: {f('30s')}
  group_interval: {f('5m')}
  repeat_interval: {f('4h')}
receivers:
  - name: hook
    webhook_configs:
      - url: http://127.0.0.1:{rport}/am
        send_resolved: false
"""
    open(os.path.join(d, "alertmanager.yml"), "w").write(cfg)
    port = free_port()
    p = subprocess.Popen([*prefix, am_bin, "--config.file=" + os.path.join(d, "alertmanager.yml"),
                          "--storage.path=" + os.path.join(d, "data"), f"--web.listen-address=127.0.0.1:{port}",
                          "--cluster.listen-address=", "--log.level=warn"],
                         stdout=open(os.path.join(d, "log"), "w"), stderr=subprocess.STDOUT)
    wait_ready(port, ["/-/ready"], p)
    return p, port, cfg


def start_alertd(work, speed, rport, argus_bin, alertd_yml, prefix=()):
    d = os.path.join(work, "alertd"); shutil.rmtree(d, ignore_errors=True); os.makedirs(d)
    text, changed = scale_yaml(open(alertd_yml).read(), speed)
    text, n = re.subn(r"url:\s*http://127\.0\.0\.1:\d+/\S*", f"url: http://127.0.0.1:{rport}/alertd", text)
    if n != 1:
        raise RuntimeError(f"expected one webhook url in {alertd_yml}, found {n}")
    open(os.path.join(d, "alertd.yml"), "w").write(text)
    port = free_port()
    open(os.path.join(d, "argus.toml"), "w").write(
        f'[server]\nlisten = "127.0.0.1:{port}"\n[store]\ndata_dir = "{d}/data"\n'
        f'[alertd]\nconfig_file = "{d}/alertd.yml"\n')
    p = subprocess.Popen([*prefix, argus_bin, "serve", "--config", os.path.join(d, "argus.toml"), "--no-collector"],
                         stdout=open(os.path.join(d, "log"), "w"), stderr=subprocess.STDOUT)
    wait_ready(port, ["/-/ready", "/-/healthy"], p)
    return p, port, changed


def post(conn_box, port, body):
    for attempt in range(3):
        try:
            if conn_box[0] is None:
                conn_box[0] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c = conn_box[0]
            c.request("POST", "/api/v2/alerts", body=body, headers={"Content-Type": "application/json"})
            r = c.getresponse(); r.read()
            return r.status
        except (OSError, http.client.HTTPException):
            conn_box[0] = None
    return -1


# --- main ------------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=os.path.join(ROOT, "..", "shared"))
    ap.add_argument("--storm", help="reuse a storm.jsonl made by make_storm.py")
    ap.add_argument("--hours", type=float, default=24)
    ap.add_argument("--speed", type=float, default=60)
    ap.add_argument("--tail-min", type=float, default=20, help="stream minutes to wait after the last line")
    ap.add_argument("--servers", default="am,alertd")
    ap.add_argument("--argus-bin", default=os.path.join(ROOT, "target", "release", "argus"))
    ap.add_argument("--am-bin", default=shutil.which("prometheus-alertmanager") or "prometheus-alertmanager")
    ap.add_argument("--alertd-config", default=os.path.join(ROOT, "config", "alertd.yml"))
    ap.add_argument("--work-dir", default="/tmp/argus-storm-vs-am")
    a = ap.parse_args()
    servers = [s for s in a.servers.split(",") if s]
    os.makedirs(a.work_dir, exist_ok=True)
    dirs = sorted(glob.glob(os.path.join(a.shared, "data", "smd", "machine-*")))
    tools = os.path.join(HERE, "lib")
    storm = a.storm or os.path.join(a.work_dir, "storm.jsonl")
    if not a.storm:
        subprocess.run([sys.executable, os.path.join(tools, "make_storm.py"), storm, *dirs], check=True)

    lines = [json.loads(l) for l in open(storm)]
    T0 = min(ts(e["at"]) for e in lines)
    lines = [e for e in lines if ts(e["at"]) < T0 + a.hours * 3600]
    lines.sort(key=lambda e: ts(e["at"]))
    cut = os.path.join(a.work_dir, "storm-cut.jsonl")
    with open(cut, "w") as f:
        for e in lines:
            f.write(json.dumps(e) + "\n")
    n_alerts = sum(len(e["alerts"]) for e in lines)
    log(f"stream: {len(lines)} posts, {n_alerts} alerts in the first {a.hours} h from {iso_s(T0)}")

    meta = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "hours": a.hours, "speed": a.speed,
            "posts": len(lines), "alerts": n_alerts, "servers": servers}
    rec = Receiver(); procs = {}; ports = {}
    try:
        if "am" in servers:
            p, port, cfg = start_am(a.work_dir, a.speed, rec.port, a.am_bin)
            procs["am"], ports["am"] = p, port
            meta["am_config"] = cfg
            meta["am_version"] = subprocess.run([a.am_bin, "--version"], capture_output=True, text=True).stderr.split("\n")[0] \
                or subprocess.run([a.am_bin, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
            log(f"alertmanager on {port}: {meta['am_version']}")
        if "alertd" in servers:
            p, port, changed = start_alertd(a.work_dir, a.speed, rec.port, a.argus_bin, a.alertd_config)
            procs["alertd"], ports["alertd"] = p, port
            meta["alertd_scaled"] = changed
            log(f"argus serve on {port}; scaled: " + ", ".join(f"{k} {o}->{n}" for k, o, n in changed))

        W0 = float(int(time.time()) + 3)
        wall = lambda s: W0 + (s - T0) / a.speed
        back = lambda w: T0 + (w - W0) * a.speed
        meta["W0"], meta["T0"] = W0, T0
        conns = {s: [None] for s in servers}
        statuses = {s: {} for s in servers}
        lags = []
        for i, e in enumerate(lines):
            s = ts(e["at"])
            delay = wall(s) - time.time()
            if delay > 0:
                time.sleep(delay)
            lags.append(time.time() - wall(s))
            alerts = []
            for al in e["alerts"]:
                al = dict(al)
                al["startsAt"] = iso_us(wall(ts(al["startsAt"])))
                al["endsAt"] = iso_us(wall(ts(al["endsAt"])))
                alerts.append(al)
            body = json.dumps(alerts).encode()
            order = servers if i % 2 == 0 else servers[::-1]
            for srv in order:
                st = post(conns[srv], ports[srv], body)
                statuses[srv][st] = statuses[srv].get(st, 0) + 1
            if i % 100 == 0:
                log(f"{i}/{len(lines)} at stream {e['at']}, lag {lags[-1]*1000:.0f} ms, notifications so far {len(rec.got)}")
        end = wall(ts(lines[-1]["at"]) + a.tail_min * 60)
        while time.time() < end:
            time.sleep(0.5)
        lags.sort()
        meta["send_lag_ms"] = {"median": lags[len(lags) // 2] * 1000, "max": lags[-1] * 1000}
        meta["post_statuses"] = {k: {str(c): n for c, n in v.items()} for k, v in statuses.items()}
        for srv, p in procs.items():
            meta.setdefault("exit", {})[srv] = None if p.poll() is None else p.returncode
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        rec.srv.shutdown()

    # notifications back to the stream's clock
    storm_keys = set()
    for e in lines:
        for al in e["alerts"]:
            storm_keys.add((al["labels"].get("host"), al["labels"].get("metric")))
    with rec.lock:
        got = list(rec.got)
    outs = {}
    for srv in servers:
        path = os.path.join(a.work_dir, f"out-{srv}.jsonl"); kept = other = 0
        with open(path, "w") as f, open(os.path.join(a.work_dir, f"raw-{srv}.jsonl"), "w") as raw:
            for w, p, body in got:
                if p != "/" + srv:
                    continue
                payload = json.loads(body)
                raw.write(json.dumps({"wall": w, "payload": payload}) + "\n")
                als = payload.get("alerts", [])
                if not any((x.get("labels", {}).get("host"), x.get("labels", {}).get("metric")) in storm_keys for x in als):
                    other += 1
                    continue
                for x in als:
                    for k in ("startsAt", "endsAt"):
                        if x.get(k) and not x[k].startswith("0001"):
                            x[k] = iso_s(round(back(ts(x[k]))))
                f.write(json.dumps({"at": iso_s(round(back(w))), "receiver": srv, "payload": payload}) + "\n")
                kept += 1
        outs[srv] = path
        meta.setdefault("notifications_other", {})[srv] = other
        log(f"{srv}: {kept} storm notifications, {other} others (e.g. Watchdog) left out")

    # alertd in virtual time, same 24 h
    if os.path.exists(a.argus_bin):
        vout = os.path.join(a.work_dir, "out-alertd-virtual.jsonl")
        r = subprocess.run([a.argus_bin, "alertd", "replay", "--config", a.alertd_config, "--input", cut,
                            "--output", vout], capture_output=True, text=True)
        log("alertd replay:", r.returncode, r.stderr.strip()[-300:])
        if r.returncode == 0:
            outs["alertd-virtual"] = vout

    rows = {}
    for name, path in outs.items():
        r = subprocess.run([sys.executable, os.path.join(tools, "score_storm.py"), cut, path, *dirs],
                           capture_output=True, text=True)
        rows[name] = r.stdout.strip()
        log(f"--- {name}\n{r.stdout}{r.stderr}")
    meta["scores"] = rows
    json.dump(meta, open(os.path.join(a.work_dir, "summary.json"), "w"), indent=1)
    md = [f"storm vs Alertmanager, {meta['date']}: first {a.hours} h of the storm ({len(lines)} posts, {n_alerts} alerts), "
          f"{a.speed}x; send lag median {meta['send_lag_ms']['median']:.0f} ms, max {meta['send_lag_ms']['max']:.0f} ms", ""]
    for name, text in rows.items():
        md += [f"### {name}", "```", text, "```", ""]
    open(os.path.join(a.work_dir, "summary.md"), "w").write("\n".join(md))
    print("\n".join(md))


if __name__ == "__main__":
    main()
