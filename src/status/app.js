// Argus status page: reads Argus' own APIs every few seconds and draws them. No framework, no build
// step. Data from the server is only ever set as text (textContent), never parsed as HTML.
"use strict";

const TOKEN_KEY = "argus.token";
const REFRESH_MS = 5000;
const SVG_NS = "http://www.w3.org/2000/svg";

// === the API ===

class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

async function api(path, options = {}) {
  const headers = Object.assign({ Accept: "application/json" }, options.headers || {});
  const token = localStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = "Bearer " + token;
  const r = await fetch(path, Object.assign({}, options, { headers }));
  let body = null;
  try {
    body = await r.json();
  } catch (_) {
    body = null;
  }
  if (!r.ok) {
    const why = (body && (body.error || body.message)) || r.statusText;
    throw new ApiError(r.status, `${options.method || "GET"} ${path.split("?")[0]}: ${r.status} ${why}`);
  }
  return body;
}

// The `data` of a Prometheus-style envelope; null where the endpoint does not exist (yet).
async function envelope(path) {
  try {
    const body = await api(path);
    return body && body.data !== undefined ? body.data : body;
  } catch (e) {
    if (e.status === 404) return null;
    throw e;
  }
}

function postJson(path, value) {
  return api(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(value) });
}

// === small DOM helpers ===

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function svg(tag, attrs = {}) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  return e;
}

function fill(section, rows) {
  const tbody = document.querySelector(`#${section} tbody`);
  tbody.replaceChildren(...rows);
  document.querySelector(`#${section} .empty`).hidden = rows.length > 0;
}

function time(t) {
  if (t === null || t === undefined) return "";
  const d = typeof t === "number" ? new Date(t) : new Date(t);
  if (isNaN(d) || d.getFullYear() < 1971) return "";
  return d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
}

function num(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "";
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
  if (a >= 1e3) return (v / 1e3).toFixed(1) + "k";
  if (a >= 10 || a === 0) return v.toFixed(1);
  return v.toPrecision(3);
}

function labelText(labels, skip = []) {
  return Object.entries(labels || {})
    .filter(([k]) => !skip.includes(k))
    .map(([k, v]) => `${k}="${v}"`)
    .join(", ");
}

// A PromQL selector for a metric and its labels (JSON string escapes are valid PromQL escapes).
function selector(metric, labels) {
  const m = Object.entries(labels || {})
    .filter(([k]) => k !== "__name__")
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `${metric}{${m.join(",")}}`;
}

let lastError = "";
function showError(msg) {
  const e = document.getElementById("error");
  e.textContent = msg;
  e.hidden = !msg;
  lastError = msg;
}

// === sections ===

async function loadIncidents() {
  const rows = (await envelope("/api/v1/incidents?limit=20")) || [];
  fill(
    "incidents",
    rows.map((i) => {
      const ack = i.acknowledged;
      const button = el("button", { class: "ack", "data-id": i.id, onclick: () => acknowledge(i.id) }, "Acknowledge");
      return el(
        "tr",
        { "data-incident": i.id },
        el("td", {}, i.id),
        el("td", {}, time(i.openedAt)),
        el("td", {}, i.probableCause || i.causeAlert || ""),
        el("td", { class: "num" }, i.alerts),
        el("td", { class: i.status === "firing" ? "firing" : "" }, i.status),
        el("td", { class: "acked" }, ack ? `${ack.by || "someone"} at ${time(ack.at)}` : ""),
        el("td", {}, ack ? "" : button),
      );
    }),
  );
}

async function acknowledge(id) {
  try {
    await postJson(`/api/v1/incidents/${id}/ack`, { by: "status page", comment: "acknowledged from the status page" });
    await refresh();
  } catch (e) {
    showError(e.message);
  }
}

