#!/usr/bin/python3
"""Receiver outages: every notification is delivered once after the receiver comes back.

    /usr/bin/python3 bench/notify_outage.py --argus-bin target/debug/argus --mode webhook [--outage 600]
    /usr/bin/python3 bench/notify_outage.py --argus-bin target/debug/argus --mode smtp [--outage 120]

`argus serve` runs alertd with one receiver: a webhook (`--mode webhook`: nothing listens on its port
while it is down) or an SMTP server (`--mode smtp`, aiosmtpd from python3-aiosmtpd: it answers every
RCPT with 451 while down, then accepts). During the outage an alert of its own group is posted every
--every seconds; after it the receiver comes up and the script waits until every group has been
delivered, then --settle seconds more for any repeat. Prints the counts; exit 1 if a group is missing
or delivered twice (webhook: by Idempotency-Key and group; smtp: by Message-ID and group).
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lib.server import free_port  # noqa: E402


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rfc3339(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


class Seen:
    """Deliveries as received: (key, group) pairs, and the moment of each."""

    def __init__(self):
        self.lock = threading.Lock()
        self.items = []

    def add(self, key, group):
        with self.lock:
            self.items.append((key, group, time.time()))

    def snapshot(self):
        with self.lock:
            return list(self.items)


def webhook_receiver(port, seen):
    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            msg = json.loads(body)
            for a in msg["alerts"]:
                seen.add(self.headers.get("Idempotency-Key", ""), a["labels"]["n"])
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", port), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def smtp_server(port, seen, state):
    from aiosmtpd.controller import Controller

    class Handler:
        async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
            if state["down"]:
                state["refused"] += 1
                return "451 4.3.0 mailbox busy, try again later"
            envelope.rcpt_tos.append(address)
            return "250 OK"

        async def handle_DATA(self, server, session, envelope):
            text = envelope.content.decode("utf-8", "replace")
            mid = next((l.split(":", 1)[1].strip() for l in text.splitlines()
                        if l.lower().startswith("message-id:")), "")
            groups = sorted({w.split("=", 1)[1].strip('"') for w in text.replace("\n", " ").split()
                             if w.startswith("n=") and w[2:].strip('"').startswith("g")})
            for g in groups or ["?"]:
                seen.add(mid, g)
            return "250 Message accepted"

    c = Controller(Handler(), hostname="127.0.0.1", port=port)
    c.start()
    return c


def post_alert(base, n):
    now = time.time()
    body = json.dumps([{"labels": {"alertname": "ReceiverOutage", "n": n},
                        "annotations": {"summary": f"alert {n}"},
                        "startsAt": rfc3339(now), "endsAt": rfc3339(now + 7200)}]).encode()
    req = urllib.request.Request(base + "/api/v2/alerts", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200, r.status


def metric(base, name):
    with urllib.request.urlopen(base + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(float(l.rsplit(" ", 1)[1]) for l in text.splitlines() if l.startswith(name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--argus-bin", required=True)
    ap.add_argument("--mode", choices=["webhook", "smtp"], required=True)
    ap.add_argument("--outage", type=float, default=600)
    ap.add_argument("--every", type=float, default=30)
    ap.add_argument("--wait", type=float, default=300, help="longest wait for delivery after recovery")
    ap.add_argument("--settle", type=float, default=30)
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="notify-outage-")
    rport, port = free_port(), free_port()
    if a.mode == "webhook":
        receiver = f"  webhook_configs:\n  - url: http://127.0.0.1:{rport}/hook\n"
    else:
        receiver = (f"  email_configs:\n  - to: ops@example.com\n    from: argus@example.com\n"
                    f"    smarthost: 127.0.0.1:{rport}\n    require_tls: false\n    send_resolved: false\n")
    with open(os.path.join(tmp, "alertd.yml"), "w") as f:
        f.write("route:\n  receiver: r\n  group_by: [n]\n  group_wait: 0s\n  group_interval: 10s\n"
                f"  repeat_interval: 24h\nreceivers:\n- name: r\n{receiver}")
    with open(os.path.join(tmp, "argus.toml"), "w") as f:
        f.write(f'[alertd]\nconfig_file = "{tmp}/alertd.yml"\n')
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ, RUST_LOG="warn")
    logf = open(os.path.join(tmp, "argus.log"), "w")
    proc = subprocess.Popen([a.argus_bin, "serve", "--no-collector", "--listen", f"127.0.0.1:{port}",
                             "--data-dir", os.path.join(tmp, "data"), "--config", os.path.join(tmp, "argus.toml")],
                            env=env, stdout=subprocess.DEVNULL, stderr=logf)
    for _ in range(300):
        try:
            urllib.request.urlopen(base + "/-/healthy", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    seen = Seen()
    state = {"down": True, "refused": 0}
    smtp = smtp_server(rport, seen, state) if a.mode == "smtp" else None
    try:
        log(f"{a.mode} receiver down for {a.outage:.0f} s; an alert group every {a.every:.0f} s")
        t0 = time.time()
        groups = []
        while time.time() - t0 < a.outage:
            g = f"g{len(groups):03d}"
            post_alert(base, g)
            groups.append(g)
            time.sleep(min(a.every, max(0, a.outage - (time.time() - t0))))
        retried = metric(base, 'argus_alertd_notifications_total{receiver="r",integration=')
        log(f"{len(groups)} alert groups posted; {len(seen.snapshot())} delivered during the outage; "
            f"send attempts so far {retried:.0f}")
        up = time.time()
        if a.mode == "webhook":
            web = webhook_receiver(rport, seen)
        else:
            state["down"] = False
        log("receiver up")
        while time.time() - up < a.wait:
            got = {g for _, g, _ in seen.snapshot()}
            if set(groups) <= got:
                break
            time.sleep(0.5)
        all_in = time.time() - up
        time.sleep(a.settle)
        items = seen.snapshot()
        by_group = {}
        for key, g, _ in items:
            by_group.setdefault(g, []).append(key)
        missing = [g for g in groups if g not in by_group]
        twice = {g: k for g, k in by_group.items() if len(k) > 1}
        during = sum(1 for _, _, t in items if t < up)
        print(json.dumps({
            "mode": a.mode, "outage_s": a.outage, "groups": len(groups), "delivered": len(items),
            "delivered_during_outage": during, "missing": missing, "repeated": twice,
            "all_delivered_after_s": round(all_in, 1),
            "distinct_keys": len({k for k, _, _ in items}),
            "smtp_451_answers": state["refused"] if a.mode == "smtp" else None,
            "alertd_attempts": {o: metric(base, f'argus_alertd_notifications_total{{receiver="r",integration="{"webhook" if a.mode == "webhook" else "email"}",outcome="{o}"}}')
                                for o in ("delivered", "retried", "failed")},
        }, indent=1))
        ok = not missing and not twice and during == 0
        if a.mode == "webhook":
            web.shutdown()
        return 0 if ok else 1
    finally:
        if smtp:
            smtp.stop()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
