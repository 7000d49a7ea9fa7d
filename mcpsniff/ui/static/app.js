// mcpsniff's web views: the live UI (served by `mcpsniff ui`) and the HTML report.
// This file starts the page: the tabs, the theme, the resizable panes and the keys;
// the other scripts (loaded before it) each draw one part.
// The page's Content-Security-Policy forbids inline script.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const { visible } = window.McpDom;
  const state = A.state;
  const {
    renderWindow, renderFindings, renderStats, renderCompare, renderWholeFile, setDetailShown,
    scheduleFilter, filterNow, onRowsClick, onKey, setupTimeline, renderSessions, httpSource,
    staticSource, overview,
  } = A.late;
  const TABS = ["timeline", "findings", "stats", "compare", "file"];

  // ------------------------------------------------------------------ tabs, theme, start

  function showTab(name) {
    state.tab = name;
    for (const b of document.querySelectorAll(".tabs [data-tab]")) {
      const on = b.dataset.tab === name;
      b.classList.toggle("active", on);
      b.setAttribute("aria-selected", on ? "true" : "false");
      b.tabIndex = on ? 0 : -1;
    }
    for (const t of TABS) document.getElementById(`tab-${t}`).hidden = t !== name;
    // The other tabs use the full width; the timeline shows the open message beside it.
    setDetailShown(name === "timeline" && state.selected !== null);
    if (name === "findings") renderFindings();
    if (name === "stats") renderStats();
    if (name === "compare") renderCompare();
    if (name === "file") renderWholeFile();
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
    const tabs = TABS.filter((t) => !document.getElementById(`tab-button-${t}`).hidden);
    const i = tabs.indexOf(state.tab);
    let next = null;
    if (event.key === "ArrowRight") next = tabs[(i + 1) % tabs.length];
    else if (event.key === "ArrowLeft") next = tabs[(i + tabs.length - 1) % tabs.length];
    if (!next) return;
    event.preventDefault();
    showTab(next);
    document.getElementById(`tab-button-${next}`).focus();
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
        filterNow();
      }
      event.preventDefault();
    }
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
      const strip = overview();
      if (strip) strip.draw();
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
      const strip = overview();
      if (strip) strip.recolour();
      try { localStorage.setItem("mcpsniff-theme", next); } catch (e) { /* file:// may refuse */ }
    });
  }

  function start() {
    const embedded = document.getElementById("mcpsniff-data");
    state.source = embedded ? staticSource(JSON.parse(embedded.textContent)) : httpSource();
    document.getElementById("source-label").textContent = visible(state.source.label);
    document.getElementById("live").hidden = !state.source.live;
    // A report holds no comparison (mcpsniff report --compare A B writes one).
    document.getElementById("tab-button-compare").hidden = !state.source.compare;
    setupTheme();
    const rows = document.getElementById("rows");
    rows.addEventListener("scroll", () => window.requestAnimationFrame(() => renderWindow(false)));
    rows.addEventListener("click", onRowsClick);
    rows.addEventListener("keydown", onKey);
    window.addEventListener("resize", () => renderWindow(false));
    const input = document.getElementById("filter");
    completion = window.McpComplete.attach(input, document.getElementById("filter-suggestions"), valuesSeen);
    document.getElementById("filter").addEventListener("input", scheduleFilter);
    document.getElementById("filter").addEventListener("keydown", (e) => { if (e.key === "Enter") filterNow(); });
    for (const b of document.querySelectorAll(".tabs [data-tab]")) {
      b.addEventListener("click", () => showTab(b.dataset.tab));
      b.addEventListener("keydown", onTabKey);
    }
    document.addEventListener("keydown", onPageKey);
    setupTimeline();
    setupResizer("resize-sessions", "--sessions-w", 160, 600, 1);
    setupResizer("resize-detail", "--detail-w", 260, 900, -1);
    state.source.start(renderSessions);
    window.mcpsniffState = state;
  }

  Object.assign(A, { showTab });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
