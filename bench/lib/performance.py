#!/usr/bin/env python3
"""docs/performance.md from the benchmark records in bench/results/*.json.

usage: python3 bench/lib/performance.py            # rewrite docs/performance.md
       python3 bench/lib/performance.py --check    # exit 1 with a diff when the page is not what the JSON gives

Every file bench/results/KIND-YYYY-MM-DD[-TAG].json is one run of the benchmark KIND. For each kind the page shows
what it measures, the command that reproduces it, the goal it is held to, and the figures of its current run with
that run's date, commit and machine and a link to the raw JSON. The current run is the newest: by the record's own
`date` (or `started_utc`, `meta.started`), else the date in its file name, ties broken by file name. A kind may
pin another run where the project holds that one as the reference (`Kind.pinned`, with the reason, shown on the
page).

Kinds listed in KINDS below have a summariser that picks their headline figures. Any other kind is rendered by the
generic one: its record's `title`, `area`, `what`, `command`, `goal`, `verdict` fields if it has them, then the
`figures` object (label -> value, shown as written), or else its top-level scalar values. So a new bench's JSON
shows up without a change here; give it a summariser when its headline figures are nested.

Records named KIND-DATE-from-log.json hold figures the running log bench/RESULTS.md recorded in prose only,
copied as written there, with a `source` naming that log's commit.

Python 3 standard library only; the output depends on the JSON files alone (no clock, sorted input).
"""
import argparse
import difflib
import json
import os
import re
import sys
from dataclasses import dataclass, field

sys.dont_write_bytecode = True  # run by the test suite: leave no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402  (bench/lib/report.py: median, nearest-rank percentile, number format)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = "bench/results"
PAGE = "docs/performance.md"
# The commit whose bench/RESULTS.md (the running log this page replaced) holds the history of every figure.
HISTORY_COMMIT = "d87df420"

NAME = re.compile(r"^(?P<kind>.+?)-(?P<date>\d{4}-\d{2}-\d{2})(?:-(?P<tag>.+))?$")
STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:[T ](\d{2}:\d{2}))?")
AREAS = ["Store and queries", "Alerting", "Collector", "Analyzer", "Fleet mode", "Reliability", "Project", "Other"]
# Fields of a record that describe it rather than measure something.
META_KEYS = {"kind", "title", "area", "what", "command", "goal", "verdict", "source", "date", "commit", "machine",
             "figures", "notes", "started_utc", "argv", "version", "argus_version", "build"}


# === Runs ===

@dataclass
class Run:
    file: str  # name under bench/results
    kind: str
    data: dict
    stamp: str  # "YYYY-MM-DD" or "YYYY-MM-DD HH:MM" (UTC), what "newest" compares


def record_stamp(data, file_date):
    """The run's time as the record gives it, else the date in its file name."""
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    for v in (data.get("date"), data.get("started_utc"), meta.get("started")):
        if isinstance(v, str):
            m = STAMP.match(v)
            if m:
                return m.group(1) + (" " + m.group(2) if m.group(2) else "")
    return file_date or ""


def load_runs(root):
    runs = []
    directory = os.path.join(root, RESULTS)
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json"):
            continue
        path = os.path.join(directory, name)
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"{RESULTS}/{name}: not a readable JSON record: {e}")
        if not isinstance(data, dict):
            sys.exit(f"{RESULTS}/{name}: a record must be a JSON object, found {type(data).__name__}")
        stem = name[: -len(".json")]
        m = NAME.match(stem)
        kind, file_date = (m.group("kind"), m.group("date")) if m else (stem, None)
        if isinstance(data.get("kind"), str):
            kind = data["kind"]
        kind = ALIASES.get(kind, kind)
        runs.append(Run(name, kind, data, record_stamp(data, file_date)))
    return runs


# === Formatting ===

def num(v, digits=3):
    """A measured figure, rounded for reading (report.fmt: 3 significant digits, thousands separated)."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return "–"
    if isinstance(v, (int, float)):
        return report.fmt(v, digits)
    return str(v)


def exact(v):
    """A figure copied from a record as written (from-log figures and generic scalars are not rounded)."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if v is None:
        return "–"
    if isinstance(v, (int, float)):
        return json.dumps(v)
    return str(v)


def cell(text):
    """Text fit for one cell of a Markdown table."""
    return str(text).replace("\n", "; ").replace("|", "\\|")


def pct(v):
    return "–" if v is None else f"{100 * v:.1f} %"


def mib(kib):
    return None if kib is None else kib / 1024


def pair(*vs, digits=3):
    return " / ".join(num(v, digits) for v in vs)


def get(d, *path):
    for p in path:
        if not isinstance(d, dict) or p not in d:
            return None
        d = d[p]
    return d


# === Summarisers: a record -> [(figure, value)] ===

def s_promql_latency(d):
    names = [n for n in ("argus", "vm", "prom") if all(n in q["requests"] for q in d["queries"])]
    label = {"argus": "Argus", "vm": "VictoriaMetrics", "prom": "Prometheus"}
    pooled = {n: [r["ms"] for q in d["queries"] for r in q["requests"][n]] for n in names}
    medians = {n: [report.median([r["ms"] for r in q["requests"][n]]) for q in d["queries"]] for n in names}
    head = " / ".join(label[n] for n in names)
    rows = [
        ("queries × timed requests per query and server", f"{len(d['queries'])} × {get(d, 'args', 'reps')}"),
        (f"all requests pooled, p50 ms, {head}", pair(*(report.median(pooled[n]) for n in names))),
        (f"all requests pooled, p99 ms, {head}", pair(*(report.percentile(pooled[n], 99) for n in names))),
        (f"sum of per-query medians (one dashboard load), ms, {head}", pair(*(sum(medians[n]) for n in names))),
    ]
    wins = d.get("wins") or {}
    if "p50" in wins:
        n = len(d["queries"])
        rows.append(("queries with Argus ≤ VictoriaMetrics by median / by p99",
                     f"{wins['p50']} / {wins.get('p99')} of {n}"))
    w = d.get("workload") or {}
    if w:
        rows.append(("workload", f"{w.get('nodes')} nodes × {w.get('minutes', 0) // 60} h, "
                                 f"{num(w.get('points'))} samples, {num(w.get('series'))} series"))
    for n, v in sorted((d.get("versions") or {}).items()):
        rows.append((f"version, {label.get(n, n)}", v))
    return rows