async function loadAlerts() {
  const alerts = (await api("/api/v2/alerts?active=true&silenced=false&inhibited=false")) || [];
  fill(
    "alerts",
    alerts.map((a) => {
      const choice = el(
        "select",
        { class: "duration", "aria-label": "silence duration" },
        el("option", { value: "30m" }, "30 min"),
        el("option", { value: "1h", selected: "" }, "1 hour"),
        el("option", { value: "4h" }, "4 hours"),
        el("option", { value: "24h" }, "1 day"),
        el("option", { value: "resolved" }, "until resolved"),
      );
      const button = el("button", { class: "silence", onclick: () => silence(a.labels, choice.value) }, "Silence");
      return el(
        "tr",
        { "data-fingerprint": a.fingerprint || "" },
        el("td", { class: "firing" }, a.labels.alertname || ""),
        el("td", { class: "labels" }, labelText(a.labels, ["alertname"])),
        el("td", {}, time(a.startsAt)),
        el("td", {}, choice, " ", button),
      );
    }),
  );
  const silences = ((await api("/api/v2/silences")) || []).filter((s) => s.status && s.status.state === "active");
  document.getElementById("silences").replaceChildren(
    ...(silences.length
      ? silences.map((s) =>
          el(
            "li",
            { class: "labels", "data-silence": s.id },
            s.matchers.map((m) => `${m.name}${m.isEqual === false ? "!" : ""}${m.isRegex ? "=~" : "="}"${m.value}"`).join(", "),
            s.untilResolved ? ` until resolved (${s.createdBy})` : ` until ${time(s.endsAt)} (${s.createdBy})`,
          ),
        )
      : [el("li", { class: "muted" }, "none")]),
  );
}

// Why a firing alert is not being notified, one line per reason that holds it now
// (`GET /api/v1/suppressed`). An alert already notified and waiting for its repeat is not listed.
function heldWhy(r) {
  const where = r.integration || r.receiver;
  switch (r.reason) {
    case "silenced":
      return "silenced by " + r.silences.map((s) => `${s.id} (${s.createdBy}: ${s.comment})`).join(", ");
    case "inhibited":
      return r.rules
        .map((x) => `inhibited by rule ${x.rule} (${x.sourceMatchers.join(", ")}) through ${x.alerts.map((a) => labelText(a.labels)).join("; ")}`)
        .join("; ");
    case "flapping":
      return `flapping: ${r.changes} state changes (${r.threshold} within ${r.windowSeconds}s), released ${r.settleSeconds}s after the last`;
    case "storm":
      return `storm control on ${where}: at most ${r.maxMessages} per ${r.perSeconds}s, ${r.waiting} waiting to go out as one message`;
    case "grouped": {
      const incident = r.incident !== undefined ? ` of incident ${r.incident}` : "";
      const burst = r.timer === "backoff" ? ` (${r.newAlerts} new alerts, ${r.needed} needed)` : "";
      return `waiting for ${r.timer}${incident}${burst} on route ${r.route} to ${r.receiver}`;
    }
    case "time_interval":
      return `${r.field} of route ${r.route}: ${r.intervals.join(", ")}`;
    case "delivery":
      return `delivery to ${where} ${r.gaveUp ? "gave up" : "failing"} after ${r.attempts} attempts: ${r.error}`;
    default:
      return r.reason;
  }
}

async function loadHeld() {
  let alerts;
  try {
    alerts = (await envelope("/api/v1/suppressed")) || [];
  } catch (e) {
    if (e.status !== 401 && e.status !== 403) throw e;
    fill("held", []);
    document.querySelector("#held .empty").textContent = `Not shown: ${e.message}.`;
    return;
  }
  const rows = [];
  for (const a of alerts) {
    if (a.state !== "firing") continue;
    const open = a.reasons.filter((r) => !r.endedAt && !(r.reason === "grouped" && r.timer === "repeat_interval"));
    for (const r of open) {
      rows.push(
        el(
          "tr",
          { "data-fingerprint": a.fingerprint, "data-reason": r.reason },
          el("td", { class: "firing" }, a.labels.alertname || ""),
          el("td", { class: "labels" }, labelText(a.labels, ["alertname"])),
          el("td", {}, heldWhy(r)),
          el("td", {}, time(r.since)),
          el("td", {}, r.until ? time(r.until) : ""),
        ),
      );
    }
  }
  fill("held", rows);
  document.querySelector("#held .empty").textContent = "No firing alert is held back.";
}

const DURATIONS = { "30m": 30 * 60e3, "1h": 3600e3, "4h": 4 * 3600e3, "24h": 24 * 3600e3 };

