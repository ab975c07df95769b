"""A line-protocol receiver for the collector benches: accepts POSTs (gzip or not), answers 204, keeps
every line's measurement+tags, numeric fields and timestamp. Also /proc readings of a process."""
import gzip
import http.server
import os
import re
import threading

SPACE = re.compile(r"(?<!\\) ")
COMMA = re.compile(r"(?<!\\),")
FIELD = re.compile(r'([^=,]+)=((?:"(?:[^"\\]|\\.)*")|[^,]+)')
TICKS = os.sysconf("SC_CLK_TCK")


def unescape(s):
    return s.replace("\\ ", " ").replace("\\,", ",").replace("\\=", "=")


def parse_line(line):
    """(measurement, {tag: value}, {field: float}, ts) or None; string fields (events) are left out."""
    parts = SPACE.split(line)
    if len(parts) < 3:
        return None
    head = COMMA.split(parts[0])
    tags = dict(unescape(t).split("=", 1) for t in head[1:])
    fields = {}
    for k, v in FIELD.findall(" ".join(parts[1:-1])):
        if v.startswith('"'):
            continue
        fields[unescape(k)] = float(v.rstrip("iu"))
    return unescape(head[0]), tags, fields, int(parts[-1])


class Receiver:
    """Starts on a free loopback port; `lines` holds what arrived, parsed."""

    def __init__(self):
        self.lines = []
        self.lock = threading.Lock()
        me = self

        class Handler(http.server.BaseHTTPRequestHandler):
            # HTTP/1.1, so a sender keeps its connection between posts, as it does with a real store.
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                got = [p for p in map(parse_line, body.decode().splitlines()) if p]
                with me.lock:
                    me.lines.extend(got)
                self.send_response(204)
                self.end_headers()

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def snapshot(self):
        with self.lock:
            return list(self.lines)

    def stop(self):
        self.server.shutdown()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / TICKS


def memory_kib(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0])
    return out
