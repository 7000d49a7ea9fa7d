// mcpsniff's web views: the session list, opening a session and loading its rows
// and findings page by page.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const { visible, el, clear, fmtDate, fmtDuration } = window.McpDom;
  const state = A.state;
  const {
    relayout, renderWindow, scheduleFilter, applyFilter, showTab, renderFindings, renderStats,
    overview, fileOf,
  } = A.late;

  // ------------------------------------------------------------------ session list

  const SESSION_SLICE = 150;
  let sessionsGeneration = 0;
  function renderSessions(snapshot) {
    state.sessions = groupByFile(snapshot.sessions || []);
    const perFile = new Map();
    for (const s of state.sessions) perFile.set(fileOf(s), (perFile.get(fileOf(s)) || 0) + 1);
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
      for (let i = from; i < to; i++) {
        const s = state.sessions[i];
        if (state.sessions.length > 1 && (i === 0 || fileOf(s) !== fileOf(state.sessions[i - 1]))) {
          fragment.appendChild(fileHead(s, perFile.get(fileOf(s))));
        }
        fragment.appendChild(makeItem(s));
      }
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

  // Sessions of one trace file together, the file with the newest session first.
  function groupByFile(sessions) {
    const newest = new Map();
    for (const s of sessions) {
      const f = fileOf(s);
      newest.set(f, Math.max(newest.has(f) ? newest.get(f) : -Infinity, s.start || 0));
    }
    return sessions.slice().sort((a, b) => {
      const fa = fileOf(a), fb = fileOf(b);
      if (fa !== fb) return newest.get(fb) - newest.get(fa) || (fa < fb ? -1 : 1);
      return (b.start || 0) - (a.start || 0);
    });
  }

  // A file's heading in the list; a file of several sessions offers them on one time axis.
  function fileHead(s, count) {
    const head = el("li", "file-head");
    const name = fileOf(s) ? (s.file || fileOf(s)) : "this report";
    head.appendChild(el("span", "file-name", name));
    head.appendChild(el("span", "muted", ` ${count} session${count === 1 ? "" : "s"}`));
    if (count > 1) {
      const whole = el("button", "link file-whole", "whole file");
      whole.type = "button";
      whole.setAttribute("aria-label", visible(`Show the ${count} sessions of ${name} interleaved on one time axis`));
      whole.addEventListener("click", async () => {
        await openSession(s.id);
        showTab("file");
        document.getElementById("tab-button-file").focus();
      });
      head.appendChild(whole);
    }
    return head;
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
    state.compareFor = null;
    state.fileFor = null;
    state.range = null;
    const strip = overview();
    if (strip) strip.selection = null;
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

  // Fetch the session's `kind` ("rows" or "findings") page by page from where
  // state[kind] ends, handing each item to `take` and calling `between` after each
  // page but the last. Whether any came; null when another session was opened meanwhile.
  async function loadPages(sid, kind, take, between) {
    let grew = false;
    for (;;) {
      const page = await state.source[kind](sid, state[kind].length);
      if (!state.current || state.current.id !== sid) return null;
      if (!page[kind].length) break;
      for (const item of page[kind]) take(item);
      grew = true;
      if (state[kind].length >= page.total) break;
      if (between) between();
    }
    return grew;
  }

  let lastLayout = 0;
  async function loadMore() {
    if (state.loadingRows || !state.current) return;
    state.loadingRows = true;
    const sid = state.current.id;
    let grew = false;
    try {
      const rows = await loadPages(sid, "rows", (row) => {
        state.rows[row.n] = row;
        // A response names its request; the request learns its answer here.
        if (row.pair !== undefined && state.rows[row.pair]) state.rows[row.pair].pair = row.n;
      }, () => {
        if (performance.now() - lastLayout > 400) {
          // A long session shows its first pages while the rest arrives.
          lastLayout = performance.now();
          relayout();
        }
      });
      if (rows === null) return;
      const findings = await loadPages(sid, "findings", (f) => {
        state.findings[f.n] = f;
        for (const r of f.rows || []) {
          const row = state.rows[r];
          if (!row) continue;
          row.f = row.f || [];
          if (!row.f.includes(f.n)) row.f.push(f.n);
        }
      });
      if (findings === null) return;
      grew = rows || findings;
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

  Object.assign(A, { renderSessions, totalFindings, openSession, showSessionTitle, showDownloads, setDetailShown, loadMore });
})();
