// ctxbench episode explorer: draws the page from the JSON in #data (see src/report/explorer/mod.rs for its
// layout). No network: everything is in this file.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  const S = D.strategies;
  const N = D.points.length;
  const KEPT = 0, MASKED = 1, TRUNCATED = 2, REWRITTEN = 3; // then dropped, summarized, removed: gone
  const STATE_CLASS = ["kept", "masked", "truncated", "rewritten", "gone", "gone", "gone"];
  // What a strategy did at a call point: [name, index in a step, colour] (colours of the report's palette that
  // no item type uses).
  const ACTIONS = [["masked", 4, "#003f88"], ["truncated", 5, "#b8860b"], ["dropped", 6, "#222222"],
    ["summarized", 7, "#e377c2"]];
  const fmt = (n) => Number(n).toLocaleString("en-US");

  // --- indexes -------------------------------------------------------------------------------------------
  const baseline = Math.max(0, S.findIndex((s) => s.baseline));
  for (const s of S) {
    s.hist = new Map(s.items.map(([i, ts]) => [i, ts]));
    s.lostSteps = new Map(); // step -> [ledger rows lost there]
    for (const r of s.ledger) {
      if (!r[3] && r[4] >= 0) {
        if (!s.lostSteps.has(r[4])) s.lostSteps.set(r[4], []);
        s.lostSteps.get(r[4]).push(r);
      }
    }
  }
  const marksOf = new Map(); // text -> [[finding, start, end]]
  for (const [t, f, a, b] of D.marks) {
    if (!marksOf.has(t)) marksOf.set(t, []);
    marksOf.get(t).push([f, a, b]);
  }
  const findingStep = D.findings.map((f) => {
    const k = D.points.findIndex((at) => at > f.at);
    return k < 0 ? N : k;
  });
  const holders = D.findings.map(() => []); // episode items whose recorded text holds the finding
  D.items.forEach((it, i) => {
    for (const [f] of marksOf.get(it[2]) || []) if (!holders[f].includes(i)) holders[f].push(i);
  });

  // --- state ---------------------------------------------------------------------------------------------
  const st = { s: S.findIndex((s, j) => j !== baseline), k: N - 1, f: -1, open: new Set() };
  if (st.s < 0) st.s = baseline;
  // Where a strategy acted: the call points where it changed the request.
  const acted = (s) => s.steps.map((x, k) => (x[9] || ACTIONS.some(([, at]) => x[at] > 0) ? k : -1)).filter((k) => k >= 0);

  function el(tag, attrs, ...kids) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else if (v !== null && v !== undefined && v !== false) e.setAttribute(k, v);
    }
    for (const kid of kids.flat()) if (kid !== null && kid !== undefined) e.append(kid);
    return e;
  }
  const svgEl = (tag, attrs) => {
    const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    return e;
  };

  // The state of item i in strategy s at call point k: [state, text, tokens].
  function stateAt(s, i, k) {
    let cur = [KEPT, D.items[i][2], D.items[i][3]];
    for (const t of s.hist.get(i) || []) {
      if (t[0] > k) break;
      cur = [t[1], t[2] >= 0 ? t[2] : D.items[i][2], t[3], t[0]];
    }
    return cur;
  }
  // When item i left strategy s's request (or was rewritten), the call point and state.
  function changedAt(s, i, k) {
    let at = null;
    for (const t of s.hist.get(i) || []) if (t[0] <= k) at = t;
    return at;
  }

  // --- header and legend --------------------------------------------------------------------------------
  function header() {
    const top = document.getElementById("top");
    const nItems = D.items.length;
    top.append(...[
      el("h1", {}, "Episode ", el("code", {}, D.episode)),
      el("p", { class: "sub" },
        `${D.source} · ${fmt(nItems)} items · ${N} call point${N === 1 ? "" : "s"} (numbered 0–${N - 1}) · run ${D.run} · model ${D.model} (${D.price === "unpriced" ? "unpriced" : "priced from " + D.price.replace(/`/g, "")}) · window ${fmt(D.window)} tokens (${D.window_from})`),
      D.task ? el("p", { class: "task" }, D.task) : null,
      D.unrecorded && D.unrecorded.tokens > 0 ? el("p", { class: "unrecorded" },
        `${(100 * D.unrecorded.tokens / D.unrecorded.input).toFixed(1)}% of the baseline's input is context the trace did not record` +
        (D.unrecorded.what ? ` (${D.unrecorded.what})` : "") +
        `: ${fmt(D.unrecorded.tokens)} tokens over ${N} call points, drawn as "unrecorded", sent by every strategy as the trace's usage says.` +
        (D.unrecorded.fit ? ` Replayed, each call equals its record by construction; fitted, recorded ≈ U + k × replayed (k ${D.unrecorded.fit.k.toFixed(3)}${D.unrecorded.fit.k_held_from != null ? `, held at its bound: least squares gave ${D.unrecorded.fit.k_held_from.toFixed(3)}` : D.unrecorded.fit.k_fitted ? ", fitted" : ""}) leaves at most ${(100 * (D.unrecorded.fit.worst || 0)).toFixed(1)}% on a call` +
          (D.unrecorded.fit.by_construction ? " (0 by construction: as many parameters as calls, so it says nothing)." : D.unrecorded.fit.flagged ? " (flagged: past 3%)." : ".") +
          (D.unrecorded.fit.counted_at != null ? ` Every count here is the model's tokens: each item and each text a strategy writes counted as ${D.unrecorded.fit.counted_at.toFixed(3)} × the tokenizer's count.` : "") : "")) : null,
      el("p", { class: "hint" },
        "A call point is a place where the recorded agent called its model: the strategy receives the request as it stands there and sends it, reduced or not. " +
        "Click a call point in a timeline (or use ← →; ↑ ↓ change the strategy) to see the request that strategy sent beside the baseline's. " +
        "Findings: ◆ introduced, ▼ where one left the request (upper row); ● kept where needed, ✕ lost where needed (lower row).")]
      .filter((e) => e));
    const lg = document.getElementById("legend");
    D.kinds.forEach((k, i) => lg.append(el("span", {}, el("span", { class: "sw", style: `background:${D.colors[i]}` }), k)));
    for (const [name, , color] of ACTIONS) lg.append(el("span", {}, el("span", { class: "sw", style: `background:${color};height:5px` }), name));
    lg.append(el("span", {}, el("span", { class: "sw", style: `background:${D.reference};height:2px` }), "window"),
      el("span", {}, el("span", { class: "sw", style: `border-top:2px dashed ${D.reference};height:0` }), "strategy's trigger"));
  }

  // --- timelines ----------------------------------------------------------------------------------------
  const maxTokens = Math.max(1, ...S.flatMap((s) => s.steps.map((x) => x[0])));
  const scaleMax = D.window <= maxTokens * 1.25 ? Math.max(maxTokens, D.window) : maxTokens;
  function timelines() {
    const box = document.getElementById("timelines");
    box.replaceChildren(el("h2", {}, "Tokens sent per call point, by item type"));
    const width = Math.max(600, box.clientWidth || 1200);
    const order = [baseline, ...S.map((_, j) => j).filter((j) => j !== baseline)];
    for (const j of order) box.append(timeline(j, width));
  }
  // The width of a chart label (10 px, the page's font), measured before the chart is in the page.
  const measure = document.createElement("canvas").getContext("2d");
  function textWidth(text) {
    measure.font = `10px ${getComputedStyle(document.body).fontFamily}`;
    return measure.measureText(text).width;
  }
  // A saving against the baseline in the reports' words: "9.5% fewer", "0.3% more" (never "-0.0%").
  function fewerOrMore(saved) {
    const p = (100 * Math.abs(saved)).toFixed(1);
    return saved < 0 && p !== "0.0" ? `${p}% more` : `${p}% fewer`;
  }
  // The largest part of a request strategy s could not reduce, over its call points.
  function floorOf(s) { return s.steps.reduce((a, x) => Math.max(a, x[11] || 0), 0); }
  function timeline(j, width) {
    const s = S[j];
    const H = 70, LANE = 18, FL = 26, W = width, bw = W / Math.max(1, N);
    const total = s.steps.reduce((a, x) => a + x[0], 0);
    const base = S[baseline].steps.reduce((a, x) => a + x[0], 0);
    const lost = s.ledger.filter((r) => !r[3]).length;
    const needs = (n) => `${n} need${n === 1 ? "" : "s"}`;
    // A request over the window is a failure (a provider refuses it), for every strategy.
    const over = s.steps.filter((x) => x[0] > D.window).length;
    const overNote = over ? ` · ${over} request${over === 1 ? "" : "s"} over the window: failures, refused by a provider` : "";
    const note = (s.baseline ? `baseline · ${fmt(total)} input tokens · ${needs(s.ledger.length)}`
      : `${fmt(total)} input tokens (${fewerOrMore(1 - total / base)}) · ${s.ledger.length - lost} of ${needs(s.ledger.length)} kept` +
        (acted(s).length ? ` · acted at ${acted(s).length} of ${N} call points` : " · never changed a request") +
        (s.trigger ? ` · ${s.trigger.label} (${fmt(s.trigger.tokens)}${s.trigger.tokens > scaleMax ? ": above every request here, off the chart" : ""})` : "") +
        (s.trigger && s.trigger.tokens < floorOf(s) ? ` · its ${s.trigger.label.split(":")[0]} (${fmt(s.trigger.tokens)}) is below what no strategy may reduce (${fmt(floorOf(s))}): it cannot work here` : "") +
        (s.failed ? ` · fails at call point ${s.failed.step} as its framework does: ${s.failed.error}` : "")) +
      overNote;
    const wrap = el("div", { class: "tl" + (j === st.s ? " sel" : ""), "data-strategy": s.name },
      el("div", { class: "tl-head" },
        el("button", { class: "tl-name", onclick: () => select(j, st.k) }, s.name),
        el("span", { class: "tl-note" }, note)));
    const svg = svgEl("svg", { class: "chart", viewBox: `0 0 ${W} ${H + LANE + FL}`, width: W, height: H + LANE + FL, role: "img",
      "aria-label": `${s.name}: tokens sent per call point` });
    const y = (v) => H - (H - 4) * Math.min(1, v / scaleMax);
    svg.append(svgEl("rect", { x: 0, y: 0, width: W, height: H, fill: "#fbfbfb" }));
    s.steps.forEach((x, k) => {
      let acc = 0;
      x[3].forEach((n, kind) => {
        if (!n) return;
        const r = svgEl("rect", { x: k * bw + 0.5, width: Math.max(1, bw - 1), y: y(acc + n), height: Math.max(0, y(acc) - y(acc + n)),
          fill: D.colors[kind] });
        acc += n;
        svg.append(r);
      });
      ACTIONS.forEach(([name, at, color], row) => {
        if (x[at] > 0) svg.append(svgEl("rect", { x: k * bw + 0.5, y: H + 2 + row * 4, width: Math.max(1, bw - 1), height: 3, fill: color }));
      });
      const hit = svgEl("rect", { x: k * bw, y: 0, width: bw, height: H + LANE + FL, fill: "transparent", "data-step": k });
      const t = svgEl("title", {});
      t.textContent = `call point ${k} (before item ${D.points[k]}): ${fmt(x[0])} tokens sent` +
        ACTIONS.filter(([, at]) => x[at] > 0).map(([name, at]) => `, ${name} ${x[at]}`).join("");
      hit.append(t);
      hit.addEventListener("click", () => select(j, k));
      svg.append(hit);
    });
    // The limit lines (window, the strategy's trigger or budget, the floor) and their labels: each label at the
    // right end just above its line, else just below it, else moved left of the labels it would cover, so that
    // no label is ever printed over another or over "fails here".
    const labels = [];
    const line = (v, dash, label) => {
      if (v > scaleMax) return;
      svg.append(svgEl("line", { x1: 0, x2: W, y1: y(v), y2: y(v), stroke: D.reference, "stroke-width": 1.5,
        "stroke-dasharray": dash ? "5 4" : "none", "pointer-events": "none" }));
      labels.push({ at: y(v), label });
    };
    line(D.window, false, `window ${fmt(D.window)}`);
    const taken = [];
    // Where the framework the strategy reproduces raises: the episode fails there.
    if (s.failed) {
      const x = s.failed.step * bw + bw / 2;
      svg.append(svgEl("line", { x1: x, x2: x, y1: 0, y2: H, stroke: "#d62728", "stroke-width": 2, "pointer-events": "none", class: "failed" }));
      const tx = Math.min(x + 3, W - 60);
      const t = svgEl("text", { x: tx, y: 11, "font-size": 10, fill: "#d62728", "pointer-events": "none", class: "failed" });
      t.textContent = "fails here";
      svg.append(t);
      taken.push({ x0: tx - 2, x1: tx + textWidth("fails here") + 2, y0: 0, y1: 13 });
    }
    if (s.trigger) line(s.trigger.tokens, true, `${s.trigger.label.split(":")[0]} ${fmt(s.trigger.tokens)}`);
    // What no strategy may reduce (reply priming, tool schemas, unrecorded context, system messages, the task),
    // at its largest, where a budget below it cannot work.
    if (s.trigger && s.trigger.tokens < floorOf(s)) line(floorOf(s), true, `floor ${fmt(floorOf(s))}`);
    for (const { at, label } of labels) {
      const w = textWidth(label) + 4;
      const box = (right, base) => ({ x0: right - w, x1: right + 2, y0: base - 10, y1: base + 3 });
      const free = (b) => b.x0 >= 0 && b.y0 >= 0 && b.y1 <= H + 1 && !taken.some((o) => b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1);
      const bases = at < 12 ? [at + 11] : at + 14 > H ? [at - 3] : [at - 3, at + 11];
      let b = null;
      for (let right = W - 4; !b && right - w >= 0;) {
        const tries = bases.map((base) => box(right, base));
        b = tries.find(free);
        // Left of the leftmost label in the way.
        const inWay = taken.filter((o) => tries.some((c) => c.x0 < o.x1 && o.x0 < c.x1 && c.y0 < o.y1 && o.y0 < c.y1));
        right = inWay.length ? Math.min(...inWay.map((o) => o.x0)) - 6 : right - w;
      }
      b = b || box(W - 4, bases[0]);
      taken.push(b);
      // A white halo under the letters keeps them readable over bars of any colour.
      const t = svgEl("text", { x: b.x1 - 2, y: b.y0 + 10, "text-anchor": "end", "font-size": 10, fill: D.reference, "pointer-events": "none",
        stroke: "#ffffff", "stroke-width": 3, "stroke-linejoin": "round", "paint-order": "stroke", class: "limit" });
      t.textContent = label;
      svg.append(t);
    }
    // Findings, one mark per call point and row, the worse on top: upper row ◆ introduced, ▼ left the request
    // (over ◆); lower row ● kept where needed, ✕ lost where needed (over ●). Losses are drawn after every other
    // mark, so that a neighbour's mark never covers one.
    const rowY = [H + LANE + 8, H + LANE + 20];
    const marks = new Map(); // "row:k" -> {row, k, worse, titles}
    const mark = (row, k, worse, title) => {
      const key = `${row}:${k}`;
      const m = marks.get(key) || { row, k, worse: false, titles: [] };
      m.worse = m.worse || worse;
      m.titles.push(title);
      marks.set(key, m);
    };
    D.findings.forEach((f, fi) => { if (findingStep[fi] < N) mark(0, findingStep[fi], false, `${f.id} introduced`); });
    for (const [k, rows] of s.lostSteps) for (const r of rows) mark(0, k, true, `${D.findings[r[0]].id} left the request (${r[5]})`);
    for (const r of s.ledger) mark(1, r[2], !r[3], `${D.findings[r[0]].id} needed: ${r[3] ? "kept" : "lost"}`);
    const GLYPHS = [[["◆", "#1f77b4", "introduced"], ["▼", "#d62728", "left"]], [["●", "#2ca02c", "kept"], ["✕", "#d62728", "lost"]]];
    const ordered = [...marks.values()].sort((a, b) => a.worse - b.worse);
    for (const m of ordered) {
      const [ch, color, name] = GLYPHS[m.row][m.worse ? 1 : 0];
      // A loss is drawn larger and bold: ✕ and ▼ are thin beside ● and ◆.
      const t = svgEl("text", { x: m.k * bw + bw / 2, y: rowY[m.row] + 4, "text-anchor": "middle", "font-size": m.worse ? 14 : 11,
        "font-weight": m.worse ? 700 : 400, fill: color, "pointer-events": "none", class: "mark", "data-mark": name, "data-step": m.k });
      t.textContent = ch;
      const tt = svgEl("title", {});
      tt.textContent = m.titles.join("; ");
      t.append(tt);
      svg.append(t);
    }
    if (j === st.s || j === baseline) {
      svg.append(svgEl("rect", { x: st.k * bw, y: 0, width: Math.max(2, bw), height: H + LANE + FL, fill: "none",
        stroke: "#1f5fa0", "stroke-width": 2, "pointer-events": "none", class: "cursor" }));
    }
    wrap.append(svg);
    return wrap;
  }

  // --- text with the findings' evidence marked ------------------------------------------------------------
  // The text, its findings' evidence marked; past `limit` characters it is cut, but a text holding the evidence
  // of the finding in focus (or of any, when `any`) shows the part around it.
  function marked(textId, limit, any) {
    const text = D.texts[textId] ?? "";
    const ms = (marksOf.get(textId) || []).slice().sort((a, b) => a[1] - b[1]);
    let from = 0, to = text.length;
    if (limit && text.length > limit) {
      const near = ms.find((m) => m[0] === st.f) || (any ? ms[0] : undefined);
      from = near && near[2] > limit - 40 ? Math.max(0, text.lastIndexOf("\n", near[1] - 120) + 1) : 0;
      if (from > near?.[1]) from = Math.max(0, near[1] - 120);
      to = Math.min(text.length, from + limit);
      if (near && to < near[2]) to = Math.min(text.length, near[2] + 80);
    }
    const out = el("div", { class: "txt" });
    if (from > 0) out.append("…");
    let at = from;
    for (const [f, a, b] of ms) {
      if (a < at || a >= to) continue;
      out.append(text.slice(at, a));
      out.append(el("mark", { class: f === st.f ? "focus" : "", title: `${D.findings[f].id}: ${D.findings[f].text}`, "data-finding": D.findings[f].id },
        text.slice(a, Math.min(b, to))));
      at = Math.min(b, to);
    }
    out.append(text.slice(at, to));
    if (to < text.length) out.append("…");
    return out;
  }
  function textBlock(textId, key, any) {
    const text = D.texts[textId] ?? "";
    const full = st.open.has(key);
    const limit = 360;
    const block = el("div", {}, marked(textId, full ? 0 : limit, any));
    if (text.length > limit) {
      block.append(el("button", { class: "more", onclick: () => { full ? st.open.delete(key) : st.open.add(key); detail(); } },
        full ? "▴ less" : `▾ all ${fmt(text.length)} characters`));
    }
    return block;
  }
  const findingsIn = (textId) => [...new Set((marksOf.get(textId) || []).map((m) => m[0]))];

  // --- the request at a call point ------------------------------------------------------------------------
  // Rows: each episode item sent before the call point, and what the strategy wrote, in request order.
  function rows(s, k) {
    const at = D.points[k];
    const written = s.written.filter((w) => w[0] <= k && k <= w[1]);
    const out = [];
    const wrote = (after) => { for (const w of written) if (w[2] === after) out.push({ w }); };
    wrote(-1);
    for (let i = 0; i < at && i < D.items.length; i++) {
      if (!D.items[i][4]) continue;
      out.push({ i });
      wrote(i);
    }
    return out;
  }
  function itemCell(s, k, i, side) {
    const it = D.items[i];
    const [state, text, tokens, since] = side === "base" ? [KEPT, it[2], it[3], null] : stateAt(s, i, k);
    const cls = STATE_CLASS[state];
    const meta = el("div", { class: "meta" },
      el("span", { class: "kind", style: `color:${D.colors[it[0]]}` }, `#${i} ${it[1]}`),
      el("span", { class: "tok" }, state >= 4 ? "0 tokens" : `${fmt(tokens)} tokens`));
    const cell = el("div", { class: `cell ${cls} ${side}`, "data-item": i, "data-state": D.states[state] }, meta);
    if (state !== KEPT) {
      const when = since === k ? "at this call point" : `at call point ${since}`;
      meta.append(el("span", { class: `badge ${cls}` }, `${D.states[state]} ${when}`));
      if (since === k) cell.classList.add("now");
    }
    const held = findingsIn(it[2]);
    const still = findingsIn(text);
    for (const f of held) {
      if (side === "base") continue;
      if (state >= 4 || !still.includes(f)) {
        meta.append(el("span", { class: "badge f", title: D.findings[f].text }, `${D.findings[f].id} gone from here`));
      }
    }
    if (it[0] === 0 && i === 0 && state === KEPT) {
      cell.append(el("details", {}, el("summary", {}, "system prompt"), marked(text, 0)));
    } else {
      cell.append(textBlock(state >= 4 ? it[2] : text, `${side}:${i}:${state}:${k}`, held.length > 0));
    }
    if (side !== "base" && (state === MASKED || state === TRUNCATED || state === REWRITTEN)) {
      cell.append(el("details", { class: "orig" }, el("summary", {}, `recorded item (${fmt(it[3])} tokens)`), marked(it[2], 0)));
    }
    return cell;
  }
  function writtenCell(w, k) {
    const cell = el("div", { class: "cell written" + (w[0] === k ? " now" : ""), "data-state": "written" },
      el("div", { class: "meta" },
        el("span", { class: "kind", style: `color:${D.colors[w[4]]}` }, `${D.kinds[w[4]]} the strategy wrote`),
        el("span", { class: "tok" }, `${fmt(w[5])} tokens`),
        el("span", { class: "badge written" }, w[0] === k ? "written at this call point" : `since call point ${w[0]}`)));
    for (const f of findingsIn(w[3])) cell.append(el("span", { class: "badge fk" }, `holds ${D.findings[f].id}`));
    cell.append(textBlock(w[3], `w:${w[3]}:${k}`, true));
    return cell;
  }

  function rowCells(s, b, k, r) {
    return r.w ? [writtenCell(r.w, k), el("div", { class: "cell empty base" })] : [itemCell(s, k, r.i, ""), itemCell(b, k, r.i, "base")];
  }
  function requestView(k) {
    const s = S[st.s], b = S[baseline];
    const grid = el("div", { class: "req", id: "request" });
    const tokens = (x) => `${fmt(x.steps[k][0])} tokens`;
    grid.append(el("div", { class: "h" }, `${s.name} sent (${tokens(s)})`), el("div", { class: "h base" }, `${b.name} (baseline) sent (${tokens(b)})`));
    if (D.tools) {
      const tools = () => el("details", {}, el("summary", {}, `tool schemas: ${D.tools.n} tools, ${fmt(D.tools.tokens)} tokens (never reduced)`),
        el("div", { class: "txt" }, D.tools.text));
      grid.append(el("div", { class: "cell" }, tools()), el("div", { class: "cell base" }, tools()));
    }
    const instr = (x) => x.instructions.filter((w) => w[0] <= k && k <= w[1]);
    const si = instr(s), bi = instr(b);
    for (let n = 0; n < Math.max(si.length, bi.length); n++) {
      grid.append(si[n] ? writtenCell(si[n], k) : el("div", { class: "cell empty" }),
        bi[n] ? writtenCell(bi[n], k) : el("div", { class: "cell empty base" }));
    }
    // Rows of the strategy's request aligned with the baseline's; runs of items kept as the baseline sent
    // them, changed at an earlier call point, or left out fold into one line, unless they hold the finding in
    // focus: what stays open is what this call point rewrote.
    const list = rows(s, k);
    // The newest items stay open (what the agent answers next), so that a request nothing changed is never
    // one folded line.
    const newest = Math.max(0, list.length - 3);
    const plain = (r, n) => {
      if (n >= newest) return false;
      if (r.w) return r.w[0] < k;
      if (st.f >= 0 && holders[st.f].includes(r.i)) return false;
      const [state, , , since] = stateAt(s, r.i, k);
      return state === KEPT || since < k || state >= 4;
    };
    let n = 0;
    while (n < list.length) {
      if (plain(list[n], n)) {
        let m = n;
        while (m < list.length && plain(list[m], m)) m++;
        const key = `fold:${st.s}:${n}:${list[n].i ?? "w"}`;
        if (m - n > 3 && !st.open.has(key)) {
          const counts = new Map();
          for (const r of list.slice(n, m)) {
            const [state, , , since] = r.w ? [] : stateAt(s, r.i, k);
            const what = r.w ? "written earlier" : state === KEPT ? "as the baseline sent them"
              : `${D.states[state]} ${since === k ? "at this call point" : "earlier"}`;
            counts.set(what, (counts.get(what) || 0) + 1);
          }
          const ids = list.slice(n, m).filter((r) => !r.w).map((r) => r.i);
          const span = ids.length ? ` (#${ids[0]}–#${ids[ids.length - 1]})` : "";
          grid.append(el("div", { class: "fold", onclick: () => { st.open.add(key); detail(); } },
            `▸ ${m - n} items${span}: ${[...counts].map(([w, c]) => `${c} ${w}`).join(", ")} — show`));
          n = m;
          continue;
        }
        for (; n < m; n++) grid.append(...rowCells(s, b, k, list[n]));
        continue;
      }
      grid.append(...rowCells(s, b, k, list[n++]));
    }
    return grid;
  }

  // --- the call point panel -------------------------------------------------------------------------------
  function findingChips(k) {
    const s = S[st.s], box = el("div", { class: "chips" });
    const present = new Set(s.steps[k][10]);
    D.findings.forEach((f, fi) => {
      if (findingStep[fi] > k) return;
      const kept = present.has(fi);
      let where = "";
      if (!kept) {
        const h = holders[fi].find((i) => i < D.points[k]);
        if (h !== undefined) {
          const c = changedAt(s, h, k);
          where = c ? ` — #${h} ${D.states[c[1]]} at call point ${c[0]}` : ` — #${h}`;
        }
      }
      box.append(el("button", { class: `chip ${kept ? "kept" : "gone"}${fi === st.f ? " focus" : ""}`, title: f.text,
        onclick: () => { st.f = st.f === fi ? -1 : fi; detail(); } },
      `${f.id} ${kept ? "✓ in the request" : "✕ not in the request" + where}`));
    });
    if (!box.childElementCount) box.append(el("span", { class: "hint" }, "No finding introduced yet."));
    return box;
  }
  function probesAt(k) {
    const rowsOf = (s) => s.probes.filter((p) => p[1] === k);
    const mine = rowsOf(S[st.s]), base = rowsOf(S[baseline]);
    if (!mine.length && !base.length) return null;
    const t = el("table", { class: "probe" }, el("tr", {}, el("th", {}, "probe asked here"), el("th", {}, `${S[st.s].name}'s request answers`),
      el("th", {}, "baseline's answers")));
    const answer = (p) => p ? el("td", {}, el("span", { class: p[2] ? "ok" : "no" }, p[2] ? "✓ " : "✗ "), p[3],
      p[5] ? el("div", { class: "hint" }, `judge: ${p[5].overall.toFixed(1)} of 5`) : (p[4] ? el("div", { class: "hint" }, "judged, no grade") : null)) : el("td", {}, "–");
    for (const p of mine) {
      const q = D.probes[p[0]] || { q: "?", answers: [] };
      t.append(el("tr", {}, el("td", {}, q.q, q.answers.length ? el("div", { class: "hint" }, "accepted: " + q.answers.join(" | ")) : null),
        answer(p), answer(base.find((x) => x[0] === p[0]))));
    }
    return el("div", { class: "scroll" }, t);
  }
  function detail() {
    const box = document.getElementById("detail");
    const s = S[st.s], k = st.k, x = s.steps[k], bx = S[baseline].steps[k];
    const picker = el("select", { id: "strategy", "aria-label": "strategy", onchange: (e) => select(Number(e.target.value), st.k) },
      S.map((t, j) => el("option", { value: j, selected: j === st.s ? "selected" : null }, t.name + (t.baseline ? " (baseline)" : ""))));
    const actions = ACTIONS.filter(([, at]) => x[at] > 0).map(([name, at]) => `${name} ${x[at]} item${x[at] > 1 ? "s" : ""}`);
    const lostHere = [...new Set((s.lostSteps.get(k) || []).map((r) => D.findings[r[0]].id))];
    box.replaceChildren(
      el("h2", {}, `Call point ${k} (of 0–${N - 1})`, el("span", { class: "hint" }, ` — before item #${D.points[k]}`)),
      el("div", { class: "bar" },
        el("button", { onclick: () => select(st.s, k - 1), disabled: k === 0 ? "disabled" : null, title: "previous call point (←)" }, "←"),
        el("button", { onclick: () => select(st.s, k + 1), disabled: k === N - 1 ? "disabled" : null, title: "next call point (→)" }, "→"),
        el("label", {}, "strategy ", picker),
        el("span", { class: "stats" },
          `${s.name} received a request of ${fmt(x[1])} tokens and sent ${fmt(x[0])}; the baseline sent ${fmt(bx[0])}` +
          (actions.length ? ` · here it ${actions.join(", ")}` : x[9] ? " · here it rewrote the request" : " · here it changed nothing") +
          (x[8] ? ` · ${x[8]} LLM call${x[8] > 1 ? "s" : ""}` : "") +
          (lostHere.length ? ` · lost here: ${lostHere.join(", ")}` : ""))),
      el("div", {}, el("b", {}, "Findings at this call point "), el("span", { class: "hint" }, "(click one to mark its evidence)"), findingChips(k)),
      probesAt(k) || "",
      requestView(k));
    for (const t of document.querySelectorAll(".tl")) t.classList.toggle("sel", t.dataset.strategy === s.name);
    moveCursor();
    if (ledgerStrategy !== st.s) { ledgerStrategy = st.s; ledger(); }
    const h = new URLSearchParams({ s: s.name, p: String(k) });
    if (st.f >= 0) h.set("f", D.findings[st.f].id);
    history.replaceState(null, "", "#" + h.toString());
  }
  function moveCursor() {
    document.querySelectorAll("svg.chart .cursor").forEach((c) => c.remove());
    for (const t of document.querySelectorAll(".tl")) {
      const j = S.findIndex((s) => s.name === t.dataset.strategy);
      if (j !== st.s && j !== baseline) continue;
      const svg = t.querySelector("svg");
      const W = Number(svg.getAttribute("width")), H = Number(svg.getAttribute("height")), bw = W / Math.max(1, N);
      svg.append(svgEl("rect", { x: st.k * bw, y: 0, width: Math.max(2, bw), height: H, fill: "none", stroke: "#1f5fa0",
        "stroke-width": 2, "pointer-events": "none", class: "cursor" }));
    }
  }
  function select(j, k, focus) {
    st.s = Math.max(0, Math.min(S.length - 1, j));
    st.k = Math.max(0, Math.min(N - 1, k));
    if (focus !== undefined) st.f = focus;
    detail();
  }

  // --- the ledger and the findings ------------------------------------------------------------------------
  const ledgerView = { all: false, kept: false };
  let ledgerStrategy = -1;
  function ledger() {
    const box = document.getElementById("ledger");
    const t = el("table", {}, el("tr", {}, ["strategy", "finding", "kind", "needed before item", "checked at call point", "kept", "left the request",
      "how"].map((h) => el("th", {}, h))));
    let shown = 0, hidden = 0;
    S.forEach((s, j) => {
      if (j === baseline || (!ledgerView.all && j !== st.s)) return;
      for (const r of s.ledger) {
        if (r[3] && !ledgerView.kept) { hidden++; continue; }
        shown++;
        const f = D.findings[r[0]];
        const go = (k) => el("a", { href: "#", onclick: (e) => { e.preventDefault(); select(j, k, r[0]); reveal(); } }, `call point ${k}`);
        t.append(el("tr", { class: r[3] ? "" : "lost" }, el("td", {}, s.name), el("td", { title: f.text }, f.id), el("td", {}, f.kind),
          el("td", { class: "num" }, r[1] >= 0 ? `#${r[1]}` : "the end"), el("td", { class: "num" }, go(r[2])),
          el("td", {}, r[3] ? "yes" : "no"), el("td", { class: "num" }, r[4] >= 0 ? go(r[4]) : r[3] ? "" : "never in a request"),
          el("td", {}, r[5])));
      }
    });
    const toggle = (key, label) => el("label", {}, el("input", { type: "checkbox", checked: ledgerView[key] ? "checked" : null,
      onchange: (e) => { ledgerView[key] = e.target.checked; ledger(); } }), " " + label);
    box.replaceChildren(el("h2", {}, "Loss ledger"),
      el("div", { class: "bar" }, el("span", { class: "hint" },
        "Each finding at each call point where the agent needs it (findings.csv). A link opens that call point with the finding's evidence marked."),
      toggle("all", "every strategy"), toggle("kept", "needs kept too")),
      shown ? el("div", { class: "scroll" }, t)
        : el("p", { class: "hint", id: "ledger-none" }, !hidden ? "No finding the agent found is needed at a call point of this episode: there is no need to lose."
          : `${ledgerView.all ? "No strategy lost a need" : `${S[st.s].name} lost no need`} in this episode (${hidden} need${hidden === 1 ? "" : "s"} kept; “needs kept too” lists them).`));
  }
  function findingList() {
    const box = document.getElementById("findings");
    const t = el("table", {}, el("tr", {}, ["finding", "kind", "introduced by item", "needed before items", "what it says", "evidence"].map((h) => el("th", {}, h))));
    D.findings.forEach((f) => t.append(el("tr", {}, el("td", {}, f.id), el("td", {}, f.kind + (f.task ? " (task)" : "")), el("td", { class: "num" }, `#${f.at}`),
      el("td", {}, f.needs.length ? f.needs.map((n) => `#${n}`).join(", ") : "the end"), el("td", {}, f.text), el("td", { class: "mono" }, f.evidence.join(" · ")))));
    box.replaceChildren(el("h2", {}, "Findings"), el("div", { class: "scroll" }, t));
  }
  // Scrolls the request to the first item holding the focused finding.
  function reveal() {
    const f = st.f;
    const target = (f >= 0 && [...document.querySelectorAll("#request .cell:not(.base)")].find((c) => holders[f].includes(Number(c.dataset.item)))) ||
      document.getElementById("detail");
    target.scrollIntoView({ block: "center" });
  }

  // --- start ----------------------------------------------------------------------------------------------
  function fromHash() {
    const h = new URLSearchParams(location.hash.slice(1));
    const j = S.findIndex((s) => s.name === h.get("s"));
    if (j >= 0) st.s = j;
    const f = D.findings.findIndex((x) => x.id === h.get("f"));
    st.f = f;
    const p = h.get("p");
    if (p !== null && !Number.isNaN(Number(p))) st.k = Math.max(0, Math.min(N - 1, Number(p)));
    else if (f >= 0) {
      // The call point where the finding left this strategy's request.
      const r = S[st.s].ledger.find((x) => x[0] === f && !x[3] && x[4] >= 0);
      if (r) st.k = r[4];
    } else if (j < 0) {
      // No strategy asked for: the one that lost a need first, else the one that acted first, at that call point.
      const firstLoss = (s) => Math.min(...s.ledger.filter((x) => !x[3] && x[4] >= 0).map((x) => x[4]));
      const order = S.map((_, i) => i).filter((i) => i !== baseline);
      const lost = order.filter((i) => Number.isFinite(firstLoss(S[i]))).sort((a, b) => firstLoss(S[a]) - firstLoss(S[b]))[0];
      const actor = order.filter((i) => acted(S[i]).length).sort((a, b) => acted(S[a])[0] - acted(S[b])[0])[0];
      if (lost !== undefined) { st.s = lost; st.k = firstLoss(S[lost]); }
      else if (actor !== undefined) { st.s = actor; st.k = acted(S[actor])[0]; }
    } else {
      const first = S[st.s].ledger.filter((x) => !x[3] && x[4] >= 0).map((x) => x[4]).sort((a, b) => a - b)[0];
      if (first !== undefined) st.k = first;
      else if (acted(S[st.s]).length) st.k = acted(S[st.s])[0];
    }
    return h.has("f") || h.has("p");
  }
  header();
  const deep = fromHash();
  timelines();
  detail();
  findingList();
  if (deep) reveal();
  let width = window.innerWidth;
  window.addEventListener("resize", () => { if (window.innerWidth !== width) { width = window.innerWidth; timelines(); moveCursor(); } });
  document.addEventListener("keydown", (e) => {
    if (e.target.closest && e.target.closest("select,input,textarea")) return;
    const step = e.shiftKey ? 10 : 1;
    if (e.key === "ArrowLeft") { select(st.s, st.k - step); e.preventDefault(); }
    else if (e.key === "ArrowRight") { select(st.s, st.k + step); e.preventDefault(); }
    else if (e.key === "ArrowUp") { select(st.s - 1, st.k); e.preventDefault(); }
    else if (e.key === "ArrowDown") { select(st.s + 1, st.k); e.preventDefault(); }
  });
  window.addEventListener("hashchange", () => { fromHash(); detail(); reveal(); });
  document.body.dataset.ready = "1";
})();
