// mcpsniff's web views: the timeline, a virtual list of the session's rows with
// their sequence arrows and waterfall cells, the overview strip and the keys that move.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const { visible, el, svg, clear, fmtTime, fmtMs, SEV_RANK, KIND_LABEL, describe } = window.McpDom;
  const state = A.state;
  const { updateFilterStatus, showDetail, setDetailShown } = A.late;

  const ROW_H = 28;
  const OVERSCAN = 10;
  const LEFT = 30, RIGHT = 250, WIDTH = 280;

  // ------------------------------------------------------------------ timeline

  function liveNow() {
    return Boolean(state.source && state.source.live && state.current && state.current.live);
  }

  // The time scale of the waterfall cells: the selected range, or the whole session.
  function timeScale() {
    const whole = window.McpWaterfall.span(state.rows, state.current, liveNow());
    state.whole = whole;
    return state.range ? { start: state.range[0], end: state.range[1], now: whole.now } : whole;
  }

  function inRange(row) {
    if (!state.range || typeof row.t !== "number") return true;
    const [a, b] = state.range;
    if (row.kind === "request") {
      const [start, end] = window.McpWaterfall.extent(row, state.rows, state.whole, liveNow());
      return start <= b && end >= a;
    }
    return row.t >= a && row.t <= b;
  }

  function relayout() {
    const visible = [];
    const filtered = state.filtered;
    state.scale = timeScale();
    const ranged = state.range !== null && state.range !== undefined;
    for (const row of state.rows) {
      if (!row) continue;
      if (ranged && !inRange(row)) continue;
      if (filtered) {
        if (filtered.has(row.n)) visible.push(row.n);
      } else if (row.parent === undefined || state.expanded.has(row.parent)) {
        visible.push(row.n);
      }
    }
    state.visible = visible;
    document.getElementById("rows-spacer").style.height = `${visible.length * ROW_H}px`;
    renderWindow(true);
    updateFilterStatus();
    // While a long session's pages arrive, the strip is drawn at most once a second.
    if (!state.loadingRows || performance.now() - lastOverview > 1000) drawOverview();
  }

  let lastOverview = 0;
  let overview = null;
  function drawOverview() {
    if (!overview || !state.current) return;
    lastOverview = performance.now();
    overview.update(state.rows, state.whole || timeScale(), liveNow());
    const longest = overview.longest;
    const canvas = document.getElementById("overview");
    // Counted by the drawing's own pass over the rows.
    const { requests, pending, unanswered } = overview.counts || { requests: 0, pending: 0, unanswered: 0 };
    let label = `Waterfall of ${requests} requests over ${window.McpWaterfall.fmtSeconds(state.whole.end - state.whole.start)}`;
    if (longest) label += `; longest ${window.McpWaterfall.fmtSeconds(longest[1] - longest[0])} (#${longest[2].seq} ${describe(longest[2])})`;
    if (pending) label += `; ${pending} pending`;
    if (unanswered) label += `; ${unanswered} never answered`;
    canvas.setAttribute("aria-label", visible(label));
    canvas.dataset.pending = pending;
    canvas.dataset.unanswered = unanswered;
  }

  function setRange(range) {
    state.range = range;
    const label = document.getElementById("range-label");
    const button = document.getElementById("range-clear");
    button.hidden = !range;
    if (range && state.whole) {
      const from = range[0] - state.whole.start, to = range[1] - state.whole.start;
      label.textContent = `time range ${window.McpWaterfall.fmtSeconds(from)} – ${window.McpWaterfall.fmtSeconds(to)}`;
    } else {
      label.textContent = "drag across the waterfall to pick a time range";
      if (overview) overview.selection = null;
    }
    relayout();
  }

  let rendered = new Map();
  function renderWindow(force) {
    const box = document.getElementById("rows");
    const first = Math.max(0, Math.floor(box.scrollTop / ROW_H) - OVERSCAN);
    const last = Math.min(state.visible.length, Math.ceil((box.scrollTop + box.clientHeight) / ROW_H) + OVERSCAN);
    const keep = new Map();
    for (let i = first; i < last; i++) {
      const n = state.visible[i];
      let node = rendered.get(n);
      if (!node || force) {
        if (node) node.remove();
        node = renderRow(state.rows[n]);
        box.appendChild(node);
      }
      node.style.top = `${i * ROW_H}px`;
      keep.set(n, node);
    }
    for (const [n, node] of rendered) if (!keep.has(n)) node.remove();
    rendered = keep;
    drawPairLine(box);
  }

  // The selected message and its pair (request and response) joined in the gutter.
  function drawPairLine(box) {
    let line = document.getElementById("pair-line");
    const row = state.selected !== null ? state.rows[state.selected] : null;
    const i = row ? state.visible.indexOf(row.n) : -1;
    const j = row && row.pair !== undefined ? state.visible.indexOf(row.pair) : -1;
    if (i < 0 || j < 0) { if (line) line.hidden = true; return; }
    if (!line) {
      line = el("div", "pair-line");
      line.id = "pair-line";
      box.appendChild(line);
    }
    line.hidden = false;
    line.style.top = `${Math.min(i, j) * ROW_H + ROW_H / 2}px`;
    line.style.height = `${Math.abs(i - j) * ROW_H}px`;
  }

  function rowSeverity(row) {
    let best = null;
    for (const i of row.f || []) {
      const f = state.findings[i];
      if (f && (best === null || SEV_RANK[f.severity] > SEV_RANK[best])) best = f.severity;
    }
    return best;
  }

  function drawArrow(row, sev) {
    const box = svg("svg", { viewBox: `0 0 ${WIDTH} ${ROW_H}`, "aria-hidden": "true" });
    box.appendChild(svg("line", { class: "lifeline", x1: LEFT, y1: 0, x2: LEFT, y2: ROW_H }));
    box.appendChild(svg("line", { class: "lifeline", x1: RIGHT, y1: 0, x2: RIGHT, y2: ROW_H }));
    if (row.kind === "event") {
      // The server's own events on its lifeline; the proxy's (HTTP, session) in the middle.
      const x = /stderr|exit|spawn|signal/.test(row.event || "") ? RIGHT : (LEFT + RIGHT) / 2;
      if (/^http|upstream/.test(row.event || "")) {
        box.appendChild(svg("rect", { class: "proxy-mark", x: x - 5, y: ROW_H / 2 - 5, width: 10, height: 10 }));
        box.appendChild(svg("text", { class: "proxy-label", x: x + 9, y: ROW_H / 2 + 4 }, (row.detail || row.event).slice(0, 22)));
        return box;
      }
      box.appendChild(svg("circle", { class: "event-dot", cx: x, cy: ROW_H / 2, r: 3.5 }));
      return box;
    }
    const c2s = row.dir !== "s2c";
    const y = 18;
    const from = c2s ? LEFT : RIGHT, to = c2s ? RIGHT : LEFT;
    const tip = c2s ? to - 1 : to + 1, back = c2s ? to - 9 : to + 9;
    const classes = ["arrow", c2s ? "c2s" : "s2c", row.kind];
    if (row.isError) classes.push("tool-error");
    if (row.parent !== undefined) classes.push("element");
    const g = svg("g", { class: classes.join(" ") });
    g.dataset.n = row.n;
    const indent = row.parent !== undefined ? 14 : 0;
    const start = c2s ? from + indent : from - indent;
    g.appendChild(svg("line", { x1: start, y1: y, x2: back, y2: y }));
    g.appendChild(svg("polygon", { points: `${tip},${y} ${back},${y - 4.5} ${back},${y + 4.5}` }));
    let label = row.kind === "batch" ? `batch ×${row.batch}` : row.method || KIND_LABEL[row.kind] || row.kind;
    if (row.tool) label += ` ${row.tool}`;
    if (label.length > 30) label = label.slice(0, 29) + "…";
    g.appendChild(svg("text", { x: (LEFT + RIGHT) / 2, y: y - 5, "text-anchor": "middle" }, label));
    if (row.latency !== undefined) {
      g.appendChild(svg("text", { class: "lat", x: c2s ? RIGHT - 4 : LEFT + 4, y: y + 9.5,
        "text-anchor": c2s ? "end" : "start" }, fmtMs(row.latency)));
    }
    if (sev) {
      const mark = svg("circle", { class: `mark sev-${sev}`, cx: c2s ? LEFT + 12 : RIGHT - 12, cy: y, r: 4.5 });
      mark.appendChild(svg("title", {}, `${sev} finding`));
      g.appendChild(mark);
    }
    box.appendChild(g);
    if (row.kind === "batch" && !state.filtered) {
      const open = state.expanded.has(row.n);
      const toggle = svg("text", { class: "toggle", x: c2s ? 6 : WIDTH - 14, y: y + 4 }, open ? "▾" : "▸");
      toggle.dataset.toggle = row.n;
      box.appendChild(toggle);
    }
    return box;
  }

  function renderRow(row) {
    const node = el("div", "row");
    node.dataset.n = row.n;
    node.dataset.kind = row.kind;
    if (state.selected === row.n) node.classList.add("selected");
    const sel = state.selected !== null ? state.rows[state.selected] : null;
    if (sel && sel.pair === row.n) node.classList.add("paired");
    const sev = rowSeverity(row);
    node.appendChild(drawArrow(row, sev));
    const text = el("div", "text");
    text.appendChild(el("span", "seq", `#${row.seq}`));
    text.appendChild(el("span", "when", fmtTime(row.t)));
    if (row.dir) text.appendChild(el("span", `dir-${row.dir}`, row.dir === "c2s" ? "C→S " : "S→C "));
    text.appendChild(el("span", `kind kind-${row.kind}${row.isError ? " tool-error" : ""}`, KIND_LABEL[row.kind] || row.kind));
    text.appendChild(el("span", "what", " " + describe(row)));
    if (row.latency !== undefined) text.appendChild(el("span", "lat", `  ${fmtMs(row.latency)}`));
    const fate = window.McpWaterfall.status(row, state.rows, liveNow());
    if (fate === "pending") text.appendChild(el("span", "state-pending", "  pending"));
    if (fate === "unanswered") text.appendChild(el("span", "state-unanswered", "  never answered"));
    for (const i of row.f || []) {
      const f = state.findings[i];
      if (f) text.appendChild(el("span", `badge sev-${f.severity}`, f.rule)).style.marginLeft = "6px";
    }
    node.appendChild(text);
    node.appendChild(window.McpWaterfall.cell(row, state.rows, state.scale || timeScale(), liveNow()));
    return node;
  }

  function onRowsClick(event) {
    const toggle = event.target.closest("[data-toggle]");
    if (toggle) {
      const n = Number(toggle.dataset.toggle);
      if (state.expanded.has(n)) state.expanded.delete(n); else state.expanded.add(n);
      relayout();
      return;
    }
    const row = event.target.closest(".row");
    if (row) select(Number(row.dataset.n));
  }

  function select(n, scroll) {
    state.selected = n;
    setDetailShown(true);
    const row = state.rows[n];
    if (row && row.parent !== undefined && !state.filtered) {
      if (!state.expanded.has(row.parent)) { state.expanded.add(row.parent); relayout(); }
    }
    renderWindow(true);
    if (scroll) {
      const i = state.visible.indexOf(n);
      if (i >= 0) {
        const box = document.getElementById("rows");
        if (i * ROW_H < box.scrollTop || (i + 1) * ROW_H > box.scrollTop + box.clientHeight) {
          box.scrollTop = Math.max(0, i * ROW_H - box.clientHeight / 3);
          renderWindow(true);
        }
      }
    }
    showDetail(n);
  }

  function onKey(event) {
    if (!state.visible.length) return;
    const i = state.selected === null ? -1 : state.visible.indexOf(state.selected);
    const key = event.key;
    if ((key === "ArrowDown" || key === "j") && i + 1 < state.visible.length) select(state.visible[i + 1], true);
    else if ((key === "ArrowUp" || key === "k") && i > 0) select(state.visible[i - 1], true);
    else if (key === "Home") select(state.visible[0], true);
    else if (key === "End") select(state.visible[state.visible.length - 1], true);
    else if (key === "Enter" && i < 0) select(state.visible[0], true);
    else if (key === "Enter") select(state.selected, true);
    else if (key === "p") jumpToPair();
    else if (key === "Escape" && state.selected !== null) closeDetail();
    else return;
    event.preventDefault();
  }

  function jumpToPair() {
    const row = state.selected !== null ? state.rows[state.selected] : null;
    if (row && row.pair !== undefined && state.rows[row.pair]) select(row.pair, true);
  }

  function closeDetail() {
    state.selected = null;
    setDetailShown(false);
    renderWindow(true);
  }


  // The overview strip, and the clock that grows a live session's pending requests.
  function setupTimeline() {
    overview = window.McpWaterfall.overview(document.getElementById("overview"), setRange);
    document.getElementById("range-clear").addEventListener("click", () => setRange(null));
    setInterval(() => {
      if (!liveNow() || state.tab !== "timeline") return;
      const pending = Number(document.getElementById("overview").dataset.pending || 0);
      if (!pending) return;
      state.scale = timeScale();
      // Only the waterfall cells are redrawn: the rows stay (a click on one must land).
      for (const [n, node] of rendered) {
        const old = node.querySelector(".wf");
        if (old) node.replaceChild(window.McpWaterfall.cell(state.rows[n], state.rows, state.scale, true), old);
      }
      drawOverview();
    }, 1000);
  }

  Object.assign(A, { liveNow, timeScale, relayout, drawOverview, setRange, renderWindow, rowSeverity, select, onRowsClick, onKey, closeDetail,
    setupTimeline, overview: () => overview });
})();