def s_soak(d):
    ing, q, st, rss = d.get("ingest", {}), d.get("queries", {}), d.get("storm", {}), d.get("rss", {})
    lat = lambda x: pair(get(x, "latency", "p50_ms"), get(x, "latency", "p90_ms"), get(x, "latency", "p99_ms"))
    last = (rss.get("samples") or [{}])[-1]
    return [
        ("samples/s stored (target)", f"{num(ing.get('rate_achieved'))} ({num(get(d, 'config', 'target_rate'))})"),
        ("series written; head series at the end",
         f"{num(get(d, 'config', 'series'))}; {num(last.get('head_series'))}"),
        ("errors (writes, queries, alert posts)", num(d.get("errors"))),
        ("**RSS growth after warm-up, per-minute maximum / at the end**",
         f"**{num(rss.get('growth_after_warmup_pct_max'))} %** / {num(rss.get('growth_after_warmup_pct_end'))} %"),
        ("RSS after warm-up / at the end / peak, MiB",
         pair(mib(rss.get("warmup_kib")), mib(rss.get("end_kib")), mib(get(d, "server", "hwm_kib")))),
        ("ingest request latency p50 / p90 / p99 ms", lat(ing)),
        ("dashboard `query_range` p50 / p90 / p99 ms (answered)", f"{lat(q)} ({num(q.get('ok'))})"),
        ("alert intake p50 / p90 / p99 ms (posts answered)", f"{lat(st)} ({num(st.get('ok'))})"),
        ("duration, s", num(d.get("wall_s"))),
    ]


def s_block_memory(d):
    bins = [b for b, _ in d["args"]["bins"]]
    med = lambda b, f: report.median([f(r) for r in d["runs"] if r["bin"] == b])
    figs = [
        ("ingest s", lambda r: r["ingest_s"]),
        ("flush + compaction s", lambda r: r["flush_s"]),
        ("**peak RSS during flush + compaction MiB**", lambda r: r["flush_peak_rss_mib"]),
        ("blocks on disk MiB", lambda r: r["blocks_mib"]),
        ("**RSS after reopen MiB**", lambda r: r["open_rss_mib"]),
        ("of it anonymous (heap) MiB", lambda r: r["open_anon_mib"]),
        ("RSS after the reads MiB", lambda r: r["after_reads_rss_mib"]),
        ("`/api/v1/series`, one host, ms", lambda r: r["reads"]["series_ms"]),
        ("**`/api/v1/labels` ms**", lambda r: r["reads"]["labels_ms"]),
        ("`/api/v1/label/host/values` ms", lambda r: r["reads"]["host_values_ms"]),
        ("`query_range` over 512 series ms", lambda r: r["reads"]["range_ms"]),
    ]
    rows = [(f"{label}, {' / '.join(bins)} (median of {d['args']['repeat']})", pair(*(med(b, f) for b in bins)))
            for label, f in figs]
    rows.insert(0, ("series; samples over", f"{num(d['args']['series'])}; {d['args']['hours']} h"))
    return rows


def s_alertd_throughput(d):
    m = d["medians"]
    writers = "4" if any(r.get("writers") == 4 for r in d["runs"]) else None
    rows = [
        ("alerts (batches of)", f"{num(d['alerts'])} ({d['batch']})"),
        ("alerts/s (wall), Alertmanager / alertd", pair(m["am"]["alerts_per_s"], m["alertd"]["alerts_per_s"])),
        ("**alertd / Alertmanager, alerts/s**", f"**{num(m['alertd']['alerts_per_s'] / m['am']['alerts_per_s'])}×**"),
        ("alerts per server CPU-second, Alertmanager / alertd",
         pair(m["am"]["alerts_per_cpu_s_ack"], m["alertd"]["alerts_per_cpu_s_ack"])),
        ("**alertd / Alertmanager, per CPU-second**",
         f"**{num(m['alertd']['alerts_per_cpu_s_ack'] / m['am']['alerts_per_cpu_s_ack'])}×**"),
        ("runs (alternated); retries", f"{len(d['runs'])}; {sum(r.get('retries', 0) for r in d['runs'])}"),
    ]
    if writers:
        rows.append(("writers", writers))
    return rows


def s_alertd_failover(d):
    systems = [("alertd", "alertd cluster"), ("alertmanager", "Alertmanager 0.25 cluster"),
               ("alertd_control", "control: a second lone alertd"),
               ("alertmanager_control", "control: a second lone Alertmanager")]
    rows = [("scenario", f"{num(d.get('posts'))} posts, {num(d.get('alerts'))} alerts at {num(d.get('speed'))}×, "
                         f"{d.get('kills')} SIGKILLs, peer timeout {num(d.get('peer_timeout_s'))} s")]
    for key, label in systems:
        s = d.get(key)
        if not isinstance(s, dict):
            continue
        lost_groups = s.get("lost_groups")
        rows.append((f"{label}: notifications (lone twin's); duplicates (lone twin's); lost groups; lost alerts",
                     f"{s['notifications']} ({s.get('lone_notifications')}); {s['duplicates']} "
                     f"({num(s.get('lone_duplicates'))}); {num(lost_groups)}; {s.get('lost_alerts')} of "
                     f"{s.get('lone_alerts_notified')}"))
        # With kills, a replica's CPU is restarts and gossip against an idle lone server: only a run without
        # faults measures it.
        if "cpu_per_replica_over_lone" in s and key in ("alertd", "alertmanager") and not d.get("kills"):
            rows.append((f"{label}: CPU per replica / lone", f"{num(s['cpu_per_replica_over_lone'])}×"))
    rows.append(("restarted alertd replicas ready before merging their peers' state",
                 f"{d.get('alertd_ready_before_merge')} of {len(d.get('alertd_first_ready') or [])}"))
    return rows


def s_alertd_replica_cpu(d):
    m = d["median_cpu_s_per_1000_alerts"]
    return [
        ("alerts; runs of each", f"{num(d['alerts'])}; {d['repeat']}"),
        ("lone servers side by side", num(d.get("lone_servers", 1))),
        ("CPU s per 1,000 alerts, lone / replica (medians)", pair(m["lone"], m["cluster"])),
        ("**replica / lone**", f"**{num(d['replica_over_lone'])}×**"),
    ]


def s_alertd_rolling_upgrade(d):
    rows = []
    for r in d["rounds"]:
        seen = r.get("silence_seen_after_s") or {}
        rows.append((f"{r['step']} ({', '.join(r['binaries'])})",
                     f"{r['notifications']} notification(s); silence from {r['silence_made_on']} seen after "
                     f"{', '.join(f'{num(v)} s' for _, v in sorted(seen.items()))}"
                     f"{'; missing ' + str(r['silences_missing']) if r.get('silences_missing') else ''}"))
    rows.append(("every check passed", num(d.get("ok"))))
    return rows


def s_storm_vs_alertmanager(d):
    label = {"am": "Alertmanager 0.25", "alertd": "alertd, live", "alertd-virtual": "alertd, virtual time"}
    rows = [("slice",
             f"first {num(d['hours'])} h at {num(d['speed'])}×: {d['posts']} posts, {num(d['alerts'])} alerts")]
    for k, v in sorted((d.get("scores") or {}).items()):
        rows.append((label.get(k, k), v))
    statuses = d.get("post_statuses") or {}
    rows.append(("POST answers", "; ".join(
        f"{label.get(k, k)}: " + ", ".join(f"{n} × {code}" for code, n in sorted(v.items()))
        for k, v in sorted(statuses.items()))))
    return rows