async function silence(labels, duration) {
  const now = Date.now();
  const matchers = Object.entries(labels).map(([name, value]) => ({ name, value, isRegex: false, isEqual: true }));
  // "until resolved": alertd ends the silence once the alert has resolved.
  const body =
    duration === "resolved"
      ? { untilResolved: true, comment: "silenced until resolved from the status page" }
      : {
          endsAt: new Date(now + (DURATIONS[duration] || 3600e3)).toISOString(),
          comment: `silenced for ${duration} from the status page`,
        };
  try {
    await postJson("/api/v2/silences", {
      matchers,
      startsAt: new Date(now).toISOString(),
      createdBy: "status page",
      ...body,
    });
    await refresh();
  } catch (e) {
    showError(e.message);
  }
}

async function loadAnomalies() {
  const rows = (await envelope("/api/v1/anomalies?limit=10")) || [];
  fill(
    "anomalies",
    rows.map((f) =>
      el(
        "tr",
        {},
        el("td", { class: "num " + (f.score > 1 ? "score-high" : "") }, f.score.toFixed(2)),
        el("td", {}, f.metric),
        el("td", { class: "labels" }, labelText(f.labels, ["__name__"])),
        el("td", { class: "num" }, num(f.value)),
        el("td", { class: "num" }, f.expected === null || f.expected === undefined ? "" : num(f.expected)),
        el("td", {}, f.firing_since ? time(f.firing_since) : ""),
      ),
    ),
  );
  // Actual against the analyzer's expected band, for the two most anomalous series.
  const end = Date.now() / 1000;
  const charts = await Promise.all(
    rows.slice(0, 2).map(async (f) => {
      const labels = Object.assign({}, f.labels);
      delete labels.__name__;
      // The analyzer's band series carry the detector as `model`, in place of a series' own `model`.
      const bandLabels = Object.assign({}, labels, { metric: f.metric });
      delete bandLabels.model;
      const [actual, lower, upper] = await Promise.all([
        range(selector(f.metric, labels), end - 3600, end),
        range(selector("argus_yhat_lower", bandLabels), end - 3600, end),
        range(selector("argus_yhat_upper", bandLabels), end - 3600, end),
      ]);
      return chart(`${f.metric} ${labelText(labels, ["cluster", "demo"])}`, {
        actual: actual[0] || [],
        band: lower[0] && upper[0] ? zipBand(lower[0], upper[0]) : [],
        legend: ["actual", "expected band"],
      });
    }),
  );
  document.getElementById("anomaly-charts").replaceChildren(...charts);
}

// One range query's series as [[t_seconds, value]] lists.
async function range(query, start, end) {
  const step = Math.max(15, Math.round((end - start) / 240));
  const q = `/api/v1/query_range?query=${encodeURIComponent(query)}&start=${start}&end=${end}&step=${step}`;
  const data = await envelope(q);
  return ((data && data.result) || []).map((s) => s.values.map(([t, v]) => [t, parseFloat(v)]));
}

function zipBand(lower, upper) {
  const up = new Map(upper.map(([t, v]) => [t, v]));
  return lower.filter(([t]) => up.has(t)).map(([t, lo]) => [t, lo, up.get(t)]);
}

async function loadForecasts() {
  let data = null;
  try {
    data = await envelope("/api/v1/forecasts");
  } catch (e) {
    data = null; // an analyzer without forecasters answers with an error: nothing to show yet
  }
  const forecasts = Array.isArray(data) ? data.filter((f) => f.points && f.points.length) : [];
  const charts = forecasts.length ? [] : await forecastsFromSeries();
  document.querySelector("#forecasts .empty").hidden = forecasts.length + charts.length > 0;
  charts.push(...await Promise.all(
    forecasts.slice(0, 4).map(async (f) => {
      const last = f.points[f.points.length - 1].t;
      const start = f.made_at - 3 * 3600;
      const actual = (await range(selector(f.metric, f.labels), start, Math.min(Date.now() / 1000, last)))[0] || [];
      const caption =
        `${f.metric} ${labelText(f.labels, ["cluster", "demo"])} · ${f.model}` +
        (f.backtest ? ` · MAE ${num(f.backtest.mae)} (naive ${num(f.backtest.naive_mae)})` : "");
      return chart(caption, {
        actual,
        yhat: f.points.map((p) => [p.t, p.yhat]),
        band: f.points.filter((p) => p.lower !== undefined && p.upper !== undefined).map((p) => [p.t, p.lower, p.upper]),
        now: f.made_at,
        legend: ["actual", "forecast", "band"],
      });
    }),
  ));
  document.getElementById("forecast-charts").replaceChildren(...charts);
}

