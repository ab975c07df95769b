// Drives the status page of a running `argus serve --demo` in headless Chromium (playwright-core):
// waits for the demo incident, acknowledges it, silences its firing alert, checks the charts are drawn
// and the capacity recommendations explained, and saves a screenshot. Called by tests/status_page.rs:
//   node e2e.cjs BASE_URL SCREENSHOT_PATH
// with PLAYWRIGHT_CORE (the installed package's directory) and CHROMIUM (the browser) in the
// environment. Prints one JSON line with what it did; exits non-zero with the reason on any failure.
"use strict";

const { chromium } = require(process.env.PLAYWRIGHT_CORE);

const [base, screenshot] = process.argv.slice(2);
const STEP_MS = 60000;

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM,
    headless: true,
    // The test suite runs as root in a container, where Chromium's sandbox cannot start.
    args: ["--no-sandbox", "--disable-dev-shm-usage"],
  });
  const result = {};
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const problems = [];
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    // Before the forecasters are configured, /api/v1/forecasts and /api/v1/capacity may answer 404, which
    // Chromium logs; the page says "no forecasts yet" then. Any other console error fails the test.
    const expected404 = /\/api\/v1\/(forecasts|capacity)$/;
    page.on("console", (m) => {
      if (m.type() !== "error") return;
      if (m.text().includes("404") && expected404.test(m.location().url || "")) return;
      problems.push(`console error: ${m.text()} (${m.location().url})`);
    });
    page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
    page.on("request", (r) => {
      if (!r.url().startsWith(base)) problems.push(`request outside the server: ${r.url()}`);
    });

    await page.goto(`${base}/`, { waitUntil: "load" });
    await page.waitForSelector("body[data-loaded=true]", { timeout: STEP_MS });
    result.banner = (await page.textContent("#demo-banner")).trim();
    if (!result.banner.startsWith("DEMO DATA")) throw new Error(`no demo banner: ${result.banner}`);

    // The incident, and acknowledging it.
    const row = page.locator("#incidents tr[data-incident]").first();
    await row.waitFor({ timeout: STEP_MS });
    result.incident = Number(await row.getAttribute("data-incident"));
    result.cause = (await row.locator("td").nth(2).textContent()).trim();
    await row.locator("button.ack").click();
    await page.waitForFunction(
      (id) => {
        const r = document.querySelector(`#incidents tr[data-incident="${id}"]`);
        return r && r.querySelector("td.acked").textContent.includes("status page") && !r.querySelector("button.ack");
      },
      result.incident,
      { timeout: STEP_MS },
    );

    // The firing anomaly alert, silenced for an hour.
    const alert = page.locator("#alerts tbody tr", { hasText: "AnomalyDetected" }).first();
    await alert.waitFor({ timeout: STEP_MS });
    result.alert_labels = (await alert.locator("td.labels").textContent()).trim();
    result.alert_fingerprint = await alert.getAttribute("data-fingerprint");
    await alert.locator("select.duration").selectOption("1h");
    await alert.locator("button.silence").click();
    await page.waitForSelector("#silences li[data-silence]", { timeout: STEP_MS });
    result.silence = await page.getAttribute("#silences li[data-silence]", "data-silence");
    await page.waitForFunction(
      (fp) => !document.querySelector(`#alerts tbody tr[data-fingerprint="${fp}"]`),
      result.alert_fingerprint,
      { timeout: STEP_MS },
    );

    // Charts: actual drawn against the expected band.
    await page.waitForSelector("#anomaly-charts svg.chart path.actual", { timeout: STEP_MS });
    result.charts = await page.$$eval("svg.chart", (svgs) =>
      svgs.map((s) => {
        const actual = s.querySelector("path.actual");
        const band = s.querySelector("path.band");
        return { actual_points: actual ? actual.getAttribute("d").split(/[ML]/).length - 1 : 0, band: !!band };
      }),
    );
    if (!result.charts.some((c) => c.actual_points > 10 && c.band)) {
      throw new Error(`no chart with an actual line and its expected band: ${JSON.stringify(result.charts)}`);
    }
    // Capacity: each pool's recommendation explained under its row, the rule by name and in a sentence.
    const explained = page.locator("#capacity tr.explain[data-rule]").first();
    await explained.waitFor({ timeout: 3 * STEP_MS });
    result.capacity = {
      pool: await explained.getAttribute("data-pool"),
      rule: await explained.getAttribute("data-rule"),
      at: await explained.getAttribute("data-at"),
      shown_rule: (await explained.locator("code.rule").textContent()).trim(),
      sentence: (await explained.locator(".sentence").textContent()).trim(),
      terms: (await explained.locator(".terms").textContent()).trim(),
      arithmetic: (await explained.locator("code.arithmetic").textContent()).trim(),
    };
    if (!/^[a-z_]+ (Recommend|Hold|Keep) \d+/.test(result.capacity.sentence)) {
      throw new Error(`no capacity sentence under the row: ${JSON.stringify(result.capacity)}`);
    }
    if (!result.capacity.arithmetic.includes("ceil(")) {
      throw new Error(`no arithmetic under the capacity row: ${JSON.stringify(result.capacity)}`);
    }
    result.forecasts_empty_text = await page.isVisible("#forecasts .empty");
    result.anomaly_rows = await page.locator("#anomalies tbody tr").count();
    result.notification_rows = await page.locator("#notifications tbody tr").count();
    result.error_bar = (await page.isVisible("#error")) ? (await page.textContent("#error")).trim() : "";

    await page.screenshot({ path: screenshot, fullPage: true });
    if (problems.length) throw new Error(problems.join("; "));
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(result));
}

main().catch((e) => {
  console.error(`status page e2e: ${e.stack || e}`);
  process.exit(1);
});