def s_collector(d):
    med, rat = d["summary"]["medians"], d["summary"].get("ratios", {})
    label = {"node_exporter": "node_exporter", "argus": "argus: host, disk, net", "argus_gpu": "argus: + gpu (8×H100)"}
    rows = []
    for k in ("node_exporter", "argus", "argus_gpu"):
        m = med.get(k)
        if not m:
            continue
        r = rat.get(k, {})
        per_sample = f"; **{num(r['cpu_per_sample_vs_node_exporter'])}×** node_exporter's" if r else ""
        rows.append((f"{label[k]}: CPU ms / collection; samples / collection; µs CPU / sample; RSS MiB (peak)",
                     f"{num(m['cpu_ms_per_collection'])}; {num(m['samples_per_collection'])}; "
                     f"{num(m['cpu_us_per_sample'])}{per_sample}; {num(mib(m['rss_kib']))} "
                     f"({num(mib(m['hwm_kib']))})"))
    meta = d.get("meta", {})
    rows.append(("runs × seconds, interval", f"{meta.get('repeat')} × {num(meta.get('seconds'))} s, "
                                             f"{num(meta.get('interval_s'))} s"))
    if d["summary"].get("dcgm_names"):
        rows.append(("gpu source series with `dcgm_names` (of them DCGM_*)",
                     f"{d['summary']['dcgm_names']['gpu_series']} ({d['summary']['dcgm_names']['dcgm_series']})"))
    return rows


def s_nab(d):
    return [
        ("**standard profile, split (headline) / whole corpus**",
         f"**{d['standard']:.2f}** / {d['standard_whole']:.2f}"),
        ("reward_low_FP, split / whole", f"{d['reward_low_FP']:.2f} / {d['reward_low_FP_whole']:.2f}"),
        ("reward_low_FN, split / whole", f"{d['reward_low_FN']:.2f} / {d['reward_low_FN_whole']:.2f}"),
        ("detector; files; points", f"{d['detector']}; {d['files']}; {num(d['points'])}"),
        ("scorer check: windowedGaussian, standard, here / published raw",
         next((f"{c['raw']:.6f} / {c['reference_raw']:.6f}" for c in d.get("scorer_check", [])
               if c["profile"] == "standard"), "–")),
        ("run time, s", num(d["seconds"])),
    ] + s_nab_families(d)


def s_nab_families(d):
    """The per-family rows `argus eval nab` adds beside the default ensemble's."""
    rows = []
    families = d.get("detectors")
    for name, fam in sorted(families.items()) if isinstance(families, dict) else []:
        std = next((p for p in fam.get("profiles", []) if p.get("profile") == "standard"), None)
        if std:
            rows.append((f"{name} alone: standard, split / whole", f"{std['split']:.2f} / {std['whole']:.2f}"))
    return rows


def s_storm_loo(d):
    rows = []
    for f in d["folds"]:
        h = f["held_out_score"]
        rows.append((f"held out {f['held_out']}: fewer / recall / precision / delay",
                     f"{h['reduction']} % / {h['recall']} % / {h['precision']} % / {h['median_delay_min']} min"))
    sp = d["held_out_spread"]
    for key, unit in (("reduction", " %"), ("recall", " %"), ("precision", " %"), ("median_delay_min", " min")):
        rows.append((f"spread of {key}: min / median / max",
                     f"{sp[key]['min']} / {sp[key]['median']} / {sp[key]['max']}{unit}"))
    rows.append(("defaults (" + d.get("defaults_note", "") + ")",
                 ", ".join(f"{k} {v}" for k, v in sorted(d["defaults"].items()))))
    for name, r in sorted(d.get("further_storms", {}).get("results", {}).items()):
        a = r.get("alertd", {})
        rows.append((f"further storm {name}: alertd fewer / recall / precision",
                     f"{a.get('reduction')} % / {a.get('recall')} % / {a.get('precision')} %"))
    return rows


def s_ces(d):
    rows = []
    peer = d.get("peer") or {}
    if peer:
        rows.append(("peer (Helios CES, LightGBM): off node-hours / shortfall node-min / power-ups",
                     f"{num(peer['powered_off_node_hours'])} / {num(peer['shortfall_node_minutes'])} / "
                     f"{num(peer['power_up_events'])}"))
    for series, boots in sorted(d["runs"].items()):
        for boot, policies in sorted(boots.items()):
            cells = "; ".join(
                f"{pol} {num(r['powered_off_node_hours'], 0)} h / {num(r['shortfall_node_minutes'], 0)} min / "
                f"{r['power_ups']}" for pol, r in policies.items())
            rows.append((f"{series}, boot {boot}", cells))
    return rows


def s_spot(d):
    after, before = d["smd_after_spot_q_3e-3"]["mean"], d["smd_before_training_quantile_0_995"]["mean"]
    loo = d["leave_one_machine_out"]
    rows = [
        ("SMD, four machines: **mean AUC-PR**, SPOT (the default) / training quantile",
         f"**{num(after['auc_pr'])}** / {num(before['auc_pr'])}"),
        ("SMD: **mean F1 at the detector's own threshold**, SPOT / training quantile",
         f"**{num(after['f1_at_threshold'])}** / {num(before['f1_at_threshold'])}"),
        ("SMD: held-out mean F1 (q chosen leaving each machine out)", num(loo["held_out_f1_mean"])),
        ("SMD: mean AUC-ROC, best F1, point-adjusted F1 (SPOT)",
         pair(after["auc_roc"], after["best_f1"], after["pa_f1"])),
        ("q (how chosen)", f"{num(d['parameters']['q']['value'])} ({d['parameters']['q']['how']})"),
    ]
    for m in ("machine-1-6", "machine-1-7", "machine-2-1", "machine-2-2"):
        a = d["smd_after_spot_q_3e-3"][m]
        rows.append((f"{m}: AUC-PR; F1 at threshold", f"{num(a['auc_pr'])}; {num(a['f1_at_threshold'])}"))
    nb, nu = d.get("nab_before", {}), d.get("nab_univariate_spot_on_q_3e-3", {})
    if nb and nu:
        rows.append(("NAB standard, fixed level (the default) / SPOT on the univariate detector",
                     f"{nb.get('standard'):.2f} / {nu.get('standard'):.2f}"))
    return rows


