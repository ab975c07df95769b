"""Processes a bench starts and watches over loopback HTTP: logging, GETs, /metrics, /proc accounting."""
import http.client
import os
import signal
import subprocess
import sys
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def get(port, path, timeout=10):
    """One GET on a fresh connection: (status, body bytes). OSError when nothing answers."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def parse_metrics(text):
    """Prometheus text exposition as {name{labels}: value} (comments and unreadable values skipped)."""
    out = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        key, _, value = line.rpartition(" ")
        try:
            out[key.replace(", ", ",")] = float(value)
        except ValueError:
            pass
    return out


def scrape(port, timeout=10):
    """A server's /metrics parsed, or None when it does not answer 200."""
    try:
        status, body = get(port, "/metrics", timeout)
    except OSError:
        return None
    return parse_metrics(body.decode(errors="replace")) if status == 200 else None


def total(m, name):
    """The sum of every series of `name` in a parsed /metrics."""
    return sum(v for k, v in (m or {}).items() if k == name or k.startswith(name + "{"))


def cpu_seconds(pid):
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_kib(pid, key):
    """A kB figure of /proc/PID/status (VmRSS, VmHWM), 0 when absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def terminate(p, timeout):
    """SIGTERM to a Popen, SIGKILL if it has not exited within `timeout` seconds; waits for it."""
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


class Proc:
    """A server process with its log in `work`/NAME.log, ready when `ready` answers 200 on `port`."""

    def __init__(self, name, argv, port, ready, work):
        self.name, self.port, self.ready = name, port, ready
        self.log = open(os.path.join(work, f"{name}.log"), "wb")
        self.p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_ready(self, timeout=60):
        end = time.time() + timeout
        while time.time() < end:
            if self.p.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.p.returncode}; see {self.log.name}")
            try:
                if get(self.port, self.ready, 2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not ready after {timeout} s; see {self.log.name}")

    def cpu(self):
        return cpu_seconds(self.p.pid)

    def kib(self, key):
        return status_kib(self.p.pid, key)

    def stop(self, timeout=60):
        terminate(self.p, timeout)
        self.log.close()
