// The episode explorer in headless Chromium (scripts/check_explorer.sh installs what this needs and runs it).
// Usage: node scripts/check_explorer.js RUN_DIR SHOT_DIR LARGEST_EPISODE
// Checks every page of RUN_DIR/episodes: no script error, no request leaving the file, at most 5 MB, and the
// largest episode's page ready in under 2 s. Then, as a reader would: from report.html, the link of a finding a
// strategy masked opens the call point where it was masked, with the placeholder shown and the finding named
// gone; clicking a call point shows that strategy's request; ← → and the strategy picker move; the page fits
// 900 px. Screenshots at 1400 and 900 px go to SHOT_DIR.
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require(process.env.PLAYWRIGHT_CORE || "playwright-core");

const [runDir, shotDir, largest] = process.argv.slice(2);
const pagesDir = path.join(runDir, "episodes");
const url = (file, hash) => "file://" + path.resolve(file) + (hash ? "#" + hash : "");
const checks = [];
const check = (name, ok, detail) => {
  checks.push([name, !!ok, detail]);
  return ok;
};

(async () => {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  const remote = [];
  const open = async (file, hash, explorer = true) => {
    const page = await context.newPage();
    page.on("pageerror", (e) => errors.push(`${path.basename(file)}: ${e.message}`));
    page.on("request", (r) => { if (!r.url().startsWith("file:") && !r.url().startsWith("data:")) remote.push(r.url()); });
    const started = Date.now();
    await page.goto(url(file, hash), { waitUntil: "load" });
    if (explorer) await page.waitForFunction(() => document.body.dataset.ready === "1", null, { timeout: 10000 });
    return { page, ms: Date.now() - started };
  };

  // Every page: size, load, errors.
  const files = fs.readdirSync(pagesDir).filter((f) => f.endsWith(".html")).sort();
  check("episode pages written", files.length > 0, `${files.length} pages`);
  const sizes = [];
  for (const f of files) {
    const file = path.join(pagesDir, f);
    const bytes = fs.statSync(file).size;
    const { page, ms } = await open(file);
    const nav = await page.evaluate(() => {
      const n = performance.getEntriesByType("navigation")[0];
      return { load: n.loadEventEnd, dom: n.domContentLoadedEventEnd };
    });
    sizes.push({ f, bytes, ms, load: nav.load });
    await page.close();
  }
  const worst = sizes.find((s) => s.f === `${largest}.html`);
  check(`largest episode ${largest} has a page`, worst);
  if (worst) {
    check(`${largest}: at most 5 MB`, worst.bytes <= 5e6, `${(worst.bytes / 1e6).toFixed(2)} MB`);
    check(`${largest}: ready in under 2 s`, worst.ms < 2000, `${worst.ms} ms to ready, load event at ${worst.load.toFixed(0)} ms`);
  }
  check("every page at most 5 MB", sizes.every((s) => s.bytes <= 5e6), `largest ${(Math.max(...sizes.map((s) => s.bytes)) / 1e6).toFixed(2)} MB`);

  // From the report: a finding lost to masking, two clicks to its placeholder.
  const { page: report } = await open(path.join(runDir, "report.html"), "", false);
  const link = await report.evaluate(() => {
    for (const tr of document.querySelectorAll("tr")) {
      const cells = [...tr.children].map((c) => c.textContent);
      const a = tr.querySelector('a[href^="episodes/"]');
      if (a && cells.includes("masked")) return { href: a.getAttribute("href"), strategy: cells[0], finding: cells[2], episode: cells[1] };
    }
    return null;
  });
  if (check("report.html links a finding lost to masking to its page", link, link && `${link.strategy} lost ${link.finding} in ${link.episode}`)) {
    await Promise.all([report.waitForURL(/episodes\//), report.click(`a[href="${link.href}"]`)]);
    await report.waitForFunction(() => document.body.dataset.ready === "1");
    const at = await report.evaluate((finding) => {
      const cell = [...document.querySelectorAll("#request .cell.masked.now")]
        .find((c) => c.textContent.includes(`${finding} gone from here`));
      return {
        strategy: document.getElementById("strategy").selectedOptions[0].textContent,
        heading: document.querySelector("#detail h2").textContent,
        placeholder: cell ? cell.querySelector(".txt").textContent : null,
        visible: cell ? cell.getBoundingClientRect().top < window.innerHeight && cell.getBoundingClientRect().bottom > 0 : false,
        marked: document.querySelectorAll("#request .cell.base mark.focus").length,
      };
    }, link.finding);
    check("one click: the page opens at that strategy's call point where the finding was masked", at.strategy.startsWith(link.strategy) && at.placeholder,
      `${at.heading}; placeholder "${(at.placeholder || "").slice(0, 60)}"`);
    check("the masked item is in view, the finding's evidence marked in the baseline's item", at.visible && at.marked > 0, `${at.marked} marks`);
    // The screenshots: the page from its top, as it opened from the report's link.
    fs.mkdirSync(shotDir, { recursive: true });
    for (const width of [1400, 900]) {
      await report.setViewportSize({ width, height: 1700 });
      await report.evaluate(() => window.dispatchEvent(new Event("resize")));
      await report.waitForTimeout(100);
      await report.evaluate(() => window.scrollTo(0, 0));
      await report.screenshot({ path: path.join(shotDir, `explorer-${width}.png`) });
    }
    const overflow = await report.evaluate(() => document.documentElement.scrollWidth);
    check("fits 900 px (no page-wide horizontal scroll)", overflow <= 900, `${overflow} px wide`);
  }
  await report.close();

  // Clicking a call point of a timeline shows that strategy's request there; the keys and the picker move.
  if (link) {
    const file = path.join(pagesDir, link.href.split("#")[0].replace(/^episodes\//, ""));
    const { page } = await open(file);
    const lost = await page.evaluate((strategy) => {
      const d = JSON.parse(document.getElementById("data").textContent);
      const s = d.strategies.find((x) => x.name === strategy);
      const r = s.ledger.find((x) => !x[3] && x[4] >= 0 && x[5] === "masked");
      return r ? r[4] : null;
    }, link.strategy);
    await page.click(`.tl[data-strategy="${link.strategy}"] svg rect[data-step="${lost}"]`);
    const shown = await page.evaluate(() => ({
      heading: document.querySelector("#detail h2").textContent,
      strategy: document.getElementById("strategy").selectedOptions[0].textContent,
      masked: document.querySelectorAll("#request .cell.masked").length,
      gone: document.querySelectorAll("#detail .chip.gone").length,
      baseline: document.querySelectorAll("#request .cell.base").length,
    }));
    check("click a call point: that strategy's request beside the baseline's, a masked item, a lost finding marked",
      shown.heading.startsWith(`Call point ${lost} `) && shown.strategy.startsWith(link.strategy) && shown.masked > 0 && shown.gone > 0 && shown.baseline > 0,
      `${shown.heading}: ${shown.masked} masked items, ${shown.gone} findings not in the request`);
    await page.keyboard.press("ArrowRight");
    const next = await page.evaluate(() => document.querySelector("#detail h2").textContent);
    await page.keyboard.press("ArrowLeft");
    const back = await page.evaluate(() => document.querySelector("#detail h2").textContent);
    check("→ and ← move between call points", next.startsWith(`Call point ${lost + 1} `) && back.startsWith(`Call point ${lost} `));
    await page.selectOption("#strategy", { index: 0 });
    const picked = await page.evaluate(() => document.querySelector(".tl.sel").dataset.strategy);
    check("the strategy picker selects another strategy", picked !== link.strategy, `now ${picked}`);
    await page.close();
  }
  check("no script error", errors.length === 0, errors.slice(0, 3).join("; "));
  check("nothing fetched over the network", remote.length === 0, remote.slice(0, 3).join(", "));
  await browser.close();

  const failed = checks.filter((c) => !c[1]);
  for (const [name, ok, detail] of checks) console.log(`${ok ? "ok  " : "FAIL"} ${name}${detail ? `: ${detail}` : ""}`);
  console.log(`pages: ${sizes.map((s) => `${s.f} ${(s.bytes / 1e6).toFixed(2)} MB ${s.ms} ms`).join(", ")}`);
  process.exit(failed.length ? 1 : 0);
})().catch((e) => {
  console.error(e);
  process.exit(2);
});