def s_iforest(d):
    machines = sorted({r["machine"] for r in d["runs"]})
    rows, ratios = [], []
    for m in machines:
        side = lambda s: [r for r in d["runs"] if r["machine"] == m and r["side"] == s]
        t = {s: report.median([r["total_seconds"] for r in side(s)]) for s in ("sklearn", "argus")}
        auc = {s: sum(r["auc_roc"] for r in side(s)) / len(side(s)) for s in ("sklearn", "argus")}
        ratios.append(t["argus"] / t["sklearn"])
        rows.append((f"{m}: fit+score s, scikit-learn / Argus (median); mean AUC-ROC, scikit-learn / Argus",
                     f"{pair(t['sklearn'], t['argus'])}; {pair(auc['sklearn'], auc['argus'], digits=4)}"))
    n = report.median([sum(1 for r in d["runs"] if r["machine"] == m and r["side"] == "argus") for m in machines])
    rows.insert(0, ("**Argus / scikit-learn fit+score time, median over machines**",
                    f"**{num(report.median(ratios))}**"))
    rows.insert(1, ("seeds per machine and side; scikit-learn", f"{num(n)}; {d.get('sklearn')}"))
    return rows


def s_forecast(d):
    models = d["models"]
    sel, naive = models.get("selected", {}), models.get("naive", {})
    rows = [
        ("selected model", d.get("selected_model")),
        ("**selected MAE / naive's**", f"**{num(sel.get('rel_mae'))}**"),
        ("**within ±8 % at +15 min**, selected / naive",
         f"**{pct(sel.get('within_8pct'))}** / {pct(naive.get('within_8pct'))}"),
        ("80 % band coverage, selected", pct(sel.get("coverage_80"))),
    ]
    for name in sorted(models):
        if name not in ("selected",):
            m = models[name]
            rows.append((f"{name}: MAE / naive's; MAPE; ±8 % at +15 min",
                         f"{num(m['rel_mae'])}; {pct(m['mape'])}; {pct(m['within_8pct'])}"))
    return rows


def s_fleet_one_machine(d):
    cpu, peak = d["cpu_s_per_million_points"], d["rss_peak_mib"]
    analyzers = {k: v for k, v in peak.items() if k.startswith("argus-") and k != "argus-store"}
    alerts = d.get("alerts") or {}
    rows = [
        ("nodes; series; minutes measured (after)", f"{d['nodes']}; {num(d['series'])}; {num(d['minutes'])} "
                                                    f"({num(d.get('skip_minutes'))} skipped)"),
        ("**store CPU s per million points**, VictoriaMetrics / Argus (ratio)",
         f"{pair(cpu['vm'], cpu['argus_store'])} (**{num(d['argus_store_over_vm_cpu'])}×**)"),
        ("**RSS peak MiB**, VictoriaMetrics / Argus store + rules/analyzer/alertd process",
         f"{num(peak['vm'])} / {num(peak['argus-store'])} + {num(sum(analyzers.values()))}"),
        ("analyzer step s, p50 / p99 / max (embedded)",
         pair(d["analyzer_step_s"]["p50"], d["analyzer_step_s"]["p99"], d["analyzer_step_s"]["max"])),
        ("points acknowledged, VictoriaMetrics / Argus", pair(d["points_acked"]["vm"], d["points_acked"]["argus"])),
        ("failed batches; late ticks", f"{pair(*d['failed_batches'].values())}; {pair(*d['late_ticks'].values())}"),
    ]
    if alerts:
        only = lambda k: len(alerts[k]) if isinstance(alerts.get(k), list) else alerts.get(k)
        rows.append(("**alerts, embedded / VictoriaMetrics shards / on both; equal**",
                     f"{num(alerts.get('embedded'))} / {num(alerts.get('victoriametrics_sharded'))} / "
                     f"{num(alerts.get('both'))}; **{num(alerts.get('equal'))}** "
                     f"(only embedded {num(only('only_embedded'))}, only shards {num(only('only_victoriametrics'))})"))
    return rows


def s_fleet_sizing(d):
    vm, ar, live = d["victoriametrics"], d["argus"], d["live"]
    return [
        ("series sent by one 8×H100 node", num(d["node_series"])),
        ("series per node with the analyzer's outputs", num(d["node_series_with_derived"])),
        ("**CPU s per million points**, VictoriaMetrics / Argus",
         pair(vm["cpu_s_per_million_points"], ar["cpu_s_per_million_points"])),
        ("**bytes per point** after flush and settling, VictoriaMetrics / Argus",
         pair(vm["bytes_per_point"], ar["bytes_per_point"])),
        ("points/s per node, live", num(d["node_points_per_s"])),
        ("memory bytes per series (Argus, live)", num(d["memory_bytes_per_series"])),
        ("RSS after the live minutes MiB (Argus)", num(mib(live["rss_end_kib"]))),
        ("nodes; history", f"{d['nodes']}; {num(d['hours'])} h ({num(d['history_points'])} points)"),
    ]


def s_fleet_rate_compare(d):
    return [(name, f"{num(r['differ'])} of {num(r['points'])} points differ over {num(r['series'])} series")
            for name, r in d["runs"].items()]


def s_shard_scaling(d):
    rows = [("series; hosts; measured over", f"{num(d['series'])}; {num(d['hosts'])}; {d['measure_minutes']} min")]
    for r in d["runs"]:
        cpu = ", ".join(num(s["cpu_s_per_min"]) for s in r["per_shard"])
        tick = ", ".join(num(s["mean_tick_s"]) for s in r["per_shard"])
        rows.append((f"{r['shards']} shard(s): CPU s/min each; **N × mean / one shard**; step s",
                     f"{cpu}; **{num(r['n_times_mean_over_one'])}**; {tick}"))
    return rows


def s_store_pair(d):
    r = d["result"]
    return [
        ("series compared (metric names)", f"{num(r['series'])} ({r['names']})"),
        ("samples, store A / store B", pair(r["samples"]["store-a"], r["samples"]["store-b"])),
        ("samples stamped inside the outage, A / B",
         pair(r["outage_window"]["samples"]["store-a"], r["outage_window"]["samples"]["store-b"])),
        ("**series / samples missing on A**", f"**{r['series_missing_on_a']} / {r['samples_missing_on_a']}**"),
        ("**series / samples missing on B (killed)**", f"**{r['series_missing_on_b']} / {r['samples_missing_on_b']}**"),
        ("outage; collectors", f"{num(d['args']['outage_minutes'])} min ({d['args']['stop_signal']}); "
                               f"{d['args']['collectors']}"),
        ("every check passed", num(d.get("ok"))),
    ]


def s_retention_size(d):
    bounded = next(r for r in d["runs"] if r["name"] == "bounded")
    during, verify, v = bounded.get("during", {}), bounded.get("verify", {}), d.get("verdict", {})
    bound = d["bound_bytes"]
    return [
        ("workload", f"{get(d, 'workload', 'nodes')} nodes, {num(get(d, 'workload', 'series'))} series, "
                     f"{num(get(d, 'workload', 'samples'))} samples over {num(get(d, 'args', 'hours'))} h"),
        ("bound MiB", num(bound / 2**20)),
        ("**max while writing / bound**", f"**{num(during.get('max_dir_bytes', 0) / bound)}**"),
        ("data directory after flush / bound", num(bounded["dir_bytes"] / bound)),
        ("time above the bound, s", num(during.get("time_above_bound_s"))),
        ("hours kept of the 24", num(verify.get("hours_kept"))),
        ("**acknowledged samples younger than the drop boundary missing**",
         f"**{num(verify.get('samples_missing_younger_than_boundary'))}** of "
         f"{num(verify.get('acked_samples_younger_than_boundary'))}"),
        *[(k.replace("_", " "), num(val)) for k, val in v.items()],
    ]


