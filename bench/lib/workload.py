"""Workloads: generated once with bench/lib/gen_lp.py, cached on disk, loaded into memory as batches."""
import json
import os
import subprocess
import sys
import time


def find_gen_lp(explicit=None):
    """gen_lp.py: --gen-lp, then $ARGUS_GEN_LP, then the copy in bench/lib beside this file."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [explicit, os.environ.get("ARGUS_GEN_LP"), os.path.join(here, "gen_lp.py")]
    for c in candidates:
        if c and os.path.isfile(c):
            return c
    sys.exit("gen_lp.py not found: pass --gen-lp PATH or set ARGUS_GEN_LP")


def ensure(gen_lp, root, name, nodes, minutes, seed, t0, lines_per_file, log):
    """Generate (or reuse) a workload directory; returns (dir, meta)."""
    d = os.path.join(root, name)
    meta_path = os.path.join(d, "meta.json")
    want = {"nodes": nodes, "minutes": minutes, "seed": seed, "t0": t0, "lines_per_file": lines_per_file}
    if os.path.isfile(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if all(meta.get(k) == v for k, v in want.items()):
            log(f"workload {name}: reusing {d}")
            return d, meta
    if os.path.isdir(d):
        for fn in os.listdir(d):
            os.unlink(os.path.join(d, fn))
    log(f"workload {name}: generating {nodes} nodes x {minutes} min (seed {seed}, t0 {t0}) ...")
    started = time.monotonic()
    out = subprocess.run([sys.executable, gen_lp, d, str(nodes), str(minutes), str(lines_per_file),
                          str(seed), str(t0)], check=True, capture_output=True, text=True).stdout.strip()
    files = sorted(fn for fn in os.listdir(d) if fn.endswith(".lp"))
    lines = points = 0
    series = set()
    for fn in files:
        with open(os.path.join(d, fn), "rb") as f:
            for line in f:
                lines += 1
                points += count_fields(line, series)
    meta = dict(want, files=len(files), lines=lines, points=points, series=len(series),
                gen_output=out, gen_seconds=round(time.monotonic() - started, 1))
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    log(f"workload {name}: {lines} lines, {points} points, {len(series)} series in {len(files)} files")
    return d, meta


def load_batches(d):
    """All batch files of a workload, as bytes, in file order."""
    files = sorted(fn for fn in os.listdir(d) if fn.endswith(".lp"))
    out = []
    for fn in files:
        with open(os.path.join(d, fn), "rb") as f:
            out.append(f.read())
    return out


def _split_unescaped(s, sep):
    """Split line-protocol text on `sep` outside double quotes and not after a backslash."""
    parts, cur, quoted, esc = [], bytearray(), False, False
    for ch in s:
        if esc:
            cur.append(ch); esc = False
        elif ch == 0x5C:  # backslash
            cur.append(ch); esc = True
        elif ch == 0x22:  # double quote
            cur.append(ch); quoted = not quoted
        elif ch == sep and not quoted:
            parts.append(bytes(cur)); cur = bytearray()
        else:
            cur.append(ch)
    parts.append(bytes(cur))
    return parts


def count_fields(line, series=None):
    """Numeric fields in one line-protocol line: each is one point (sample). String fields don't count.
    If `series` is a set, adds one key per (measurement+tags, field) to it."""
    line = line.strip()
    if not line or line.startswith(b"#"):
        return 0
    if b"\\" in line or b'"' in line:
        sections = _split_unescaped(line, 0x20)
        fields = _split_unescaped(sections[1], 0x2C) if len(sections) > 1 else []
    else:
        sections = line.split(b" ")
        fields = sections[1].split(b",") if len(sections) > 1 else []
    n = 0
    for fv in fields:
        k, _, v = fv.partition(b"=")
        if not v or v.startswith(b'"'):
            continue
        n += 1
        if series is not None:
            series.add((sections[0], k))
    return n