// Without the forecasts API: the analyzer's `argus_yhat{horizon="15m"}` series (each point the forecast
// for 15 minutes after its time), drawn where it lands against the actual series.
async function forecastsFromSeries() {
  const end = Date.now() / 1000;
  const data = await envelope(`/api/v1/query?query=${encodeURIComponent('argus_yhat{horizon="15m"}')}`);
  const series = ((data && data.result) || []).slice(0, 4);
  return Promise.all(
    series.map(async (s) => {
      const own = Object.assign({}, s.metric);
      delete own.__name__;
      // The target's labels: without the forecast's own, and without `model`, which the forecast reuses.
      const labels = Object.assign({}, own);
      const metric = labels.metric;
      for (const k of ["metric", "model", "horizon"]) delete labels[k];
      const [actual, yhat] = await Promise.all([
        range(selector(metric, labels), end - 3 * 3600, end),
        range(selector("argus_yhat", own), end - 3 * 3600, end),
      ]);
      return chart(`${metric} ${labelText(labels, ["cluster", "demo"])} · ${own.model || ""} · 15 min ahead`, {
        actual: actual[0] || [],
        yhat: (yhat[0] || []).map(([t, v]) => [t + 900, v]),
        now: end,
        legend: ["actual", "forecast"],
      });
    }),
  );
}

async function loadCapacity() {
  let data = null;
  try {
    data = await envelope("/api/v1/capacity");
  } catch (e) {
    data = null;
  }
  const rows = Array.isArray(data) ? data : await capacityFromSeries();
  fill(
    "capacity",
    rows.flatMap((r) => {
      const row = el(
        "tr",
        { "data-pool": r.pool ?? "" },
        el("td", {}, r.pool ?? ""),
        el("td", { class: "num" }, r.current ?? ""),
        el("td", { class: "num" }, num(r.demand)),
        el("td", { class: "num" }, num(r.forecast_upper)),
        el("td", { class: "num" }, r.desired ?? ""),
        el("td", { class: "num" }, r.recommended ?? ""),
        el("td", {}, typeof r.action === "string" ? r.action : JSON.stringify(r.action)),
      );
      const e = r.explanation;
      if (!e || typeof e !== "object") return [row];
      return [row, capacityExplanation(r, e)];
    }),
  );
}

// One recommendation's explanation under its row: the rule and its sentence, the terms it used, and
// the arithmetic on demand.
function capacityExplanation(r, e) {
  const pct = (x) => `${+(x * 100).toFixed(1)}%`;
  const f = e.forecast;
  const forecast = f
    ? `forecast peak ${num(f.upper)} at ${time(f.at_ms)} (band ${num(f.lower)}–${num(f.upper)}, mean ${num(f.mean)}; ${f.model}, ${dur(f.horizon_seconds)} ahead)`
    : `forecast peak ${num(r.forecast_upper)}`;
  const split = e.low_priority_split
    ? `low-priority peak ${num(e.low_priority_peak)}, critical ${num(e.critical_peak)}`
    : "no low-priority split (all demand counted as low priority)";
  const bounds = e.clamped
    ? `; ${e.clamped === "min" ? "raised to min_capacity" : "cut to max_capacity"} ${r.desired}`
    : "";
  const next = (t) => (t === null || t === undefined || t <= r.timestamp_ms ? "now" : time(t));
  const terms = [
    `demand now ${num(e.demand_now)}`,
    forecast,
    `target utilisation ${pct(e.target_utilization)}`,
    `reserved ${pct(e.reserve_fraction)}, ${split}`,
    `wanted ${e.wanted}${bounds}`,
    `cooldowns up ${dur(e.scale_up_cooldown_seconds)}, down ${dur(e.scale_down_cooldown_seconds)}, margin ${pct(e.scale_down_margin)}`,
    `next scale-up ${next(e.next_scale_up_ms)}, scale-down ${next(e.next_scale_down_ms)}`,
  ].join(" · ");
  return el(
    "tr",
    { class: "explain", "data-pool": r.pool ?? "", "data-rule": e.rule, "data-at": r.timestamp_ms ?? "" },
    el(
      "td",
      { colspan: "7" },
      el("div", { class: "sentence" }, el("code", { class: "rule" }, e.rule), " ", e.sentence),
      el("div", { class: "terms muted" }, terms),
      el("details", {}, el("summary", { class: "muted" }, "arithmetic"), el("code", { class: "arithmetic" }, e.arithmetic)),
    ),
  );
}