# === Section: argus eval pages (false pages and caught faults) ===

def s_pages(d):
    """False pages and fault recall of `argus eval pages`, per data set, per fault kind, and where the faults
    not caught in time were lost (the record's `diagnosis`)."""
    rows = [
        ("**false pages per 1,000 series-days**", f"**{num(d['pages_per_1000_series_days'])}** "
                                                  f"({d['pages_outside_faults']} in {num(d['series_days'])} series-days)"),
        ("**faults notified within 5 min**", f"**{pct(d['fault_recall'])}** ({d['faults_notified_5m']} of "
                                             f"{d['faults']}; notified at all {d['faults_notified']})"),
        ("median time to notification, s", num(d.get("median_detect_seconds"))),
    ]
    for name, s in sorted(d.get("data_sets", {}).items()):
        rows.append((f"{name}: series, false pages / 1,000 series-days, recall, run time s",
                     f"{s['series']}, {num(s['pages_per_1000_series_days'])}, {pct(s['fault_recall'])}, "
                     f"{num(s.get('seconds'))}"))
    diag = d.get("diagnosis") or {}
    for kind, f in sorted((diag.get("by_kind") or {}).items()):
        lost = ", ".join(f"{k} {v}" for k, v in sorted(f.get("outcome", {}).items()) if k != "caught")
        rows.append((f"{kind}: faults → scored → alert posted → notified (within 5 min)",
                     f"{f['faults']} → {f['scored_anomalous']} ({f['scored_anomalous_5m']}) → {f['alert_posted']} "
                     f"({f['alert_posted_5m']}) → {f['notified']} ({f['notified_5m']}); lost: {lost or '–'}"))
    fp = diag.get("false_pages") or {}
    if fp:
        by = lambda m: ", ".join(f"{k} {v}" for k, v in sorted(m.items())) or "–"  # noqa: E731
        rows.append(("false pages by rule; by detector", f"{by(fp.get('by_rule', {}))}; {by(fp.get('by_detector', {}))}"))
    rows.append(("run time, s", num(d["seconds"])))
    return rows


# === Kinds ===

@dataclass
class Kind:
    title: str
    area: str
    what: str
    command: str
    goal: str = ""
    summary: object = None
    pinned: dict = field(default_factory=dict)  # file name -> why it is the reference rather than the newest


