#!/usr/bin/env python3
# Copied unchanged from the project's shared tools, shared/tools/gen_lp.py (sha256 f1b2deddc72ad021…), so that every
# benchmark reproduces from a clone of this repository alone. Change it here and there together.
"""Generate a realistic GPU-cluster line-protocol workload into DIR as batch files of N lines.
usage: gen_lp.py DIR NODES MINUTES [LINES_PER_FILE] [SEED] [T0]
T0 (unix seconds) defaults to now minus MINUTES, so the data sits inside any retention window.
Per node every 10 s: 8 GPUs x (util, mem_used, temp, power, sm_clock, pcie_rx, pcie_tx, xid), host cpu/mem/load,
2 disks (reads, writes, read_bytes, write_bytes, io_time_ms), 2 NICs (rx/tx bytes/packets/drops/errs).
Values follow slow random walks with noise, like real telemetry (not white noise, not constants)."""
import os, random, sys
d, nodes, minutes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per = int(sys.argv[4]) if len(sys.argv) > 4 else 5000
rng = random.Random(int(sys.argv[5]) if len(sys.argv) > 5 else 7)
os.makedirs(d, exist_ok=True)
import time
t0 = int(sys.argv[6]) if len(sys.argv) > 6 else (int(time.time()) - minutes * 60) // 10 * 10
state = {}
def walk(key, lo, hi, step):
    v = state.get(key, rng.uniform(lo, hi))
    v = min(hi, max(lo, v + rng.gauss(0, step)))
    state[key] = v
    return v
ctr = {}
def counter(key, rate):
    c = ctr.get(key, rng.randint(0, 10**9)) + max(0, int(rng.gauss(rate, rate * 0.2)))
    ctr[key] = c
    return c
buf, n_file, n_lines = [], 0, 0
def emit(line):
    global buf, n_file, n_lines
    buf.append(line); n_lines += 1
    if len(buf) >= per:
        open(f"{d}/{n_file:05d}.lp", "w").write("\n".join(buf) + "\n"); n_file += 1; buf = []
for s in range(0, minutes * 60, 10):
    ts = (t0 + s) * 10**9
    for n in range(nodes):
        host = f"gpu-node-{n:03d}"
        rack = f"rack-{n // 16:02d}"
        for g in range(8):
            k = (n, g)
            emit(f"gpu,cluster=prod,rack={rack},host={host},gpu={g},model=H200 "
                 f"utilization={walk(k+('u',),0,100,4):.1f},memory_used_bytes={int(walk(k+('m',),1e9,1.4e11,2e9))}i,"
                 f"temperature_celsius={walk(k+('t',),30,90,0.5):.1f},power_watts={walk(k+('p',),80,700,15):.1f},"
                 f"sm_clock_hz={int(walk(k+('c',),1.2e9,1.98e9,2e7))}i,pcie_rx_bytes_total={counter(k+('rx',),2e9)}i,"
                 f"pcie_tx_bytes_total={counter(k+('tx',),1e9)}i,xid_errors_total={ctr.get(k+('x',),0)}i {ts}")
        emit(f"host,cluster=prod,rack={rack},host={host} cpu_utilization={walk((n,'cpu'),0,100,3):.2f},"
             f"memory_used_bytes={int(walk((n,'mem'),1e10,1.9e12,1e9))}i,load1={walk((n,'load'),0,128,2):.2f} {ts}")
        for dev in ("nvme0n1", "nvme1n1"):
            k = (n, dev)
            emit(f"disk,cluster=prod,rack={rack},host={host},device={dev} reads_completed_total={counter(k+('r',),20000)}i,"
                 f"writes_completed_total={counter(k+('w',),8000)}i,read_bytes_total={counter(k+('rb',),8e8)}i,"
                 f"written_bytes_total={counter(k+('wb',),3e8)}i,io_time_seconds_total={counter(k+('io',),6)}i {ts}")
        for nic in ("eth0", "ib0"):
            k = (n, nic)
            emit(f"net,cluster=prod,rack={rack},host={host},device={nic} receive_bytes_total={counter(k+('rb',),1e9)}i,"
                 f"transmit_bytes_total={counter(k+('tb',),1e9)}i,receive_packets_total={counter(k+('rp',),8e5)}i,"
                 f"receive_drop_total={counter(k+('rd',),0.3)}i,receive_errs_total={counter(k+('re',),0.05)}i {ts}")
if buf:
    open(f"{d}/{n_file:05d}.lp", "w").write("\n".join(buf) + "\n"); n_file += 1
fields = 0
print(f"{n_lines} lines in {n_file} files")
