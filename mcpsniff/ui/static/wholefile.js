// mcpsniff's web views: the Whole file tab, every session of the open session's trace
// file interleaved on one time axis, each row naming its session.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const { el, fmtTime, KIND_LABEL, describe, headedTable } = window.McpDom;
  const state = A.state;
  // A file of many sessions is drawn in part: its first sessions and rows, said so.
  const FILE_SESSIONS = 50;
  const FILE_ROWS = 5000;

  // The trace file a session came from (a report holds one file).
  function fileOf(s) {
    return s.path || s.file || "";
  }

  // What names a session in a row: its label or server, else its key in the trace.
  function shortName(s) {
    return s.label || (s.name && s.name !== "?" ? s.name : s.key || s.id);
  }

  function sessionsOfFile(s) {
    const file = fileOf(s);
    return state.sessions.filter((x) => fileOf(x) === file)
      .sort((x, y) => (x.start || 0) - (y.start || 0));
  }

  async function renderWholeFile() {
    const tab = A.openTab("tab-file", "fileFor");
    if (!tab) return;
    const { box, sid } = tab;
    const all = sessionsOfFile(state.current);
    const sessions = all.slice(0, FILE_SESSIONS);
    const status = el("p", "file-status muted", "Reading the sessions…");
    status.setAttribute("role", "status");
    box.appendChild(status);
    const merged = [];
    let cut = all.length > sessions.length;
    for (let i = 0; i < sessions.length && merged.length < FILE_ROWS; i++) {
      let from = 0, last = null;
      for (;;) {
        const page = await state.source.rows(sessions[i].id, from);
        if (!state.current || state.current.id !== sid) return;
        for (const row of page.rows) {
          // A row without a time keeps its place after the one before it.
          if (typeof row.t === "number") last = row.t;
          if (merged.length >= FILE_ROWS) { cut = true; break; }
          merged.push({ row, t: last === null ? (sessions[i].start || 0) : last, s: i });
        }
        from += page.rows.length;
        if (!page.rows.length || from >= page.total || merged.length >= FILE_ROWS) break;
      }
    }
    merged.sort((x, y) => x.t - y.t || x.s - y.s || x.row.n - y.row.n);
    const file = state.current.file || fileOf(state.current) || "this report";
    status.textContent = `${merged.length} rows of ${sessions.length} sessions of ${file} on one time axis` +
      (cut ? ` (cut: the first ${FILE_SESSIONS} sessions and ${FILE_ROWS} rows)` : "");
    box.appendChild(legend(sessions));
    box.appendChild(fileTable(merged, sessions));
  }

  function legend(sessions) {
    const list = el("ul", "file-legend");
    list.setAttribute("aria-label", "Sessions of this file");
    sessions.forEach((s, i) => {
      const item = el("li", `file-sess file-sess-${i % 6}`, `S${i + 1} ${shortName(s)}: ${s.title || ""}`);
      list.appendChild(item);
    });
    return list;
  }

  function fileTable(merged, sessions) {
    const { table: t, body } = headedTable("file-rows", ["time", "session", "direction", "message"]);
    for (const { row, s } of merged) {
      const session = sessions[s];
      const tr = el("tr");
      tr.dataset.session = session.id;
      tr.appendChild(el("td", "when", fmtTime(row.t)));
      const who = el("td", `file-sess file-sess-${s % 6}`, `S${s + 1} ${shortName(session)}`);
      who.title = session.title || "";
      tr.appendChild(who);
      tr.appendChild(el("td", null, row.dir === "c2s" ? "C→S" : row.dir === "s2c" ? "S→C" : ""));
      const what = el("td");
      const go = el("button", "link", `#${row.seq} ${KIND_LABEL[row.kind] || row.kind} ${describe(row)}`);
      go.type = "button";
      go.addEventListener("click", () => openRow(session.id, row.n));
      what.appendChild(go);
      tr.appendChild(what);
      body.appendChild(tr);
    }
    return t;
  }

  async function openRow(sid, n) {
    if (!state.current || state.current.id !== sid) await A.openSession(sid);
    A.showTab("timeline");
    if (state.rows[n]) A.select(n, true);
  }

  Object.assign(A, { renderWholeFile, fileOf, sessionsOfFile });
})();