VM2 = "the 2-vCPU development VM"
KINDS = {
    "promql_latency": Kind(
        "PromQL latency against VictoriaMetrics and Prometheus", "Store and queries",
        "The 24 panels of `bench/queries/dashboard.txt` as `query_range` at Grafana's steps over one day of a "
        "64-node cluster (`bench/lib/gen_lp.py`), loaded into every server; client time to the last byte, "
        "runs alternated. `promql_latency_runs` (below) pools several such runs.",
        "python3 bench/promql_latency.py --servers argus,vm,prom --reps 10 --argus-bin target/release/argus "
        "--out FILE.json",
        "every query's median and p99 at or under VictoriaMetrics'", s_promql_latency),
    "soak": Kind(
        "Soak: 30 minutes at 50,000 samples/s", "Store and queries",
        "`argus serve` with alertd and the analyzer at their defaults takes 500,000 series at 50,000 samples/s from "
        "four writers, dashboards at 2 queries/s and the whole alert storm, for 30 minutes; RSS every minute.",
        "python3 bench/soak.py --duration 30m --series 500000 --rate 50000 --warmup 5m --memory-limit 12GiB "
        "--argus-bin target/release/argus --work-dir /tmp/soak --out FILE.json",
        "errors 0 and RSS growth after the 5-minute warm-up under 5 %, at 50,000 samples/s", s_soak),
    "block-memory": Kind(
        "Blocks at fleet scale", "Store and queries",
        "500,000 series over 4 hours flushed and compacted, then the store reopened: RSS during the flush and after "
        "reopening, and label, series and range reads over the blocks, one build against another.",
        "python3 bench/block_memory.py --bin old=OLD_BIN --bin new=target/release/argus --series 500000 "
        "--repeat 3 --out FILE.json",
        "", s_block_memory),
    "alertd_throughput": Kind(
        "alertd intake against Alertmanager 0.25, 2 writers", "Alerting",
        "The whole storm (197,181 alerts in batches of 64) posted to `/api/v2/alerts` by keep-alive writers, "
        "each server pinned to one core, runs alternated.",
        "python3 bench/alertd_throughput.py --storm STORM.jsonl --repeat 3 --writers 2 "
        "--argus-bin target/release/argus --work-dir /tmp/tp2 --out FILE.json",
        "≥ 2× Alertmanager's on one saturated core", s_alertd_throughput),
    "alertd_throughput-4writers": Kind(
        "alertd intake against Alertmanager 0.25, 4 writers (one core saturated)", "Alerting",
        "As above with 4 writers, enough to keep each server's core busy: the condition the goal names.",
        "python3 bench/alertd_throughput.py --storm STORM.jsonl --repeat 3 --writers 4 "
        "--argus-bin target/release/argus --work-dir /tmp/tp4 --out FILE.json",
        "≥ 2× Alertmanager's on one saturated core", s_alertd_throughput),
    "storm_vs_alertmanager": Kind(
        "Alert storm side by side with Alertmanager 0.25", "Alerting",
        "The storm's first 24 hours sent live at 60× to Alertmanager (group_by host) and to alertd "
        "(config/alertd.yml, durations scaled alike), notifications scored by `bench/lib/score_storm.py`; alertd "
        "also replayed in virtual time.",
        "python3 bench/storm_vs_alertmanager.py --storm STORM.jsonl --hours 24 --speed 60 "
        "--argus-bin target/release/argus --work-dir /tmp/am60",
        "alertd sends fewer notifications than Alertmanager at equal or better recall", s_storm_vs_alertmanager),
    "alertd_failover": Kind(
        "alertd high availability: failover against Alertmanager's cluster", "Alerting",
        "The storm's first 7 hours at 10× to a 3-replica alertd cluster and a 3-replica Alertmanager 0.25 cluster, "
        "each beside a lone twin and a lone control fed the same stream; 20 SIGKILLs and one 2-minute SIGSTOP.",
        "python3 bench/alertd_failover.py --speed 10 --peer-timeout 1.5 --argus-bin target/release/argus",
        "0 notifications lost; duplicates ≤ 0.5 % and no more than Alertmanager's; a restarted replica ready "
        "only after merging its peers' state", s_alertd_failover),
    "alertd_failover-cpu": Kind(
        "alertd high availability: CPU of a replica without faults", "Alerting",
        "The failover bench without kills at 600×: CPU of each replica against a lone server (since measured at a "
        "load where alert work dominates by `alertd_replica_cpu`).",
        "python3 bench/alertd_failover.py --minutes 6 --speed 600 --kill-every 0 --isolate-at -1 "
        "--argus-bin target/release/argus",
        "CPU per replica ≤ 1.2× a lone server's", s_alertd_failover),
    "alertd_replica_cpu": Kind(
        "alertd high availability: CPU per alert of a replica", "Alerting",
        "The storm's first 50,000 alerts posted as fast as accepted to a 3-replica cluster and to lone servers, "
        "alternated; CPU per 1,000 alerts.",
        "python3 bench/alertd_replica_cpu.py --limit 50000 --argus-bin target/release/argus",
        "≤ 1.2× a lone server's CPU at the same load", s_alertd_replica_cpu),
    "alertd_rolling_upgrade": Kind(
        "alertd high availability: rolling upgrade", "Alerting",
        "Three replicas of an older release replaced one at a time by a newer one: one notification per alert and "
        "every silence on every replica in each round.",
        "python3 bench/alertd_rolling_upgrade.py --old-bin OLD_BIN --new-bin target/release/argus",
        "one notification per alert and silences shared in every round", s_alertd_rolling_upgrade),
    "collector_vs_node_exporter": Kind(
        "Collector against node_exporter 1.5", "Collector",
        "`argus collect` (host, disk, net; and with the gpu source on the fake NVML library's 8×H100 scenario) and "
        "node_exporter with the matching collectors, every 0.5 s; CPU per collection and per sample, RSS.",
        "python3 bench/collector_vs_node_exporter.py --argus-bin target/release/argus --gpu-scenario "
        "collector/tests/fixtures/nvml/h100x8.json --fake-nvml target/release/libargus_fake_nvml.so "
        "--dcgm-names-series --repeat 3 --seconds 75 --out FILE.json",
        "CPU per sample ≤ 0.5× node_exporter's on host, disk and net; the full GPU set within the same per-sample "
        "cost; RSS ≤ 25 MiB; ≤ 2,000 series per 8×H100 node", s_collector),
    "nab": Kind(
        "Analyzer: NAB (univariate)", "Analyzer",
        "The Numenta Anomaly Benchmark v1.1 corpus (58 files) scored with NAB's own method and threshold sweep; "
        "the headline is the split score (threshold chosen on one half, scored on the other).",
        "argus eval nab --data ../shared/data/nab --json FILE.json",
        "standard profile ≥ 75 as the split headline", s_nab),
    "ces": Kind(
        "Capacity: power decisions against Helios' CES", "Analyzer",
        "`argus simulate --demand` on Philly and the Helios Earth pools under the reactive, CES and forecast "
        "policies, CES's accounting (10-minute steps, the last 14 days), beside the peer's own run; each cell is "
        "powered-off node-hours / shortfall node-minutes / power-ups.",
        "bench/ces.sh",
        "the planner powers off ≥ CES's node-hours with ≤ half its shortfall, on Philly and every Helios pool, "
        "also with --boot 5m; CES reproduced within 1 % of the peer", s_ces),
    "storm_loo": Kind(
        "alertd storm parameters, leave one machine out", "Alerting",
        "alertd's storm parameters chosen on three SMD machines' storm and scored on the fourth, all four ways; "
        "the shipped defaults fixed by a rule stated in advance; further storms (SMD sent at 15 s / 1 m / 5 m, "
        "NAB, Helios with injected faults).",
        "python3 bench/storm_loo.py --replay target/release/argus --jobs 2; python3 bench/lib/storms/run.py "
        "--replay target/release/argus",
        "every fold ≥ 90 % fewer notifications at ≥ 95 % recall, precision ≥ 30 %, median delay within 1 minute "
        "of the raw alerts'", s_storm_loo),
    "spot": Kind(
        "Analyzer: SMD multivariate anomalies, alert levels by SPOT", "Analyzer",
        "The multivariate detector on the four SMD machines (train on train.csv, score test.csv), its alert level "
        "set by SPOT (peaks over threshold, the default); AUC-PR and F1 at its own threshold. Also NAB with SPOT on "
        "the univariate detector.",
        "argus eval anomaly --train ../shared/data/smd/MACHINE/train.csv --test ../shared/data/smd/MACHINE/test.csv "
        "--json FILE.json   # per machine; argus eval nab --data ../shared/data/nab",
        "mean AUC-PR ≥ 0.45; mean F1 at the detector's own threshold ≥ 0.45 on shared and unshared machines",
        s_spot),
    "iforest_vs_sklearn": Kind(
        "Analyzer: isolation forest against scikit-learn's", "Analyzer",
        "The plain isolation forest (100 trees, ψ = 256) on the four SMD machines, seeds alternated with "
        "scikit-learn's IsolationForest: fit+score time and AUC-ROC.",
        "python3 bench/iforest_vs_sklearn.py --bin target/release/examples/anomaly_eval --repeat 100 "
        "--out FILE.json",
        "time ≤ 0.5× scikit-learn's at equal or better AUC-ROC", s_iforest),
    "forecast-helios": Kind(
        "Analyzer: forecasting, Helios GPU demand", "Analyzer",
        "`argus eval forecast` on the Helios series (1-minute GPU demand): every model fitted on the first 80 %, "
        "the last 20 % scored with a rolling origin over a 15-minute horizon.",
        "argus eval forecast --input ../shared/data/forecast/helios_earth_8vc_gpu_demand_1m.csv --horizon 15m "
        "--json FILE.json",
        "selected MAE never worse than naive's and ≤ 0.85× on average over Helios and Philly; ≥ 95 % within "
        "±8 % at +15 min; the 80 % band covering 75–85 %", s_forecast),
    "forecast-philly": Kind(
        "Analyzer: forecasting, Philly active nodes", "Analyzer",
        "As for Helios, on the Philly trace's active nodes per minute.",
        "argus eval forecast --input ../shared/data/forecast/philly_active_nodes_1m.csv --horizon 15m "
        "--json FILE.json",
        "as for Helios", s_forecast),
    "fleet_sizing": Kind(
        "Fleet mode: sizing an H100 fleet", "Fleet mode",
        "16 synthetic 8×H100 nodes (`bench/lib/h100.py`): series per node, CPU and bytes per point against "
        "VictoriaMetrics over 2 hours of history, then live points and memory per series.",
        "python3 bench/fleet_sizing.py --nodes 16 --hours 2 --live-minutes 6 --argus-bin target/release/argus",
        "", s_fleet_sizing),
    "fleet_one_machine": Kind(
        "Fleet mode: 250 H100 nodes on one machine, and on VictoriaMetrics with 2+2 shards", "Fleet mode",
        "250 synthetic 8×H100 nodes (491,250 series) to the Argus store role and to VictoriaMetrics, with the "
        "default rules and analyzer all-in-one on Argus and as 2 rules + 2 analyzer shards on VictoriaMetrics; "
        "ten faults injected; store CPU, RSS, analyzer step time and whether both sides raise the same alerts.",
        "python3 bench/fleet_one_machine.py --nodes 250 --minutes 16 --skip-minutes 3 "
        "--argus-bin target/release/argus",
        "store CPU ≤ VictoriaMetrics'; store + analyzer RSS ≤ VictoriaMetrics' + 1 GiB; analyzer lag ≤ 10 s; the "
        "same alerts from every default rule and detector on both sides", s_fleet_one_machine),
    "fleet_rate_compare": Kind(
        "Fleet mode: `rate()` of both stores over the same counters", "Fleet mode",
        "After a fleet run (`bench/fleet_one_machine.py`), the same `rate()` and gauge queries to both stores, "
        "point by point: where the embedded store and VictoriaMetrics answer differently.",
        "", "", s_fleet_rate_compare),
    "shard_scaling": Kind(
        "Fleet mode: analyzer shards over 40,000 series", "Fleet mode",
        "1,600 hosts (40,000 series) in a store role; 1, 2 and 4 analyzer processes `--shard I/N` with the default "
        "rules; CPU of each shard over 4 minutes.",
        "python3 bench/shard_scaling.py --hosts 1600 --shards 1,2,4 --argus-bin target/release/argus",
        "per-shard CPU within 15 % of 1/N of one process's", s_shard_scaling),
    "store_pair": Kind(
        "Fleet mode: a store pair through a 10-minute outage", "Fleet mode",
        "Four collectors write to two store roles; one is SIGKILLed for 10 minutes and restarted; every series "
        "compared on both afterwards.",
        "python3 bench/store_pair.py --argus-bin target/release/argus",
        "0 samples missing on either store after the outage", s_store_pair),
    "retention_size": Kind(
        "Fleet mode: size-bounded retention through the server", "Fleet mode",
        "24 hours of 4 synthetic H100 nodes written in minutes into a store bounded at half of what the data "
        "needs (measured by a calibration run).",
        "python3 bench/retention_size.py --argus-bin target/release/argus",
        "stays under the bound while writing and once written; newest data queryable; no acknowledged sample "
        "younger than the drop boundary lost", s_retention_size),
    "pages": Kind("False pages and caught faults, shipped defaults", "Analyzer", "`argus eval pages`: GenAI, Helios and SMD telemetry with synthetic faults (seed 1) through the default analyzer rules and config/alertd.yml in virtual time; false pages per 1,000 series-days, faults notified within 5 minutes, and where the rest were lost (docs/eval-pages.md).", "bench/pages.sh", "≤ 1 false page per 1,000 series-days with ≥ 90 % of faults notified within 5 minutes", s_pages),
}
# Runs of one benchmark under another file prefix (the same measurement with other parameters).
ALIASES = {
    "alertd_failover-10x": "alertd_failover",
    "alertd_replica_cpu-one-lone": "alertd_replica_cpu",
    "fleet_one_machine-history": "fleet_one_machine",
}
# Commit and machine of runs whose records do not carry them, as bench/RESULTS.md recorded them.
LOGGED = {
    "promql_latency-2026-12-01-s15-prom.json": ("5d490ea (binary); run from 35ecb3f3", None),
    "alertd_throughput-2026-12-01.json": ("745455d", "a quiet 2-vCPU machine (AMD EPYC)"),
    "alertd_throughput-4writers-2026-12-01.json": ("745455d", "a quiet 2-vCPU machine (AMD EPYC)"),
    "storm_vs_alertmanager-2026-12-01.json": ("745455d", VM2),
    "alertd_failover-10x-2026-12-07-c.json": ("dd34031f", VM2),
    "alertd_failover-cpu-2026-12-06.json": (None, VM2),
    "alertd_replica_cpu-2026-12-07.json": ("86243ecb", VM2),
    "alertd_rolling_upgrade-2026-12-06.json": ("3236ecc5 → 86243ecb", VM2),
    "collector_vs_node_exporter-2026-12-07-s40.json": ("1afe54d4", None),
    "iforest_vs_sklearn-2026-12-01-100seeds.json": ("068a0bf", "a quiet 2-vCPU machine"),
    "forecast-helios-2026-12-01.json": ("745455d", "a quiet 2-vCPU machine, one core"),
    "forecast-philly-2026-12-01.json": ("745455d", "a quiet 2-vCPU machine, one core"),
    "fleet_sizing-2026-12-07.json": ("dd34031f", VM2),
    "fleet_one_machine-2026-12-07-s39.json": ("66f30fa1", VM2),
    "shard_scaling-2026-12-07-s39b.json": ("66f30fa1", VM2),
    "store_pair-2026-12-07.json": ("8a936530", VM2),
    "retention_size-2026-12-07-s38.json": ("92aaa6cf", None),
    "block-memory-2026-12-01.json": ("a9a7ccb (old) against main (new)", "2 cores, otherwise idle"),
    "nab-2026-12-01-s17.json": (None, None),
}