// Seconds as `90s`, `15m`, `1h30m`.
function dur(seconds) {
  if (seconds === null || seconds === undefined || Number.isNaN(seconds)) return "";
  let s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  s %= 60;
  return [h ? `${h}h` : "", m ? `${m}m` : "", s || (!h && !m) ? `${s}s` : ""].join("");
}

// Without the capacity API: the latest `argus_capacity_*` series, one row per pool.
async function capacityFromSeries() {
  const q = '{__name__=~"argus_capacity_(current|demand|forecast_upper|desired|recommended)"}';
  const data = await envelope(`/api/v1/query?query=${encodeURIComponent(q)}`);
  const pools = new Map();
  for (const s of (data && data.result) || []) {
    const pool = s.metric.pool || "";
    if (!pools.has(pool)) pools.set(pool, { pool, action: "" });
    pools.get(pool)[s.metric.__name__.replace("argus_capacity_", "")] = parseFloat(s.value[1]);
  }
  return [...pools.values()];
}

async function loadNotifications() {
  const rows = (await envelope("/api/v1/notifications?limit=10")) || [];
  fill(
    "notifications",
    rows.map((n) =>
      el(
        "tr",
        {},
        el("td", {}, time(n.at)),
        el("td", {}, `${n.receiver} (${n.integration})`),
        el("td", { class: n.status === "firing" ? "firing" : "" }, n.status),
        el("td", { class: "num" }, n.alerts),
        el("td", {}, n.incidentId === null || n.incidentId === undefined ? "" : n.incidentId),
      ),
    ),
  );
}

async function loadDemo() {
  const banner = document.getElementById("demo-banner");
  const d = await envelope("/api/v1/demo");
  if (!d) {
    banner.hidden = true;
    return;
  }
  banner.textContent =
    `DEMO DATA: real GPU-cluster traces replayed as cluster="${d.cluster}" (every series labelled ${d.label}). ` +
    `GPU ${d.fault.gpu} on ${d.fault.host} fails at ${time(d.fault.at * 1000)}. ` +
    `Notifications are logged to ${d.notification_log} (${d.notifications_received} received).`;
  banner.hidden = false;
}

// === charts: hand-drawn SVG ===

