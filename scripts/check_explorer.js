// The episode explorer in headless Chromium (scripts/check_explorer.sh installs what this needs and runs it).
// Usage: node scripts/check_explorer.js RUN_DIR SHOT_DIR LARGEST_EPISODE
// Checks every page of RUN_DIR/episodes: no script error, no request leaving the file, at most 5 MB, and the
// largest episode's page ready in under 2 s; on each, for every strategy, that the loss ledger's sentence
// matches its counts, that a loss mark (✕, ▼) is never under another mark, that the call point heading counts
// as the header does, that the page opens on a strategy that acted (when one did) with a request that is not
// one folded line, that the window and budget labels carry a halo, and that no limit label (window, trigger,
// floor, "fails here") is drawn over another, at 1400 and 900 px; report.html links every page. Then, as
// a reader would: from report.html, the link of a finding a strategy masked (or lost otherwise, on a run where
// nothing was masked) opens the call point where it left, the finding named gone; clicking a call point shows
// that strategy's request; ← → and the strategy picker move; the page fits 900 px. Screenshots at 1400 and
// 900 px go to SHOT_DIR: the page the report links (explorer-WIDTH.png) and the largest episode's
// (explorer-largest-WIDTH.png).
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

// What is wrong on the page it runs in (an episode page, ready), against the page's own data: each strategy's
// ledger sentence and its counts, the marks of its timeline (a loss on top of every mark it overlaps, one at each
// call point with a loss), the call point heading against the header's count, the first view (a strategy that
// acted, when one did; a request that is not one folded line), and the halo of the limit labels.
function pageProblems() {
  const out = [];
  const D = JSON.parse(document.getElementById("data").textContent);
  const N = D.points.length;
  const sub = document.querySelector(".sub").textContent;
  if (!sub.includes(`${N} call point${N === 1 ? "" : "s"} (numbered 0–${N - 1})`)) out.push(`header: ${sub}`);
  const heading = document.querySelector("#detail h2").textContent;
  if (!new RegExp(`^Call point \\d+ \\(of 0–${N - 1}\\)`).test(heading)) out.push(`heading: ${heading}`);
  // The first view.
  const base = D.strategies.findIndex((s) => s.baseline);
  const actedAt = (s) => s.steps.filter((x) => x[9] || x[4] || x[5] || x[6] || x[7]).length;
  const picked = document.getElementById("strategy").selectedIndex;
  if (!location.hash.includes("s=") && D.strategies.some((s, j) => j !== base && actedAt(s)) && !actedAt(D.strategies[picked])) {
    out.push(`opens on ${D.strategies[picked].name}, which never acted`);
  }
  if (!document.querySelectorAll("#request .cell:not(.empty)").length) out.push("the request opens as folded lines only");
  for (const t of document.querySelectorAll("svg.chart text.limit")) {
    if (t.getAttribute("paint-order") !== "stroke" || t.getAttribute("stroke") !== "#ffffff") out.push("a limit label without its halo");
  }
  // Each strategy: its ledger sentence, its marks.
  const picker = document.getElementById("strategy");
  D.strategies.forEach((s, j) => {
    if (j === base) return;
    picker.value = String(j);
    picker.dispatchEvent(new Event("change"));
    const lost = s.ledger.filter((r) => !r[3]).length;
    const none = document.getElementById("ledger-none");
    const rows = document.querySelectorAll("#ledger tr").length;
    if (none) {
      const text = none.textContent;
      const kept = (text.match(/\((\d+) needs? kept/) || [])[1];
      const ok = lost === 0 && (s.ledger.length === 0 ? /no need to lose/.test(text)
        : text.startsWith(`${s.name} lost no need`) && Number(kept) === s.ledger.length);
      if (!ok) out.push(`${s.name}: "${text}" with ${lost} of ${s.ledger.length} needs lost`);
    } else if (rows - 1 !== lost) {
      out.push(`${s.name}: the ledger lists ${rows - 1} rows for ${lost} needs lost`);
    }
    const svg = document.querySelector(`.tl[data-strategy="${CSS.escape(s.name)}"] svg`);
    const marks = [...svg.querySelectorAll("text.mark")];
    const box = (m) => m.getBBox();
    const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
    marks.forEach((m, i) => {
      if (!["lost", "left"].includes(m.dataset.mark)) return;
      const under = marks.slice(i + 1).find((o) => !["lost", "left"].includes(o.dataset.mark) && overlap(box(m), box(o)));
      if (under) out.push(`${s.name}: a ${m.dataset.mark} mark at call point ${m.dataset.step} under a ${under.dataset.mark} mark`);
    });
    for (const r of s.ledger.filter((x) => !x[3])) {
      if (!marks.some((m) => m.dataset.mark === "lost" && Number(m.dataset.step) === r[2])) out.push(`${s.name}: no ✕ at call point ${r[2]}`);
    }
  });
  return out;
}

// The labels of every timeline's limit lines (window, trigger or budget, floor) and "fails here", as drawn:
// none over another, each inside its chart. Returns the problems and how many charts have two labels or more.
function labelProblems() {
  const out = [];
  let crowded = 0;
  const overlap = (a, b) => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
  for (const svg of document.querySelectorAll("svg.chart")) {
    const name = svg.closest(".tl")?.dataset.strategy || "?";
    const width = svg.viewBox.baseVal.width;
    const texts = [...svg.querySelectorAll("text.limit, text.failed")];
    if (texts.length > 1) crowded++;
    const boxes = texts.map((t) => [t.textContent, t.getBBox()]);
    boxes.forEach(([label, b], i) => {
      if (b.x < 0 || b.x + b.width > width || b.y < 0) out.push(`${name}: "${label}" outside its chart`);
      for (const [other, o] of boxes.slice(i + 1)) if (overlap(b, o)) out.push(`${name}: "${label}" over "${other}"`);
    });
  }
  return { out, crowded };
}

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
  let labelCharts = 0;
  for (const f of files) {
    const file = path.join(pagesDir, f);
    const bytes = fs.statSync(file).size;
    const { page, ms } = await open(file);
    const nav = await page.evaluate(() => {
      const n = performance.getEntriesByType("navigation")[0];
      return { load: n.loadEventEnd, dom: n.domContentLoadedEventEnd };
    });
    sizes.push({ f, bytes, ms, load: nav.load });
    const bad = await page.evaluate(pageProblems);
    check(`${f}: ledger, marks, headings, first view and labels as the data says`, bad.length === 0, bad.slice(0, 4).join("; "));
    // The limit labels, at 1400 and 900 px (the timelines are drawn again at the new width).
    for (const width of [1400, 900]) {
      await page.setViewportSize({ width, height: 1000 });
      await page.evaluate(() => window.dispatchEvent(new Event("resize")));
      await page.waitForTimeout(50);
      const { out, crowded } = await page.evaluate(labelProblems);
      labelCharts += crowded;
      check(`${f}: no limit label over another at ${width} px`, out.length === 0, out.slice(0, 4).join("; ") || `${crowded} charts with two labels or more`);
    }
    await page.close();
  }
  // A page of some strategies (`show --strategies`) sits beside the page with every strategy, which keeps them all.
  for (const f of files.filter((x) => x.includes("+"))) {
    const full = f.slice(0, f.indexOf("+")) + ".html";
    const meta = (file) => {
      const m = fs.readFileSync(path.join(pagesDir, file), "utf8").match(/<meta name="ctxbench-page" content="([^"]*)">/);
      return m ? JSON.parse(m[1].replace(/&quot;/g, '"').replace(/&amp;/g, "&")) : null;
    };
    const [narrow, every] = [meta(f), files.includes(full) ? meta(full) : null];
    check(`${f}: beside ${full}, which still shows every strategy`, narrow && !narrow.every && every && every.every
      && every.strategies.length > narrow.strategies.length, every ? `${narrow.strategies.length} and ${every.strategies.length} strategies` : `${full} missing`);
  }
  // The largest episode's page as it opens, beside the screenshots of the page the report links.
  if (files.includes(`${largest}.html`)) {
    fs.mkdirSync(shotDir, { recursive: true });
    for (const width of [1400, 900]) {
      const { page } = await open(path.join(pagesDir, `${largest}.html`));
      await page.setViewportSize({ width, height: 1000 });
      await page.evaluate(() => window.dispatchEvent(new Event("resize")));
      await page.waitForTimeout(100);
      await page.screenshot({ path: path.join(shotDir, `explorer-largest-${width}.png`), fullPage: true });
      await page.close();
    }
  }
  const reportHtml = fs.readFileSync(path.join(runDir, "report.html"), "utf8");
  const unlinked = files.filter((f) => !reportHtml.includes(`href="episodes/${f}`));
  check("report.html links every page the run wrote", unlinked.length === 0, unlinked.join(", ") || `${files.length} pages`);
  const worst = sizes.find((s) => s.f === `${largest}.html`);
  check(`largest episode ${largest} has a page`, worst);
  if (worst) {
    check(`${largest}: at most 5 MB`, worst.bytes <= 5e6, `${(worst.bytes / 1e6).toFixed(2)} MB`);
    check(`${largest}: ready in under 2 s`, worst.ms < 2000, `${worst.ms} ms to ready, load event at ${worst.load.toFixed(0)} ms`);
  }
  console.log(`limit labels: ${labelCharts} timelines (at 1400 and 900 px) hold two labels or more, none over another`);
  check("every page at most 5 MB", sizes.every((s) => s.bytes <= 5e6), `largest ${(Math.max(...sizes.map((s) => s.bytes)) / 1e6).toFixed(2)} MB`);

  // From the report: a finding lost to masking, two clicks to its placeholder.
  const { page: report } = await open(path.join(runDir, "report.html"), "", false);
  // A finding lost to masking, else one lost otherwise (a run where nothing was masked).
  const link = await report.evaluate(() => {
    let other = null;
    for (const tr of document.querySelectorAll("tr")) {
      const cells = [...tr.children].map((c) => c.textContent);
      const a = tr.querySelector('a[href^="episodes/"]');
      if (!a || !a.getAttribute("href").includes("&f=")) continue;
      const found = { href: a.getAttribute("href"), strategy: cells[0], finding: cells[2], episode: cells[1], how: cells[5] };
      if (cells.includes("masked")) return found;
      other = other || found;
    }
    return other;
  });
  // Whether the report lists a finding lost (rows under "Findings lost most often", its header apart).
  const section = (fs.readFileSync(path.join(runDir, "report.md"), "utf8").split("## Findings lost most often")[1] || "").split("\n## ")[0];
  const lostAny = section.split("\n").filter((l) => l.startsWith("| ")).length > 1;
  check("report.html links a lost finding to its page (one lost to masking when there is one)", link || !lostAny,
    link ? `${link.strategy} lost ${link.finding} in ${link.episode} (${link.how})` : "no finding lost in this run");
  if (!link) {
    // Nothing lost: the screenshots are of the first page, as it opens.
    fs.mkdirSync(shotDir, { recursive: true });
    const { page } = await open(path.join(pagesDir, files.find((f) => !f.includes("+")) || files[0]));
    for (const width of [1400, 900]) {
      await page.setViewportSize({ width, height: 1700 });
      await page.evaluate(() => window.dispatchEvent(new Event("resize")));
      await page.waitForTimeout(100);
      await page.screenshot({ path: path.join(shotDir, `explorer-${width}.png`) });
    }
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    check("fits 900 px (no page-wide horizontal scroll)", overflow <= 900, `${overflow} px wide`);
    await page.close();
  }
  if (link) {
    await Promise.all([report.waitForURL(/episodes\//), report.click(`a[href="${link.href}"]`)]);
    await report.waitForFunction(() => document.body.dataset.ready === "1");
    const at = await report.evaluate((finding) => {
      const cell = [...document.querySelectorAll("#request .cell.now")]
        .find((c) => c.textContent.includes(`${finding} gone from here`));
      return {
        strategy: document.getElementById("strategy").selectedOptions[0].textContent,
        heading: document.querySelector("#detail h2").textContent,
        placeholder: cell ? cell.querySelector(".txt").textContent : null,
        visible: cell ? cell.getBoundingClientRect().top < window.innerHeight && cell.getBoundingClientRect().bottom > 0 : false,
        marked: document.querySelectorAll("#request .cell.base mark.focus").length,
      };
    }, link.finding);
    check(`one click: the page opens at that strategy's call point where the finding was ${link.how}`, at.strategy.startsWith(link.strategy) && at.placeholder,
      `${at.heading}; ${link.how === "masked" ? "placeholder" : "item"} "${(at.placeholder || "").slice(0, 60)}"`);
    check("the item it left is in view, the finding's evidence marked in the baseline's item", at.visible && at.marked > 0, `${at.marked} marks`);
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
    const lost = await page.evaluate(([strategy, how]) => {
      const d = JSON.parse(document.getElementById("data").textContent);
      const s = d.strategies.find((x) => x.name === strategy);
      const r = s.ledger.find((x) => !x[3] && x[4] >= 0 && x[5] === how) || s.ledger.find((x) => !x[3] && x[4] >= 0);
      return r ? r[4] : null;
    }, [link.strategy, link.how]);
    await page.click(`.tl[data-strategy="${link.strategy}"] svg rect[data-step="${lost}"]`);
    const shown = await page.evaluate(() => ({
      heading: document.querySelector("#detail h2").textContent,
      strategy: document.getElementById("strategy").selectedOptions[0].textContent,
      masked: document.querySelectorAll("#request .cell.masked").length,
      gone: document.querySelectorAll("#detail .chip.gone").length,
      baseline: document.querySelectorAll("#request .cell.base").length,
    }));
    check(`click a call point: that strategy's request beside the baseline's, ${link.how === "masked" ? "a masked item, " : ""}a lost finding marked`,
      shown.heading.startsWith(`Call point ${lost} `) && shown.strategy.startsWith(link.strategy) && (shown.masked > 0 || link.how !== "masked") && shown.gone > 0 && shown.baseline > 0,
      `${shown.heading}: ${shown.masked} masked items, ${shown.gone} findings not in the request`);
    // → then ←, or ← then → from the last call point.
    const points = await page.evaluate(() => JSON.parse(document.getElementById("data").textContent).points.length);
    if (points < 2) {
      check("→ and ← move between call points", true, "this episode has one call point: nothing to move to");
    } else {
      const [there, away] = lost + 1 < points ? ["ArrowRight", lost + 1] : ["ArrowLeft", lost - 1];
      await page.keyboard.press(there);
      const next = await page.evaluate(() => document.querySelector("#detail h2").textContent);
      await page.keyboard.press(there === "ArrowRight" ? "ArrowLeft" : "ArrowRight");
      const back = await page.evaluate(() => document.querySelector("#detail h2").textContent);
      check("→ and ← move between call points", next.startsWith(`Call point ${away} `) && back.startsWith(`Call point ${lost} `), `${next} and back`);
    }
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
