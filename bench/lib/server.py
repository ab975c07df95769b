"""Peer servers started on loopback: process control, /proc accounting, data directory size."""
import http.client
import os
import re
import shlex
import socket
import subprocess
import time

from . import procs

CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Spec:
    """How to start one kind of server and how to tell that it is ready and settled."""

    def __init__(self, name, label, argv, ready_paths, busy_metrics=(), force_merge=None, on_disk=None):
        self.name = name              # short key: vm, argus
        self.label = label            # for tables
        self.argv = argv              # fn(port, data_dir) -> argv list
        self.ready_paths = ready_paths
        self.busy_metrics = busy_metrics  # /metrics names whose sum must be 0 when settled
        self.force_merge = force_merge    # path that starts a forced merge, or None
        self.on_disk = on_disk            # fn(data_dir, metrics dict) -> True when all it holds is on disk


def vm_spec(binary, extra):
    return Spec(
        "vm", "VictoriaMetrics",
        lambda port, d: [binary, f"-storageDataPath={d}", f"-httpListenAddr=127.0.0.1:{port}",
                         "-retentionPeriod=100y", "-search.disableCache", "-loggerLevel=WARN"] + shlex.split(extra),
        ready_paths=["/health"],
        busy_metrics=("vm_active_merges", "vm_active_force_merges", "vm_pending_rows"),
        # An empty partition_prefix matches every partition; the request returns at once and the
        # merge runs in the background (vm_active_force_merges counts it).
        force_merge="/internal/force_merge?partition_prefix=",
        on_disk=vm_on_disk,
    )


# ROWS_BLOCKS_ID (indexdb) or ROWS_BLOCKS_MINTIME_MAXTIME_ID (data)
_PART = re.compile(r"^(\d+)_(\d+)_(?:[\d.]+_[\d.]+_)?[0-9A-F]{16}$")


def vm_on_disk(data_dir, metrics):
    """VictoriaMetrics 1.79 answers /internal/force_flush with the rows searchable in memory and writes the
    part to disk up to ~5 s later. A part directory's name starts with ROWS_BLOCKS_, so everything is on disk when
    the part directories add up to vm_parts and vm_rows (storage and indexdb) and nothing else remains."""
    def parts(dirs):
        n = rows = 0
        for d in dirs:
            for name in os.listdir(d) if os.path.isdir(d) else ():
                m = _PART.match(name)
                if m:
                    n += 1
                    rows += int(m.group(1))
        return n, rows
    data = [os.path.join(data_dir, "data", kind, p) for kind in ("small", "big")
            for p in (os.listdir(os.path.join(data_dir, "data", kind))
                      if os.path.isdir(os.path.join(data_dir, "data", kind)) else ()) if p != "snapshots"]
    idx = [os.path.join(data_dir, "indexdb", g) for g in os.listdir(os.path.join(data_dir, "indexdb"))
           if g != "snapshots"] if os.path.isdir(os.path.join(data_dir, "indexdb")) else []
    want_data = (metrics.get('vm_parts{type="storage/small"}', 0) + metrics.get('vm_parts{type="storage/big"}', 0),
                 metrics.get('vm_rows{type="storage/small"}', 0) + metrics.get('vm_rows{type="storage/big"}', 0))
    want_idx = (metrics.get('vm_parts{type="indexdb"}', 0), metrics.get('vm_rows{type="indexdb"}', 0))
    return parts(data) == want_data and parts(idx) == want_idx


def argus_spec(binary, extra):
    return Spec(
        "argus", "Argus",
        lambda port, d: [binary, "serve", "--listen", f"127.0.0.1:{port}", "--data-dir", d,
                         "--no-collector"] + shlex.split(extra),
        ready_paths=["/-/ready", "/-/healthy"],
        force_merge="/internal/force_merge",  # optional: a 404 means "no such thing" and is reported n/a
    )


def prom_spec(binary, config_file, extra):
    """Prometheus with an empty scrape config: only what sits in its data directory (backfilled blocks, or
    what remote write sends with --web.enable-remote-write-receiver in `extra`)."""
    return Spec(
        "prom", "Prometheus",
        lambda port, d: [binary, f"--config.file={config_file}", f"--storage.tsdb.path={d}",
                         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=3650d",
                         "--log.level=warn"] + shlex.split(extra),
        ready_paths=["/-/ready"],
    )