// series: {actual: [[t, v]], yhat: [[t, v]], band: [[t, lo, hi]], now: t, legend: [names]}
function chart(caption, series) {
  const W = 360,
    H = 150,
    L = 44,
    R = 8,
    T = 8,
    B = 20;
  const all = [];
  for (const [t, v] of series.actual || []) all.push([t, v]);
  for (const [t, v] of series.yhat || []) all.push([t, v]);
  for (const [t, lo, hi] of series.band || []) all.push([t, lo], [t, hi]);
  const finite = all.filter(([t, v]) => Number.isFinite(t) && Number.isFinite(v));
  const box = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": caption });
  if (finite.length === 0) {
    const t = svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" });
    t.textContent = "no data in range";
    box.append(t);
  } else {
    let [t0, t1] = [Math.min(...finite.map((p) => p[0])), Math.max(...finite.map((p) => p[0]))];
    let [v0, v1] = [Math.min(...finite.map((p) => p[1])), Math.max(...finite.map((p) => p[1]))];
    if (t1 === t0) t1 = t0 + 1;
    if (v1 === v0) [v0, v1] = [v0 - 1, v1 + 1];
    const pad = (v1 - v0) * 0.05;
    [v0, v1] = [v0 - pad, v1 + pad];
    const x = (t) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
    const y = (v) => T + (1 - (v - v0) / (v1 - v0)) * (H - T - B);
    const path = (pts) => pts.map(([t, v], i) => `${i ? "L" : "M"}${x(t).toFixed(1)},${y(v).toFixed(1)}`).join("");
    for (const [v, anchor] of [
      [v1, T + 8],
      [v0, H - B],
    ]) {
      const t = svg("text", { x: L - 4, y: anchor, "text-anchor": "end" });
      t.textContent = num(v);
      box.append(t);
    }
    for (const [tt, anchor] of [
      [t0, "start"],
      [t1, "end"],
    ]) {
      const t = svg("text", { x: x(tt), y: H - 6, "text-anchor": anchor });
      t.textContent = time(tt * 1000);
      box.append(t);
    }
    box.append(svg("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#dfe3ea" }));
    box.append(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#dfe3ea" }));
    const band = (series.band || []).filter(([, lo, hi]) => Number.isFinite(lo) && Number.isFinite(hi));
    if (band.length > 1) {
      const upper = band.map(([t, , hi]) => [t, hi]);
      const lower = band.map(([t, lo]) => [t, lo]).reverse();
      box.append(svg("path", { class: "band", d: path(upper) + path(lower).replace(/^M/, "L") + "Z" }));
    }
    if (series.now) box.append(svg("line", { class: "now", x1: x(series.now), y1: T, x2: x(series.now), y2: H - B }));
    if ((series.yhat || []).length > 1) box.append(svg("path", { class: "yhat", d: path(series.yhat) }));
    if ((series.actual || []).length > 0) box.append(svg("path", { class: "actual", d: path(series.actual) }));
  }
  const legend = el("div", { class: "legend" });
  const names = series.legend || [];
  if (names[0]) legend.append(el("span", { class: "l-actual" }, names[0]));
  if (names[1]) legend.append(el("span", { class: "l-yhat" }, names[1]));
  if (names[2]) legend.append(el("span", { class: "l-yhat" }, names[2]));
  return el("figure", { class: "chart-figure" }, el("figcaption", {}, caption), box, legend);
}

// === the token ===

function showTokenState() {
  const saved = localStorage.getItem(TOKEN_KEY);
  // The token itself is never shown again once saved.
  document.getElementById("token-state").textContent = saved ? "token saved" : "no token";
  document.getElementById("token").value = "";
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const v = document.getElementById("token").value.trim();
  if (v) localStorage.setItem(TOKEN_KEY, v);
  showTokenState();
  refresh();
});

document.getElementById("token-clear").addEventListener("click", () => {
  localStorage.removeItem(TOKEN_KEY);
  showTokenState();
  refresh();
});

// === alertd cluster ===

// This replica's cluster (`GET /api/v2/status`): its name, state and live peers; hidden when alertd
// runs alone or not in this process.
async function loadCluster() {
  const span = document.getElementById("cluster");
  let status = null;
  try {
    status = await api("/api/v2/status");
  } catch (e) {
    if (e.status === 404) status = null;
    else throw e;
  }
  const c = status && status.cluster;
  if (!c || c.status === "disabled") {
    span.hidden = true;
    return;
  }
  const peers = c.peers.map((p) => `${p.name} (${p.address})`).join(", ") || "none reached";
  span.textContent = `alertd cluster: ${c.name}, ${c.status}; peers: ${peers}`;
  span.hidden = false;
}

// === refresh ===

let running = false;
async function refresh() {
  if (running) return;
  running = true;
  try {
    const results = await Promise.allSettled([
      loadDemo(),
      loadIncidents(),
      loadAlerts(),
      loadHeld(),
      loadAnomalies(),
      loadForecasts(),
      loadCapacity(),
      loadNotifications(),
      loadCluster(),
    ]);
    const failed = results.filter((r) => r.status === "rejected").map((r) => r.reason);
    const auth = failed.find((e) => e.status === 401 || e.status === 403);
    if (auth) showError(`${auth.message}. Enter an API token with the read scope (admin to acknowledge and silence).`);
    else if (failed.length) showError(failed.map((e) => e.message).join("; "));
    else if (lastError) showError("");
    document.getElementById("updated").textContent = `updated ${time(Date.now())}`;
    document.body.dataset.loaded = "true";
  } finally {
    running = false;
  }
}

showTokenState();
refresh();
setInterval(refresh, REFRESH_MS);