# === Rendering ===

def slug(text):
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def machine_of(run):
    d = run.data
    m = d.get("machine")
    if isinstance(m, dict):
        cpus = m.get("cpus")
        return f"{m.get('node', 'machine')}, {cpus} CPUs" if cpus else m.get("node")
    if isinstance(m, str):
        return m
    meta = d.get("meta")
    if isinstance(meta, dict) and meta.get("cpus"):
        return f"{meta['cpus']} CPUs, Linux {meta.get('kernel', '')}".strip()
    if d.get("nproc"):
        return f"{d['nproc']} CPUs"
    return LOGGED.get(run.file, (None, None))[1]


def commit_of(run):
    d = run.data
    for v in (d.get("commit"),):
        if isinstance(v, str) and v:
            return v
    return LOGGED.get(run.file, (None, None))[0]


def current_of(kind, runs):
    spec = KINDS.get(kind)
    for name, why in (spec.pinned.items() if spec else ()):
        for r in runs:
            if r.file == name:
                return r, f"pinned: {why}"
    newest = max(runs, key=lambda r: (r.stamp, r.file))
    return newest, "the newest"


def generic_rows(d):
    figures = d.get("figures")
    if isinstance(figures, dict):
        return [(k, exact(v)) for k, v in figures.items()]
    return [(f"`{k}`", exact(v)) for k, v in d.items()
            if k not in META_KEYS and (v is None or isinstance(v, (bool, int, float, str))) and len(str(v)) <= 200]