def version_of(argv0, args):
    """The binary's own version line, plus the Debian package version when dpkg owns the file."""
    text = ""
    try:
        out = subprocess.run([argv0] + args, capture_output=True, text=True, timeout=10)
        lines = [l for l in (out.stdout + out.stderr).strip().splitlines() if l.strip()]
        text = lines[0][:120] if lines else ""
    except (OSError, subprocess.TimeoutExpired) as e:
        text = f"? ({e})"
    try:
        owner = subprocess.run(["dpkg-query", "-S", os.path.realpath(argv0)], capture_output=True, text=True,
                               timeout=10).stdout.split(":")[0].strip()
        if owner:
            v = subprocess.run(["dpkg-query", "-W", "-f=${Version}", owner], capture_output=True, text=True,
                               timeout=10).stdout.strip()
            text = (text + " " if text else "") + f"(Debian {owner} {v})"
    except OSError:
        pass
    return text or "?"


class Server:
    def __init__(self, spec, data_dir, log_path):
        self.spec = spec
        self.data_dir = data_dir
        self.port = free_port()
        self.argv = spec.argv(self.port, data_dir)
        self.log_path = log_path
        self.proc = None

    def start(self, timeout=60):
        os.makedirs(self.data_dir, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.spec.name} exited with {self.proc.returncode} at start; "
                                   f"see {self.log_path}")
            statuses = []
            for path in self.spec.ready_paths:
                try:
                    statuses.append(self.request("GET", path, timeout=2)[0])
                except OSError:
                    break
            # 200 on a readiness path: ready. 404 on all of them: it listens but has no such endpoint.
            if 200 in statuses or (statuses and all(s == 404 for s in statuses)
                                   and len(statuses) == len(self.spec.ready_paths)):
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.spec.name} not ready after {timeout}s on port {self.port}; see {self.log_path}")

    def stop(self, timeout=30):
        if self.proc:
            procs.terminate(self.proc, timeout)
        if getattr(self, "_log", None):
            self._log.close()

    def request(self, method, path, body=None, headers=None, timeout=300):
        """One request on a fresh connection: (status, headers, body bytes)."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    # --- /proc accounting -------------------------------------------------------------------------

    def cpu_seconds(self):
        """utime + stime of the server process (all its threads), in seconds."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            stat = f.read()
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "; fields[0] is state (field 3)
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # fields 14, 15 of proc(5)

    def status_kib(self, key):
        """A kB figure from /proc/PID/status (VmHWM: peak RSS, VmRSS: current RSS)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return None

    def metrics(self):
        """/metrics as {name{labels}: value}, or None when the server has none."""
        try:
            status, _, body = self.request("GET", "/metrics", timeout=10)
        except OSError:
            return None
        if status != 200:
            return None
        return procs.parse_metrics(body.decode(errors="replace"))

    def quiet(self):
        """True when the server reports no background work (busy metrics 0, all data on disk), or when it
        has nothing to report (then only the data directory's size is watched)."""
        if not self.spec.busy_metrics and not self.spec.on_disk:
            return True
        m = self.metrics()
        if m is None:
            return True
        busy = sum(v for k, v in m.items() if k.split("{")[0] in self.spec.busy_metrics)
        if busy > 0:
            return False
        return self.spec.on_disk(self.data_dir, m) if self.spec.on_disk else True

    def settle(self, stable_s=3.0, timeout=300, poll=0.5, max_cpu=0.05):
        """Wait until background work is done: quiet(), the data directory's apparent size unchanged and the
        process using at most max_cpu of one core, all for stable_s. The CPU condition catches work no
        metric reports (a server's analyzer training on what was just loaded, caches being filled), which
        would otherwise run beside the timed queries. Returns seconds waited (timeout when it never
        settled)."""
        started = time.monotonic()
        last, since, cpu_since = None, time.monotonic(), self.cpu_seconds()
        while time.monotonic() - started < timeout:
            size = dir_size(self.data_dir)[0]
            quiet = self.quiet()
            now, cpu = time.monotonic(), self.cpu_seconds()
            # One clock tick of slack: /proc counts CPU time in whole ticks.
            busy = cpu - cpu_since > max_cpu * (now - since) + 1.0 / CLK_TCK
            if size != last or not quiet or busy:
                last, since, cpu_since = size, now, cpu
            elif now - since >= stable_s:
                return round(now - started, 2)
            time.sleep(poll)
        return round(time.monotonic() - started, 2)


def dir_size(path):
    """(apparent bytes, allocated bytes, files) of everything under path. Apparent size is the sum of
    file lengths; allocated is st_blocks*512 (counts directories and filesystem block rounding)."""
    apparent = allocated = files = 0
    for root, dirs, names in os.walk(path):
        for n in dirs + names:
            try:
                st = os.lstat(os.path.join(root, n))
            except FileNotFoundError:  # removed by a merge while we walk
                continue
            allocated += st.st_blocks * 512
            if n in names:
                apparent += st.st_size
                files += 1
    return apparent, allocated, files
