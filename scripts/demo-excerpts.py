#!/usr/bin/env python3
"""Cuts the inference-service excerpts `argus serve --demo` replays (demo/README.md describes them).

    python3 scripts/demo-excerpts.py /work/shared/data/alibaba/cluster-trace-v2026-GenAI

reads Alibaba's GenAI serving trace (GenTD26) and writes, for the 380 trace steps of demo/alibaba_gpu.csv
(the same `timestamp_anon` values, so the service and its GPUs move together):

- demo/alibaba_inference.csv: per step, the gateway's generative QPS summed over its containers and the
  number of containers reporting, the gateway queue size, and how many end-to-end latency samples
  (pipeline_inference_data_anon, ms) and gateway queuing-time samples (queue_rt_raw_anon, ms) fell in each
  bucket of vLLM's own histogram bounds (`e2e_le_<seconds>`, `queue_le_<seconds>`, cumulative counts are
  built by the demo). Values are counted, not changed; a step without samples has zero counts.
- demo/alibaba_request_shape.csv: over the request trace (lora_request_trace.csv, requests that succeeded),
  the mean prompt length in characters and the mean denoising steps per request (steps x images).
"""

import csv
import io
import pathlib
import sys
import tarfile

DEMO = pathlib.Path(__file__).resolve().parent.parent / "demo"
# vLLM's bucket bounds (vllm/engine/metrics.py) for e2e request latency and time to first token, seconds.
E2E_LE = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0]
TTFT_LE = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0]


def rows(trace, name):
    with tarfile.open(trace / f"{name}.tar.gz") as t:
        member = next(m for m in t.getmembers() if m.name.endswith(".csv"))
        return list(csv.DictReader(io.TextIOWrapper(t.extractfile(member), encoding="utf-8")))


def bucket(bounds, seconds):
    return next((i for i, b in enumerate(bounds) if seconds <= b), len(bounds))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    trace = pathlib.Path(sys.argv[1])
    steps = []
    with open(DEMO / "alibaba_gpu.csv") as f:
        for r in csv.DictReader(f):
            if not steps or steps[-1] != r["timestamp_anon"]:
                steps.append(r["timestamp_anon"])
    index = {float(s): i for i, s in enumerate(steps)}
    n = len(steps)
    qps_sum, qps_n = [0.0] * n, [0] * n
    for r in rows(trace, "qps"):
        i = index.get(float(r["timestamp_anon"]))
        if i is not None and r["request_type"] == "Generative Requests":
            qps_sum[i] += float(r["value"])
            qps_n[i] += 1
    queue = [""] * n
    for r in rows(trace, "queue_size_raw_anon"):
        i = index.get(float(r["timestamp_anon"]))
        if i is not None:
            queue[i] = r["value"]
    e2e = [[0] * (len(E2E_LE) + 1) for _ in range(n)]
    for r in rows(trace, "pipeline_inference_data_anon"):
        i = index.get(float(r["timestamp_anon"]))
        if i is not None:
            e2e[i][bucket(E2E_LE, float(r["value"]) / 1000)] += 1
    wait = [[0] * (len(TTFT_LE) + 1) for _ in range(n)]
    for r in rows(trace, "queue_rt_raw_anon"):
        i = index.get(float(r["timestamp_anon"]))
        if i is not None:
            wait[i][bucket(TTFT_LE, float(r["value"]) / 1000)] += 1
    header = ["timestamp_anon", "generative_qps_sum", "containers", "queue_size"]
    header += [f"e2e_le_{b:g}" for b in E2E_LE] + ["e2e_le_+Inf"]
    header += [f"queue_le_{b:g}" for b in TTFT_LE] + ["queue_le_+Inf"]
    with open(DEMO / "alibaba_inference.csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for i, s in enumerate(steps):
            w.writerow([s, f"{qps_sum[i]:.6g}", qps_n[i], queue[i], *e2e[i], *wait[i]])
    with open(trace / "lora_request_trace.csv") as f:
        ok = [r for r in csv.DictReader(f) if r["predict_status"] == "SUCCEED"]
    prompt = sum(float(r["prompt_length"] or 0) for r in ok) / len(ok)
    denoise = sum(float(r["num_inference_steps"] or 0) * float(r["num_images_per_prompt"] or 1) for r in ok) / len(ok)
    with open(DEMO / "alibaba_request_shape.csv", "w") as f:
        f.write("requests,prompt_chars_mean,denoising_steps_mean\n")
        f.write(f"{len(ok)},{prompt:.4f},{denoise:.4f}\n")
    print(f"demo/alibaba_inference.csv: {n} steps; demo/alibaba_request_shape.csv: {len(ok)} requests")


if __name__ == "__main__":
    main()