def describe(kind, run):
    """(title, area, what, command, goal) of a kind: the registry's, else the record's own fields."""
    d, spec = run.data, KINDS.get(kind)
    if spec:
        return spec.title, spec.area, spec.what, spec.command, spec.goal
    title = d.get("title") or kind
    area = d.get("area") if d.get("area") in AREAS else "Other"
    what = d.get("what") or script_summary(kind) or ""
    command = d.get("command") or ""
    if not command and isinstance(d.get("argv"), list):
        command = "python3 " + " ".join(str(a) for a in d["argv"])
    if not command and isinstance(d.get("commands"), dict):
        command = "; ".join(f"{v}" for _, v in sorted(d["commands"].items()))
    return title, area, what, command, d.get("goal") or ""


def script_summary(kind):
    """The first line of the docstring of bench/KIND.py, when such a script exists."""
    path = os.path.join(ROOT, "bench", kind.replace("-", "_") + ".py")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(4000)
    except OSError:
        return None
    m = re.search(r'"""(.+?)(?:\n\n|""")', text, re.S)
    return " ".join(m.group(1).split()) if m else None


def render_kind(kind, runs, out):
    run, why = current_of(kind, runs)
    title, _, what, command, goal = describe(kind, run)
    spec = KINDS.get(kind)
    out.append(f"### {title}")
    out.append("")
    if what:
        out.append(what)
        out.append("")
    link = f"[`{RESULTS}/{run.file}`](../{RESULTS}/{run.file})"
    count = "the only run" if len(runs) == 1 else f"{why}, of {len(runs)} runs"
    facts = [f"- **Current run:** {link} ({count})"]
    when = run.stamp + (" UTC" if " " in run.stamp else "")
    facts.append(f"- **Date:** {when or 'not recorded'}; **commit:** {commit_of(run) or 'not recorded'}; "
                 f"**machine:** {machine_of(run) or 'not recorded'}")
    if command:
        facts.append(f"- **Reproduce:** `{command}`")
    if goal:
        facts.append(f"- **Goal:** {goal}")
    if run.data.get("verdict") and not spec:
        facts.append(f"- **Verdict (as recorded):** {exact(run.data['verdict'])}")
    if run.data.get("source"):
        facts.append(f"- **Source:** {exact(run.data['source'])}")
    sibling = run.file[: -len(".json")] + ".md"
    if os.path.exists(os.path.join(ROOT, RESULTS, sibling)):
        facts.append(f"- **Tables of the run:** [`{RESULTS}/{sibling}`](../{RESULTS}/{sibling})")
    out.extend(facts)
    out.append("")
    try:
        rows = spec.summary(run.data) if spec and spec.summary else generic_rows(run.data)
    except (KeyError, TypeError, ValueError, ZeroDivisionError, StopIteration) as e:
        sys.exit(f"{RESULTS}/{run.file}: the {kind} summariser cannot read this record ({type(e).__name__}: {e})")
    if rows:
        out.append("| figure | value |")
        out.append("|---|---|")
        out.extend(f"| {cell(label)} | {cell(value)} |" for label, value in rows)
        out.append("")
    if run.data.get("notes"):
        out.append(exact(run.data["notes"]))
        out.append("")
    older = sorted((r for r in runs if r is not run), key=lambda r: (r.stamp, r.file), reverse=True)
    if older:
        out.append("Other runs: " + ", ".join(f"[{r.file}](../{RESULTS}/{r.file})" for r in older) + ".")
        out.append("")


def render(root):
    runs = load_runs(root)
    by_kind = {}
    for r in runs:
        by_kind.setdefault(r.kind, []).append(r)
    sections = {a: [] for a in AREAS}
    for kind in sorted(by_kind):
        run, _ = current_of(kind, by_kind[kind])
        title, area, *_ = describe(kind, run)
        sections[area].append((title.lower(), kind, title, run))
    out = [
        "# Performance",
        "",
        "<!-- Generated by bench/lib/performance.py from bench/results/*.json; do not edit by hand. -->",
        "",
        "The current figures of every Argus benchmark, each traceable to the raw record of the run it comes from. "
        f"This page is generated: `python3 bench/lib/performance.py` rewrites it from `{RESULTS}/`, and "
        "`python3 bench/lib/performance.py --check` (run by the test suite, `tests/it/performance_page.rs`) fails "
        "when it is not what the records give.",
        "",
        "- **One record per run.** A benchmark writes `bench/results/KIND-YYYY-MM-DD[-TAG].json`; records of one "
        "KIND are runs of one benchmark.",
        "- **Which run is current.** The newest: by the record's own `date` (or `started_utc`), else the date in "
        "its file name, ties broken by file name. A benchmark may pin another run as its reference; the page then "
        "says so and why. Every other run is linked below its figures.",
        "- **Figures** are the run's headline figures, picked from the record by a summariser per benchmark (medians "
        "and ratios rounded to 3 significant digits). A record without one is shown by its `figures` object, or "
        "its top-level values, as written.",
        "- **Records `…-from-log.json`** hold figures the project's former running log (`bench/RESULTS.md`) "
        "recorded in prose only, copied as written there, with its commit as `source`.",
        "- **Machines.** Most runs are on a 2-vCPU development VM shared with other work; each section names the "
        "machine where recorded. Compare figures only within one run: both sides of each comparison ran there, "
        "alternated.",
        "",
        "## Benchmarks",
        "",
        "| area | benchmark | current run | date |",
        "|---|---|---|---|",
    ]
    for area in AREAS:
        for _, kind, title, run in sorted(sections[area]):
            out.append(f"| {area} | [{title}](#{slug(title)}) | [{run.file}](../{RESULTS}/{run.file}) | "
                       f"{run.stamp} |")
    out.append("")
    for area in AREAS:
        if not sections[area]:
            continue
        out.append(f"## {area}")
        out.append("")
        for _, kind, _, _ in sorted(sections[area]):
            render_kind(kind, by_kind[kind], out)
    out += [
        "## History",
        "",
        "Until this page, results were kept as a running log of every benchmark session, `bench/RESULTS.md`: "
        "the variants tried and dropped, profiles, the runs before each change and why each figure moved. The log "
        f"up to this change is in git: `git show {HISTORY_COMMIT}:bench/RESULTS.md`. New results go in as records "
        "under `bench/results/` (bench/README.md says how).",
        "",
    ]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 with a diff when the page is stale")
    a = ap.parse_args()
    text = render(ROOT)
    page = os.path.join(ROOT, PAGE)
    if a.check:
        try:
            with open(page, encoding="utf-8") as f:
                old = f.read()
        except OSError as e:
            print(f"{PAGE}: cannot read it ({e}); run python3 bench/lib/performance.py", file=sys.stderr)
            return 1
        if old != text:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), text.splitlines(True),
                                                       f"{PAGE} (committed)", f"{PAGE} (from {RESULTS}/*.json)"))
            print(f"\n{PAGE} is not what {RESULTS}/*.json gives: run python3 bench/lib/performance.py",
                  file=sys.stderr)
            return 1
        return 0
    with open(page, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
