// mcpsniff's web views: the live UI (served by `mcpsniff ui`) and the HTML report.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6).
// This file never builds markup from data: elements are made with createElement
// and filled with textContent, attributes only ever get our own values. The page's
// Content-Security-Policy forbids inline script on top of that.
"use strict";

(function () {
  const ROW_H = 28;
  const OVERSCAN = 10;
  const SVG = "http://www.w3.org/2000/svg";
  const LEFT = 30, RIGHT = 250, WIDTH = 280;
  const JSON_NODE_LIMIT = 4000;

  // ------------------------------------------------------------------ helpers

  // Bidi marks, embeddings, overrides and isolates reorder the text around them
  // ("Trojan Source", CVE-2021-42574): a tool named "evil\u202egnp.exe" would read
  // "evilexe.png". They are shown as escapes, as `mcpsniff show` shows them.
  const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  function visible(text) {
    return text.replace(BIDI, (c) => "\\u" + c.charCodeAt(0).toString(16).padStart(4, "0"));
  }
  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = visible(String(text));
    return node;
  }
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = visible(String(text));
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function fmtTime(t) {
    if (typeof t !== "number") return "";
    const d = new Date(t * 1000);
    const pad = (n, w) => String(n).padStart(w || 2, "0");
    return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
  }
  function fmtDate(t) {
    if (typeof t !== "number") return "";
    const d = new Date(t * 1000);
    return d.toISOString().replace("T", " ").slice(0, 19) + " UTC";
  }
  function fmtDuration(seconds) {
    if (typeof seconds !== "number" || !(seconds >= 0)) return "";
    if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
    if (seconds < 60) return `${seconds.toFixed(1)} s`;
    const m = Math.floor(seconds / 60), sec = Math.floor(seconds % 60);
    if (m < 60) return `${m}m${String(sec).padStart(2, "0")}s`;
    return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, "0")}m`;
  }
  function fmtMs(ms) {
    if (typeof ms !== "number") return "";
    return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : (ms < 10 ? ms.toFixed(2) : ms.toFixed(1)) + " ms";
  }
  const SEV_RANK = { info: 0, warning: 1, error: 2 };
  const KIND_LABEL = { request: "request", notification: "notify", response: "result", error: "error",
    batch: "batch", invalid: "invalid", unparseable: "bad-json", event: "event", finding: "finding" };

  // ------------------------------------------------------------------ data sources

  function httpSource() {
    const get = async (url) => {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`${response.status} ${url}`);
      return response.json();
    };
    const enc = encodeURIComponent;
    return {
      label: "live",
      live: true,
      start(onSessions) {
        const events = new EventSource("/api/events");
        events.addEventListener("sessions", (e) => onSessions(JSON.parse(e.data)));
        events.onerror = () => { document.getElementById("live").classList.add("muted"); };
        events.onopen = () => { document.getElementById("live").classList.remove("muted"); };
      },
      rows: (sid, from) => get(`/api/session/${enc(sid)}/rows?from=${from}`),
      findings: (sid, from) => get(`/api/session/${enc(sid)}/findings?from=${from}`),
      message: (sid, n) => get(`/api/session/${enc(sid)}/message/${n}`),
      filter: (sid, q) => get(`/api/session/${enc(sid)}/filter?q=${enc(q)}`),
      stats: (sid) => get(`/api/session/${enc(sid)}/stats`),
      downloads: (sid) => ({
        jsonl: `/api/session/${enc(sid)}/download/jsonl`,
        har: `/api/session/${enc(sid)}/download/har`,
        html: `/api/session/${enc(sid)}/download/html`,
      }),
    };
  }

  function staticSource(data) {
    const of = (sid) => data.data[sid] || { rows: [], findings: [], details: {}, stats: null };
    // A batch's raw text is stored once, with its first element; the others name it.
    const detailOf = (sid, n) => {
      const details = of(sid).details;
      const d = details[n];
      if (!d || d.rawOf === undefined || !details[d.rawOf]) return d;
      const first = details[d.rawOf];
      return { ...d, raw: first.raw, rawTruncated: first.rawTruncated, size: first.size, utf8: first.utf8 };
    };
    return {
      label: data.label || "report",
      live: false,
      start(onSessions) { onSessions({ sessions: data.sessions, total: data.total, problems: data.problems || [] }); },
      rows: async (sid, from) => ({ rows: of(sid).rows.slice(from), total: of(sid).rows.length }),
      findings: async (sid, from) => ({ findings: of(sid).findings.slice(from), total: of(sid).findings.length }),
      message: async (sid, n) => detailOf(sid, n) || { n, missing: "not included in this report" },
      stats: async (sid) => of(sid).stats,
      filter: async (sid, q) => {
        if (!q.trim()) return { rows: null };
        let predicate;
        try {
          predicate = window.McpFilter.compile(q);
        } catch (e) {
          return { error: e.message, caret: e.caret || "" };
        }
        const session = of(sid);
        const findings = session.findings;
        const out = [];
        for (const row of session.rows) {
          const detail = detailOf(sid, row.n);
          const rowFindings = (row.f || []).map((i) => findings[i]);
          if (predicate({ row, findings: rowFindings, detail, session: sessionKey(sid) })) out.push(row.n);
        }
        return { rows: out };
      },
    };
    function sessionKey(sid) {
      const s = data.sessions.find((x) => x.id === sid);
      return s ? s.key : "";
    }
  }

  // ------------------------------------------------------------------ state

  const state = {
    source: null,
    sessions: [],
    current: null,       // session summary
    rows: [],            // all rows of the current session
    findings: [],
    loadingRows: false,
    visible: [],         // indices into rows, what the list shows
    filtered: null,      // Set of row numbers, or null
    filterText: "",
    expanded: new Set(), // batch rows shown with their elements
    selected: null,
    tab: "timeline",
    statsFor: null,
  };

  // ------------------------------------------------------------------ session list

  const SESSION_SLICE = 150;
  let sessionsGeneration = 0;
  function renderSessions(snapshot) {
    state.sessions = snapshot.sessions || [];
    const list = document.getElementById("session-list");
    clear(list);
    const total = typeof snapshot.total === "number" ? snapshot.total : state.sessions.length;
    const more = total - state.sessions.length;
    document.getElementById("session-count").textContent =
      more > 0 ? `(${state.sessions.length} of ${total})` : `(${state.sessions.length})`;
    if (!state.sessions.length) {
      list.appendChild(el("li", "empty muted", state.source.live
        ? "No sessions yet. They appear here as relays record them."
        : "This report holds no session."));
    }
    // The first entries now, the rest in slices: 2,000 entries drawn at once were one
    // 500 ms task (the page froze while a trace of 200,000 sessions opened).
    const generation = ++sessionsGeneration;
    const makeItem = (s) => {
      const entry = el("li");
      const item = el("button", "session");
      item.type = "button";
      entry.appendChild(item);
      item.dataset.sessionId = s.id;
      if (state.current && state.current.id === s.id) { item.classList.add("active"); item.setAttribute("aria-current", "true"); }
      const name = el("span", "name", s.name || "?");
      if (state.source.live && s.live) {
        const dot = el("span", "dot-live", " ●");
        dot.title = "still being recorded";
        name.appendChild(dot);
      }
      item.appendChild(name);
      // Sessions of one server differ by their label, client, start and ending: all shown.
      const who = [s.label && s.serverLabel ? `server ${s.serverLabel}` : (s.serverLabel !== s.name ? s.serverLabel : null),
        s.clientLabel ? `client ${s.clientLabel}` : (s.client ? `client ${s.client}` : null)].filter(Boolean);
      if (who.length) item.appendChild(el("span", "meta", who.join(" · ")));
      item.appendChild(el("span", "meta", [s.transport, s.version].filter(Boolean).join(" · ")));
      const span = typeof s.start === "number" && typeof s.last === "number" ? fmtDuration(s.last - s.start) : null;
      item.appendChild(el("span", "meta", [fmtDate(s.start), span, s.file || s.key].filter(Boolean).join(" · ")));
      const counts = el("span", "counts");
      counts.appendChild(el("span", "badge msgs", s.failed ? "no session" : `${s.messages} messages`));
      if (s.dropped) {
        const cut = el("span", "badge sev-warning", `${s.dropped} not shown`);
        cut.title = "over the UI's row budget: mcpsniff show reads the whole trace";
        counts.appendChild(cut);
      }
      for (const sev of ["error", "warning", "info"]) {
        const n = (s.findings || {})[sev] || 0;
        if (n) counts.appendChild(el("span", `badge sev-${sev}`, `${n} ${sev}`));
      }
      if (s.ending) {
        const ending = el("span", `badge ending${s.failed ? " sev-error" : ""}${s.live ? " dot-live" : ""}`, s.ending);
        ending.title = "how the session ended";
        counts.appendChild(ending);
      }
      item.title = s.title || "";
      item.appendChild(counts);
      item.addEventListener("click", () => openSession(s.id));
      return entry;
    };
    const tail = more > 0 ? el("li", "empty muted",
      `${more} older sessions not listed: the list holds the newest ${state.sessions.length}`) : null;
    const addSlice = (from) => {
      if (generation !== sessionsGeneration) return;  // a newer list replaced this one
      const fragment = document.createDocumentFragment();
      const to = Math.min(state.sessions.length, from + SESSION_SLICE);
      for (let i = from; i < to; i++) fragment.appendChild(makeItem(state.sessions[i]));
      list.insertBefore(fragment, tail && tail.parentNode === list ? tail : null);
      if (to < state.sessions.length) setTimeout(() => addSlice(to), 0);
    };
    if (tail) list.appendChild(tail);
    addSlice(0);
    const problems = document.getElementById("problems");
    clear(problems);
    for (const p of snapshot.problems || []) {
      problems.appendChild(el("div", null, p.error ? `${p.file}: ${p.error}` : `${p.file}: ${p.skipped} records skipped`));
    }
    if (state.current) {
      const now = state.sessions.find((s) => s.id === state.current.id);
      if (now) {
        state.current = now;
        showSessionTitle();
        if (now.rows > state.rows.length || totalFindings(now) > state.findings.length) loadMore();
      }
    } else if (state.sessions.length === 1) {
      openSession(state.sessions[0].id);
    }
  }

  function totalFindings(s) {
    const f = s.findings || {};
    return (f.error || 0) + (f.warning || 0) + (f.info || 0);
  }

  async function openSession(sid) {
    const summary = state.sessions.find((s) => s.id === sid);
    if (!summary) return;
    state.current = summary;
    state.rows = [];
    state.findings = [];
    state.filtered = null;
    state.expanded = new Set();
    state.selected = null;
    state.statsFor = null;
    state.range = null;
    if (overview) overview.selection = null;
    for (const item of document.querySelectorAll(".session")) {
      const active = item.dataset.sessionId === sid;
      item.classList.toggle("active", active);
      if (active) item.setAttribute("aria-current", "true"); else item.removeAttribute("aria-current");
    }
    document.getElementById("empty").hidden = true;
    showSessionTitle();
    showDownloads(sid);
    setDetailShown(false);
    clear(document.getElementById("detail"));
    document.getElementById("detail").appendChild(el("p", "muted", "Click a message to see its body, raw bytes and findings."));
    await loadMore();
    if (state.filterText) await applyFilter();
    if (state.tab !== "timeline") showTab(state.tab);
  }

  // The session's identity over the views: name, server, client, duration, counts, ending.
  function showSessionTitle() {
    const box = document.getElementById("session-title");
    const s = state.current;
    box.textContent = s ? visible(s.title || s.name || "") : "";
  }

  function showDownloads(sid) {
    const box = document.getElementById("downloads");
    const links = state.source.downloads ? state.source.downloads(sid) : null;
    box.hidden = !links;
    if (!links) return;
    for (const [format, url] of Object.entries(links)) {
      const link = document.getElementById(`download-${format}`);
      if (link) link.href = url;
    }
  }

  // The detail pane takes room only while a message is open on the timeline.
  function setDetailShown(shown) {
    document.getElementById("layout").classList.toggle("no-detail", !shown);
    renderWindow(false);
  }

  let lastLayout = 0;
  async function loadMore() {
    if (state.loadingRows || !state.current) return;
    state.loadingRows = true;
    const sid = state.current.id;
    let grew = false;
    try {
      for (;;) {
        const page = await state.source.rows(sid, state.rows.length);
        if (!state.current || state.current.id !== sid) return;
        if (!page.rows.length) break;
        for (const row of page.rows) {
          state.rows[row.n] = row;
          // A response names its request; the request learns its answer here.
          if (row.pair !== undefined && state.rows[row.pair]) state.rows[row.pair].pair = row.n;
        }
        grew = true;
        if (state.rows.length >= page.total) break;
        if (performance.now() - lastLayout > 400) {
          // A long session shows its first pages while the rest arrives.
          lastLayout = performance.now();
          relayout();
        }
      }
      for (;;) {
        const page = await state.source.findings(sid, state.findings.length);
        if (!state.current || state.current.id !== sid) return;
        if (!page.findings.length) break;
        for (const f of page.findings) {
          state.findings[f.n] = f;
          for (const r of f.rows || []) {
            const row = state.rows[r];
            if (!row) continue;
            row.f = row.f || [];
            if (!row.f.includes(f.n)) row.f.push(f.n);
          }
        }
        grew = true;
        if (state.findings.length >= page.total) break;
      }
    } finally {
      state.loadingRows = false;
    }
    if (grew) {
      if (state.filterText) scheduleFilter(); else relayout();
      document.getElementById("findings-count").textContent = state.findings.length ? `(${state.findings.length})` : "";
      if (state.tab === "findings") renderFindings();
      if (state.tab === "stats") { state.statsFor = null; renderStats(); }
    }
    if (state.current && (state.current.rows > state.rows.length || totalFindings(state.current) > state.findings.length)) {
      setTimeout(loadMore, 200);
    }
  }

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

  function describe(row) {
    if (row.kind === "event") return `${row.event}${row.detail ? " " + row.detail : ""}`;
    const parts = [];
    if (row.kind === "batch") parts.push(`batch of ${row.batch}`);
    if (row.index !== undefined) parts.push(`[${row.index}]`);
    if (row.method) parts.push(row.method);
    if (row.tool) parts.push(row.tool);
    else if (row.target) parts.push(row.target);
    if (row.id !== undefined) parts.push(`id=${row.id}`);
    if (row.code !== undefined) parts.push(`code ${row.code}`);
    if (row.isError) parts.push("isError");
    if (row.note) parts.push(`· ${row.note}`);
    return parts.join(" ");
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

  // Keys anywhere on the page: "/" focuses the filter, Escape in it clears it.
  function onPageKey(event) {
    const typing = event.target instanceof HTMLInputElement;
    if (event.key === "/" && !typing) {
      event.preventDefault();
      document.getElementById("filter").focus();
    } else if (event.key === "Escape" && event.target.id === "filter") {
      const input = document.getElementById("filter");
      if (!hideSuggestions()) {
        input.value = "";
        clearTimeout(filterTimer);
        applyFilter();
      }
      event.preventDefault();
    }
  }

  // ------------------------------------------------------------------ detail pane

  async function showDetail(n) {
    const pane = document.getElementById("detail");
    const row = state.rows[n];
    if (!row || !state.current) return;
    const sid = state.current.id;
    clear(pane);
    pane.dataset.n = n;
    const close = el("button", "close", "×");
    close.type = "button";
    close.setAttribute("aria-label", "Close the message detail (Esc)");
    close.addEventListener("click", closeDetail);
    pane.appendChild(close);
    pane.appendChild(el("div", "title", `${KIND_LABEL[row.kind] || row.kind} ${describe(row)}`));
    const actions = el("div", "actions");
    actions.id = "actions";
    pane.appendChild(actions);
    const dl = el("dl");
    const add = (k, v) => { if (v !== undefined && v !== null && v !== "") { dl.appendChild(el("dt", null, k)); dl.appendChild(el("dd", null, v)); } };
    add("seq", row.seq);
    add("time", fmtTime(row.t));
    add("direction", row.dir === "c2s" ? "client → server" : row.dir === "s2c" ? "server → client" : "");
    add("transport", row.transport || (row.kind !== "event" ? state.current.transport : ""));
    add("latency", row.latency !== undefined ? fmtMs(row.latency) : "");
    add("size", row.size !== undefined ? `${row.size} bytes` : "");
    pane.appendChild(dl);
    if (row.pair !== undefined && state.rows[row.pair]) {
      const other = state.rows[row.pair];
      const link = el("button", "link", `${row.kind === "request" ? "answered by" : "answers"} #${other.seq} ${describe(other)}`);
      link.type = "button";
      link.dataset.goto = other.n;
      link.addEventListener("click", () => select(other.n, true));
      pane.appendChild(link);
    }
    if (row.cancels !== undefined && state.rows[row.cancels]) {
      const other = state.rows[row.cancels];
      const link = el("button", "link", `cancels #${other.seq} ${describe(other)}`);
      link.type = "button";
      link.addEventListener("click", () => select(other.n, true));
      pane.appendChild(link);
    }
    const findings = (row.f || []).map((i) => state.findings[i]).filter(Boolean);
    if (findings.length) {
      pane.appendChild(el("h3", null, `Findings (${findings.length})`));
      for (const f of findings) pane.appendChild(findingBlock(f));
    }
    let detail;
    try {
      detail = await state.source.message(sid, n);
    } catch (e) {
      pane.appendChild(el("p", "sev-error", `could not load the message: ${e.message}`));
      return;
    }
    if (Number(pane.dataset.n) !== n) return;
    addActions(actions, row, detail);
    if (detail.missing) pane.appendChild(el("p", "muted", detail.missing));
    if (detail.event !== undefined) {
      pane.appendChild(el("h3", null, "Event data"));
      pane.appendChild(jsonTree(detail.event));
    }
    if (detail.errorLayer) {
      const layer = el("p", "error-layer", `Error layer: ${detail.errorLayer}`);
      if (detail.errorLayerTitle) layer.title = detail.errorLayerTitle;
      pane.appendChild(layer);
    }
    if (detail.body !== undefined) {
      pane.appendChild(el("h3", null, row.index !== undefined ? `Body (batch element ${row.index})` : "Body"));
      const tree = jsonTree(detail.body);
      tree.id = "body";
      pane.appendChild(tree);
    } else if (detail.bodyOmitted) {
      pane.appendChild(el("p", "muted", detail.bodyOmitted));
    }
    if (detail.raw !== undefined) {
      const label = `Raw bytes (${detail.size} bytes${detail.utf8 ? "" : ", not valid UTF-8: shown as \\xNN"}${detail.rawTruncated ? ", cut" : ""})`;
      pane.appendChild(el("h3", null, label));
      const pre = el("pre", "raw", detail.raw);
      pre.id = "raw";
      pane.appendChild(pre);
    }
    if (detail.http) {
      pane.appendChild(el("h3", null, "HTTP"));
      pane.appendChild(httpBlock(detail.http));
    }
    if (detail.meta) {
      pane.appendChild(el("h3", null, "Frame metadata"));
      pane.appendChild(jsonTree(detail.meta));
    }
  }

  // Copy as JSON (the bytes as received), as cURL (an HTTP request), the exchange's filter.
  function addActions(box, row, detail) {
    const done = el("span", "copied");
    done.setAttribute("role", "status");
    const action = (label, name, text, note) => {
      const button = el("button", null, label);
      button.type = "button";
      button.dataset.action = name;
      button.addEventListener("click", async () => {
        const ok = await window.McpActions.copy(text);
        done.textContent = ok ? `copied${note ? " " + note : ""}` : "the browser refused the clipboard";
        box.dataset.copied = name;
      });
      box.appendChild(button);
    };
    if (typeof detail.raw === "string" && row.kind !== "event") {
      const note = detail.rawTruncated ? "(cut: the frame is longer than the detail holds)"
        : detail.utf8 === false ? "(not valid UTF-8: bytes shown as \\xNN)" : "";
      action("Copy as JSON", "json", detail.raw, note);
    }
    const curl = window.McpActions.curl(detail, row);
    if (curl) action("Copy as cURL", "curl", curl, "");
    const expression = window.McpActions.exchangeFilter(row);
    action("Copy filter", "filter", expression, "");
    const use = el("button", null, "Filter to this exchange");
    use.type = "button";
    use.dataset.action = "apply-filter";
    use.addEventListener("click", () => {
      const input = document.getElementById("filter");
      input.value = expression;
      clearTimeout(filterTimer);
      applyFilter();
    });
    box.appendChild(use);
    box.appendChild(done);
  }

  function httpBlock(http) {
    const lines = [];
    const req = http.request || {};
    if (req.method || req.path) lines.push(`${req.method || "?"} ${req.path || ""}`);
    for (const pair of req.headers || []) if (Array.isArray(pair)) lines.push(`${pair[0]}: ${pair[1]}`);
    const res = http.response || {};
    if (res.status !== undefined) { lines.push(""); lines.push(`HTTP ${res.status}`); }
    for (const pair of res.headers || []) if (Array.isArray(pair)) lines.push(`${pair[0]}: ${pair[1]}`);
    if (http.sseCount) { lines.push(""); lines.push(`(${http.sseCount} server-sent events on this response)`); }
    if (http.end && http.end.outcome) { lines.push(""); lines.push(`(${http.end.outcome})`); }
    return el("pre", "http", lines.join("\n"));
  }

  // The rule's page in the session's version; only links into the two specifications.
  const SPEC_SITES = ["https://modelcontextprotocol.io/", "https://www.jsonrpc.org/"];
  function specLine(f, cls) {
    const line = el("div", cls);
    if (typeof f.spec === "string" && SPEC_SITES.some((site) => f.spec.startsWith(site))) {
      line.appendChild(document.createTextNode("spec: "));
      const link = el("a", null, f.spec);
      link.href = f.spec;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      line.appendChild(link);
      if (f.source) line.appendChild(el("div", null, f.source));
    } else if (f.source) {
      line.textContent = visible(`spec: ${f.source}`);
    }
    return line;
  }

  function findingBlock(f) {
    const box = el("div", `finding sev-${f.severity}`);
    box.dataset.rule = f.rule;
    const head = el("div");
    head.appendChild(el("span", `badge sev-${f.severity}`, f.severity));
    head.appendChild(el("strong", null, " " + f.rule));
    box.appendChild(head);
    box.appendChild(el("div", "msg", f.message));
    if (f.cause) box.appendChild(el("div", "desc", `cause: ${f.cause}`));
    if (f.description) box.appendChild(el("div", "desc", f.description));
    if (f.source || f.spec) box.appendChild(specLine(f, "src"));
    return box;
  }

  function jsonTree(value) {
    const root = el("div", "json");
    let budget = JSON_NODE_LIMIT;
    function scalar(v) {
      if (typeof v === "string") return el("span", "s", JSON.stringify(v));
      if (typeof v === "number") return el("span", "n", String(v));
      return el("span", "b", JSON.stringify(v));
    }
    function node(key, v, depth) {
      budget--;
      const line = el("div", "item");
      if (budget < 0) { line.appendChild(el("span", "muted", "… (more not shown)")); return line; }
      const label = key === null ? null : el("span", "k", typeof key === "number" ? `${key}: ` : `${JSON.stringify(key)}: `);
      if (v !== null && typeof v === "object") {
        const entries = Array.isArray(v) ? v.map((x, i) => [i, x]) : Object.entries(v);
        const details = el("details");
        details.open = depth < 4 && entries.length <= 200;
        const summary = el("summary");
        if (label) summary.appendChild(label);
        summary.appendChild(document.createTextNode(Array.isArray(v) ? `[ ${entries.length} ]` : `{ ${entries.length} }`));
        details.appendChild(summary);
        for (const [k, x] of entries) {
          if (budget < 0) { details.appendChild(el("div", "item muted", "… (more not shown)")); break; }
          details.appendChild(node(k, x, depth + 1));
        }
        line.appendChild(details);
      } else {
        if (label) line.appendChild(label);
        line.appendChild(scalar(v));
      }
      return line;
    }
    const top = node(null, value, 0);
    top.className = "";
    root.appendChild(top);
    return root;
  }

  // ------------------------------------------------------------------ filter

  let filterTimer = null;
  let filtering = false;
  let filterAgain = false;
  function scheduleFilter() {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(applyFilter, 250);
  }

  async function applyFilter() {
    // One filter request at a time: a growing session asks again when it is answered.
    if (filtering) { filterAgain = true; return; }
    filtering = true;
    try {
      await runFilter();
    } finally {
      filtering = false;
    }
    if (filterAgain) { filterAgain = false; scheduleFilter(); }
  }

  async function runFilter() {
    const input = document.getElementById("filter");
    state.filterText = input.value.trim();
    const status = document.getElementById("filter-status");
    if (!state.current) return;
    if (!state.filterText) {
      state.filtered = null;
      input.classList.remove("bad");
      status.classList.remove("bad");
      relayout();
      return;
    }
    const sid = state.current.id;
    const expression = state.filterText;
    let result;
    try {
      result = await state.source.filter(sid, expression);
    } catch (e) {
      result = { error: e.message };
    }
    if (!state.current || state.current.id !== sid || expression !== state.filterText) return;
    if (result.error) {
      input.classList.add("bad");
      input.setAttribute("aria-invalid", "true");
      status.classList.add("bad");
      status.textContent = uiWording(result.error, result.caret, expression);
      // No stale rows under an error: the list shows what the box says, nothing.
      state.filtered = new Set();
      relayout();
      return;
    }
    input.removeAttribute("aria-invalid");
    input.classList.remove("bad");
    status.classList.remove("bad");
    state.filtered = result.rows ? new Set(result.rows) : null;
    relayout();
  }

  // The filter's error as the page says it: the place in the box, no command-line advice.
  function uiWording(error, caret, expression) {
    const text = String(error)
      .replace(/`mcpsniff show --help` lists the fields/, "type a letter in the box to see the fields")
      .replace(/--filter/g, "the filter");
    return caret ? `${text}\n${caret}` : `${text}\n${expression}`;
  }

  function updateFilterStatus() {
    const status = document.getElementById("filter-status");
    if (status.classList.contains("bad")) return;
    let messages = 0, batches = 0;
    for (const r of state.rows) {
      if (!r || r.kind === "event") continue;
      if (r.kind === "batch") batches++; else messages++;
    }
    const events = state.rows.length - messages - batches;
    status.textContent = state.filtered
      ? `${state.visible.length} of ${state.rows.length} rows match`
      : state.current ? `${messages} messages${batches ? `, ${batches} batches` : ""}, ${events} events` : "";
  }

  // ------------------------------------------------------------------ findings tab

  function renderFindings() {
    const box = document.getElementById("tab-findings");
    clear(box);
    if (!state.findings.length) { box.appendChild(el("p", "empty muted", "No findings in this session.")); return; }
    const groups = new Map();
    for (const f of state.findings) {
      if (!f) continue;
      if (!groups.has(f.rule)) groups.set(f.rule, []);
      groups.get(f.rule).push(f);
    }
    const ordered = [...groups.entries()].sort((a, b) =>
      SEV_RANK[b[1][0].severity] - SEV_RANK[a[1][0].severity] || a[0].localeCompare(b[0]));
    for (const [rule, list] of ordered) {
      const group = el("section", "group");
      group.dataset.rule = rule;
      const head = el("h4");
      head.appendChild(el("span", `badge sev-${list[0].severity}`, list[0].severity));
      head.appendChild(document.createTextNode(visible(` ${rule} × ${list.length}`)));
      group.appendChild(head);
      if (list[0].description) group.appendChild(el("div", "desc muted", list[0].description));
      if (list[0].source || list[0].spec) group.appendChild(specLine(list[0], "src muted"));
      for (const f of list.slice(0, 500)) {
        const line = el("div", `finding sev-${f.severity}`);
        line.appendChild(el("div", "msg", f.message));
        const links = el("div", "desc");
        for (const r of (f.rows || []).slice(0, 20)) {
          const row = state.rows[r];
          if (!row) continue;
          const link = el("button", "link", `#${row.seq} ${KIND_LABEL[row.kind] || row.kind} ${describe(row)}`);
          link.type = "button";
          link.dataset.goto = r;
          link.addEventListener("click", () => { showTab("timeline"); select(r, true); });
          links.appendChild(link);
          links.appendChild(document.createTextNode("  "));
        }
        line.appendChild(links);
        group.appendChild(line);
      }
      box.appendChild(group);
    }
  }

  // ------------------------------------------------------------------ stats tab

  async function renderStats() {
    const box = document.getElementById("tab-stats");
    if (!state.current || state.statsFor === state.current.id) return;
    const sid = state.current.id;
    state.statsFor = sid;
    clear(box);
    box.appendChild(el("p", "empty muted", "Computing…"));
    let stats;
    try {
      stats = await state.source.stats(sid);
    } catch (e) {
      stats = null;
    }
    if (!state.current || state.current.id !== sid) return;
    clear(box);
    if (!stats) { box.appendChild(el("p", "empty muted", "No statistics for this session.")); return; }
    const body = el("div", "stats-body");
    body.appendChild(el("h3", null, `Methods (${stats.messages} messages)`));
    body.appendChild(table(stats.methods || {}, "method"));
    if (Object.keys(stats.tools || {}).length) {
      body.appendChild(el("h3", null, "Tools"));
      body.appendChild(table(stats.tools, "tool"));
    }
    body.appendChild(el("h3", null, "Errors by layer"));
    const layers = el("table", "stats layers");
    const head = el("tr");
    for (const h of ["layer", "count", "codes"]) { const th = el("th", null, h); th.scope = "col"; head.appendChild(th); }
    layers.appendChild(head);
    for (const [layer, info] of Object.entries(stats.errors_by_layer || {})) {
      const tr = el("tr");
      tr.appendChild(el("td", null, (stats.layer_titles || {})[layer] || layer));
      tr.appendChild(el("td", null, info.total));
      const codes = info.codes || info.tools || {};
      tr.appendChild(el("td", null, Object.entries(codes).map(([k, v]) => `${k}×${v}`).join(" ")));
      layers.appendChild(tr);
    }
    body.appendChild(layers);
    const unanswered = Object.entries(stats.unanswered || {});
    if (unanswered.length) {
      body.appendChild(el("h3", null, "Unanswered requests"));
      body.appendChild(el("p", "empty", unanswered.map(([m, n]) => `${m} × ${n}`).join(", ")));
    }
    if (stats.context_cost) body.appendChild(contextCost(stats.context_cost));
    box.appendChild(body);
  }

  // What the server's definitions cost in a model's context, largest first
  // (mcpsniff/guard/context_cost.py); every value is text, never markup.
  function contextCost(cost) {
    const part = el("div", "context-cost");
    const tokens = (c) => Object.entries(c.tokens || {}).map(([k, v]) => `${v} ${k}`).join(", ");
    const total = tokens(cost.total);
    part.appendChild(el("h3", null, `Context cost: ${cost.total.bytes} bytes${total ? ", " + total + " tokens" : ""}`));
    const t = el("table", "stats");
    t.dataset.kind = "context-cost";
    const head = el("tr");
    for (const h of ["kind", "name", "bytes", "tokens", "guard"]) { const th = el("th", null, h); th.scope = "col"; head.appendChild(th); }
    t.appendChild(head);
    for (const d of cost.definitions || []) {
      const tr = el("tr");
      tr.appendChild(el("td", null, d.kind));
      tr.appendChild(el("td", null, d.name));
      tr.appendChild(el("td", null, d.bytes));
      tr.appendChild(el("td", null, tokens(d)));
      tr.appendChild(el("td", (d.findings || []).length ? "sev-warning" : null, (d.findings || []).join("; ")));
      t.appendChild(tr);
    }
    part.appendChild(t);
    part.appendChild(el("p", "muted", cost.not_estimated || ""));
    return part;
  }

  // A stats table whose every column sorts (click a heading; again to reverse).
  function table(byName, label) {
    const t = el("table", "stats");
    t.dataset.kind = label;
    const columns = [[label, null], ["requests", "requests"], ["responses", "responses"], ["errors", "errors"],
      ["notif.", "notifications"], ["p50", "p50_ms"], ["p95", "p95_ms"], ["p99", "p99_ms"], ["max", "max_ms"]];
    const entries = Object.entries(byName);
    const head = el("tr");
    const body = el("tbody");
    const thead = el("thead");
    thead.appendChild(head);
    t.appendChild(thead);
    t.appendChild(body);
    let sortedBy = null, descending = false;
    const fill = () => {
      clear(body);
      for (const [name, s] of entries) {
        const tr = el("tr");
        const first = el("th", null, name);
        first.scope = "row";
        tr.appendChild(first);
        for (const k of ["requests", "responses", "errors", "notifications"]) tr.appendChild(el("td", k === "errors" && s[k] ? "sev-error" : null, s[k]));
        for (const k of ["p50_ms", "p95_ms", "p99_ms", "max_ms"]) tr.appendChild(el("td", null, s[k] === null || s[k] === undefined ? "–" : fmtMs(s[k])));
        body.appendChild(tr);
      }
    };
    columns.forEach(([title, key], i) => {
      const th = el("th");
      th.scope = "col";
      th.setAttribute("aria-sort", "none");
      const button = el("button", "sort", title);
      button.type = "button";
      button.setAttribute("aria-label", `sort by ${title}`);
      button.addEventListener("click", () => {
        descending = sortedBy === i ? !descending : key !== null;  // numbers: largest first
        sortedBy = i;
        const value = (entry) => (key === null ? entry[0] : entry[1][key]);
        entries.sort((a, b) => {
          const x = value(a), y = value(b);
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;   // "–" last either way
          if (y === null || y === undefined) return -1;
          const order = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
          return descending ? -order : order;
        });
        for (const other of head.children) other.setAttribute("aria-sort", "none");
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        fill();
      });
      th.appendChild(button);
      head.appendChild(th);
    });
    fill();
    return t;
  }

  // ------------------------------------------------------------------ tabs, theme, start

  function showTab(name) {
    state.tab = name;
    for (const b of document.querySelectorAll(".tabs [data-tab]")) {
      const on = b.dataset.tab === name;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", on ? "true" : "false");
      b.tabIndex = on ? 0 : -1;
    }
    for (const t of ["timeline", "findings", "stats"]) document.getElementById(`tab-${t}`).hidden = t !== name;
    // Findings and Stats use the full width; the timeline shows the open message beside it.
    setDetailShown(name === "timeline" && state.selected !== null);
    if (name === "findings") renderFindings();
    if (name === "stats") renderStats();
    if (name === "timeline") renderWindow(true);
  }

  let completion = null;
  function hideSuggestions() { return completion ? completion.close() : false; }

  // The values the session holds for a field, for the filter box's completion.
  function valuesSeen(field) {
    const key = { "mcp.method.name": "method", "gen_ai.tool.name": "tool", "jsonrpc.request.id": "id",
      "error.code": "code", "event": "event", "mcp.resource.uri": "target" }[field];
    const out = new Set();
    if (field === "rule") for (const f of state.findings) { if (f) out.add(f.rule); }
    if (field === "mcp.session.id" && state.current) out.add(state.current.key);
    if (!key) return [...out];
    for (const row of state.rows) {
      if (row && row[key] !== undefined && out.size < 500) out.add(String(row[key]));
    }
    return [...out];
  }

  // ←/→ move between the tabs (the WAI-ARIA tabs pattern).
  function onTabKey(event) {
    const tabs = ["timeline", "findings", "stats"];
    const i = tabs.indexOf(state.tab);
    let next = null;
    if (event.key === "ArrowRight") next = tabs[(i + 1) % tabs.length];
    else if (event.key === "ArrowLeft") next = tabs[(i + tabs.length - 1) % tabs.length];
    if (!next) return;
    event.preventDefault();
    showTab(next);
    document.getElementById(`tab-button-${next}`).focus();
  }

  // A pane edge dragged with the pointer, or moved with the arrow keys.
  function setupResizer(id, variable, min, max, sign) {
    const handle = document.getElementById(id);
    const root = document.getElementById("layout");
    const pane = document.querySelector(variable === "--sessions-w" ? ".sessions" : ".detail");
    const width = () => pane.getBoundingClientRect().width || 420;
    const set = (value) => {
      const w = Math.round(Math.max(min, Math.min(max, value)));
      root.style.setProperty(variable, `${w}px`);
      handle.setAttribute("aria-valuenow", String(w));
      renderWindow(false);
      if (overview) overview.draw();
    };
    let from = null;
    handle.addEventListener("pointerdown", (e) => { from = [e.clientX, width()]; handle.setPointerCapture(e.pointerId); });
    handle.addEventListener("pointermove", (e) => { if (from) set(from[1] + sign * (e.clientX - from[0])); });
    handle.addEventListener("pointerup", () => { from = null; });
    handle.addEventListener("keydown", (e) => {
      if (e.key === "ArrowLeft") set(width() - 20 * sign);
      else if (e.key === "ArrowRight") set(width() + 20 * sign);
      else return;
      e.preventDefault();
    });
  }

  function setupTheme() {
    const saved = (() => { try { return localStorage.getItem("mcpsniff-theme"); } catch (e) { return null; } })();
    if (saved) document.documentElement.dataset.theme = saved;
    document.getElementById("theme").addEventListener("click", () => {
      const dark = document.documentElement.dataset.theme
        ? document.documentElement.dataset.theme === "dark"
        : window.matchMedia("(prefers-color-scheme: dark)").matches;
      const next = dark ? "light" : "dark";
      document.documentElement.dataset.theme = next;
      if (overview) overview.recolour();
      try { localStorage.setItem("mcpsniff-theme", next); } catch (e) { /* file:// may refuse */ }
    });
  }

  function start() {
    const embedded = document.getElementById("mcpsniff-data");
    state.source = embedded ? staticSource(JSON.parse(embedded.textContent)) : httpSource();
    document.getElementById("source-label").textContent = visible(state.source.label);
    document.getElementById("live").hidden = !state.source.live;
    setupTheme();
    const rows = document.getElementById("rows");
    rows.addEventListener("scroll", () => window.requestAnimationFrame(() => renderWindow(false)));
    rows.addEventListener("click", onRowsClick);
    rows.addEventListener("keydown", onKey);
    window.addEventListener("resize", () => renderWindow(false));
    const input = document.getElementById("filter");
    completion = window.McpComplete.attach(input, document.getElementById("filter-suggestions"), valuesSeen);
    document.getElementById("filter").addEventListener("input", scheduleFilter);
    document.getElementById("filter").addEventListener("keydown", (e) => { if (e.key === "Enter") { clearTimeout(filterTimer); applyFilter(); } });
    for (const b of document.querySelectorAll(".tabs [data-tab]")) {
      b.addEventListener("click", () => showTab(b.dataset.tab));
      b.addEventListener("keydown", onTabKey);
    }
    document.addEventListener("keydown", onPageKey);
    overview = window.McpWaterfall.overview(document.getElementById("overview"), setRange);
    document.getElementById("range-clear").addEventListener("click", () => setRange(null));
    setupResizer("resize-sessions", "--sessions-w", 160, 600, 1);
    setupResizer("resize-detail", "--detail-w", 260, 900, -1);
    // A live session's pending requests grow while the page is open.
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
    state.source.start(renderSessions);
    window.mcpsniffState = state;
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
