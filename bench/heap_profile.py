#!/usr/bin/env python3
"""Attributes a jemalloc heap profile of `argus` — or the growth between two — to Argus' own code.

    cargo build --release -p argus --features heap-profile
    _RJEM_MALLOC_CONF=prof:true,lg_prof_sample:19,lg_prof_interval:33,prof_prefix:/tmp/prof/argus \\
        python3 bench/soak.py --argus-bin target/release/argus --duration 15m ...
    python3 bench/heap_profile.py target/release/argus /tmp/prof/argus.PID.40.i40.heap \\
        --base /tmp/prof/argus.PID.12.i12.heap --depth 2

jemalloc samples one allocation per `2^lg_prof_sample` bytes on average and records its stack; with
`lg_prof_interval` it dumps the live sampled allocations every `2^lg_prof_interval` bytes allocated
(`argus.PID.SEQ.iSEQ.heap`; pick the dumps by their modification time). jemalloc's own `jeprof` reads
them too, but it shortens Rust's names to `::poll` and `::from_iter`; this script symbolises each stack
with `addr2line` (binutils), keeps the frames in Argus' sources (a path under the repository) and adds
up, per chain of the innermost `--depth` such frames, the bytes live in the profile (minus those live in
`--base`), unsampled as jeprof does. The binary must be the one that wrote the profile, built with line
tables (the release profile has them).
"""
import argparse
import collections
import math
import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + "/"


def parse(path):
    """({stack of return addresses: live bytes, unsampled}, the sampling rate, the mappings)."""
    stacks, maps, rate, cur, in_maps = {}, [], 1 << 19, None, False
    with open(path) as f:
        for line in f:
            if line.startswith("MAPPED_LIBRARIES"):
                in_maps = True
            elif in_maps:
                m = re.match(r"([0-9a-f]+)-[0-9a-f]+ (\S+) ([0-9a-f]+) \S+ \S+\s+(.*)", line)
                if m:
                    maps.append((int(m.group(1), 16), m.group(2), int(m.group(3), 16), m.group(4).strip()))
            elif line.startswith("heap_v2/"):
                rate = int(line.split("/")[1])
            elif line.startswith("@"):
                cur = tuple(int(a, 16) for a in line.split()[1:])
            else:
                m = re.match(r"\s+t\*: (\d+): (\d+)", line)
                if m and cur is not None:
                    count, size = int(m.group(1)), int(m.group(2))
                    if count:
                        # Each sampled allocation of mean size s stands for 1 / (1 - e^(-s/rate)) of them.
                        size /= 1 - math.exp(-(size / count) / rate)
                    stacks[cur] = stacks.get(cur, 0) + size
                    cur = None
    return stacks, rate, maps


def load_bias(binary, maps):
    """What to subtract from a return address to get the binary's virtual address (a PIE is loaded
    anywhere; its text segment's virtual address may differ from its file offset)."""
    name = os.path.realpath(binary)
    for lo, perm, off, path in maps:
        if "x" in perm and os.path.realpath(path) == name:
            out = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True).stdout
            for row in out.splitlines():
                f = row.split()
                if f[:1] == ["LOAD"] and "E" in f[6:-1]:
                    return lo - off - (int(f[2], 16) - int(f[1], 16))
    raise SystemExit(f"{binary} is not mapped executable in the profile: not the binary that wrote it?")


def symbolise(binary, addrs, bias):
    """{address: [(function, file:line)] innermost first, inlined frames included}."""
    frames, cur, fn = {}, None, None
    # A return address points after the call: look up the byte before it.
    args = [hex(a - bias - 1) for a in addrs]
    for i in range(0, len(args), 20_000):
        out = subprocess.run(["addr2line", "-f", "-i", "-C", "-a", "-e", binary] + args[i:i + 20_000],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if re.fullmatch(r"0x[0-9a-f]+", line):
                cur, fn = int(line, 16) + bias + 1, None
                frames[cur] = []
            elif fn is None:
                fn = line
            else:
                frames[cur].append((re.sub(r"::h[0-9a-f]{16}$", "", fn), line.split(" ")[0]))
                fn = None
    return frames


def own(stack, frames, depth):
    """The innermost `depth` frames of the stack that lie in Argus' sources (the allocator's excepted)."""
    out = []
    for a in stack:
        for fn, loc in frames.get(a, []):
            path = loc.rsplit(":", 1)[0]
            if path.startswith(REPO) and path != REPO + "src/malloc.rs" and len(out) < depth:
                out.append(f"{fn[:110]} @ {loc[len(REPO):]}")
    return tuple(out) or ("(outside Argus' sources)",)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("binary")
    p.add_argument("profile")
    p.add_argument("--base", help="an earlier profile of the same process: show what grew since")
    p.add_argument("--depth", type=int, default=2, help="Argus frames per entry (innermost first)")
    p.add_argument("--top", type=int, default=30)
    a = p.parse_args()
    late, _, maps = parse(a.profile)
    early = parse(a.base)[0] if a.base else {}
    bias = load_bias(a.binary, maps)
    frames = symbolise(a.binary, sorted({x for s in list(late) + list(early) for x in s}), bias)
    by = collections.Counter()
    for stacks, sign in ((late, 1), (early, -1)):
        for s, b in stacks.items():
            by[own(s, frames, a.depth)] += sign * b
    print(f"{'growth' if a.base else 'live'}: {sum(by.values()) / 2**20:+.1f} MiB in all")
    for chain, b in sorted(by.items(), key=lambda kv: -abs(kv[1]))[:a.top]:
        print(f"{b / 2**20:+9.1f} MiB  " + "\n                ".join(chain))


if __name__ == "__main__":
    main()
