// mcpsniff's web views: the Compare tab, the open session beside another one: their
// requests aligned by method, tool and arguments (the server's `mcpsniff diff`
// alignment, /api/compare), each answer side by side with the differing fields marked.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const { visible, el, clear, headedTable } = window.McpDom;
  const state = A.state;

  function sessionName(s) {
    return s ? (s.title || s.name || s.id) : "?";
  }

  // The picker: the open session is A, the one chosen here is B.
  function renderCompare() {
    const tab = A.openTab("tab-compare", "compareFor");
    if (!tab) return;
    const { box } = tab;
    if (!state.source.compare) {
      box.appendChild(el("p", "empty muted", "Comparing sessions needs mcpsniff ui (or mcpsniff report --compare A B)."));
      return;
    }
    const bar = el("div", "compare-bar");
    const label = el("label", null, "Compare this session (A) with B: ");
    label.htmlFor = "compare-with";
    const select = el("select");
    select.id = "compare-with";
    select.appendChild(new Option("choose a session…", ""));
    for (const s of state.sessions) {
      if (s.id === state.current.id || s.failed) continue;
      // Option text is text: the Option constructor never parses markup.
      select.appendChild(new Option(visible(`${sessionName(s)}${s.file ? " · " + s.file : ""}`), s.id));
    }
    select.addEventListener("change", () => { if (select.value) runCompare(select.value); });
    label.appendChild(select);
    bar.appendChild(label);
    box.appendChild(bar);
    const status = el("p", "compare-status muted");
    status.id = "compare-status";
    status.setAttribute("role", "status");
    box.appendChild(status);
    const result = el("div", "compare-result");
    result.id = "compare-result";
    box.appendChild(result);
  }

  async function runCompare(otherId) {
    const a = state.current;
    const b = state.sessions.find((s) => s.id === otherId);
    const status = document.getElementById("compare-status");
    const result = document.getElementById("compare-result");
    if (!a || !b || !status || !result) return;
    clear(result);
    status.textContent = "Comparing…";
    let data;
    try {
      data = await state.source.compare(a.id, b.id);
    } catch (e) {
      data = { error: e.message };
    }
    if (!state.current || state.current.id !== a.id || document.getElementById("compare-with").value !== otherId) return;
    if (data.error) { status.textContent = visible(`cannot compare: ${data.error}`); return; }
    const changed = data.requests.filter((r) => r.a && r.b && !r.same).length;
    let summary = `${data.total} requests aligned: ${data.same} answered alike, ${changed} differently, ` +
      `${data.onlyA} only in A, ${data.onlyB} only in B`;
    if (data.requests.length < data.total) summary += ` (the first ${data.requests.length} listed)`;
    status.textContent = summary;
    result.dataset.differ = data.differ ? "true" : "false";
    result.appendChild(compareTable(data.requests, a, b));
  }

  function compareTable(requests, a, b) {
    const { table: t, body } = headedTable("compare", ["request", "A answered", "B answered", "differing fields"]);
    t.insertBefore(el("caption", "muted", `A: ${sessionName(a)} — B: ${sessionName(b)}`), t.firstChild);
    for (const r of requests) {
      const kind = !r.a || !r.b ? "only" : r.same ? "same" : "differ";
      const tr = el("tr", `cmp-${kind}`);
      const first = el("th", null, (r.a || r.b).label);
      first.scope = "row";
      first.appendChild(el("div", "cmp-state", kind === "only" ? (r.a ? "only in A" : "only in B") : kind === "same" ? "same" : "differs"));
      tr.appendChild(first);
      tr.appendChild(sideCell(r.a, a, "A", r.same));
      tr.appendChild(sideCell(r.b, b, "B", r.same));
      const fields = el("td", "cmp-fields");
      if (r.differences.length) {
        const list = el("ul");
        for (const d of r.differences) {
          const item = el("li");
          item.appendChild(el("mark", null, d.path || "(the whole answer)"));
          const before = d.change === "added" ? "(absent)" : d.a;
          const after = d.change === "missing" ? "(absent)" : d.b;
          item.appendChild(el("span", "cmp-a", ` A ${before}`));
          item.appendChild(el("span", "cmp-b", ` → B ${after}`));
          list.appendChild(item);
        }
        fields.appendChild(list);
        if (r.fields > r.differences.length) fields.appendChild(el("div", "muted", `${r.fields - r.differences.length} more fields differ`));
      }
      tr.appendChild(fields);
      body.appendChild(tr);
    }
    return t;
  }

  // One side's answer (the same answer twice is said, not shown), with a button that
  // opens that request on its session's timeline.
  function sideCell(side, session, name, same) {
    const td = el("td", "cmp-side");
    if (!side) { td.appendChild(el("span", "muted", "(not asked)")); return td; }
    const go = el("button", "link", `#${side.seq}`);
    go.type = "button";
    go.dataset.goto = `${session.id}:${side.seq}`;
    go.setAttribute("aria-label", visible(`open request #${side.seq} of ${name} on its timeline`));
    go.addEventListener("click", () => openAt(session.id, side.seq));
    td.appendChild(go);
    if (same) td.appendChild(el("span", "muted", " the same answer"));
    else td.appendChild(el("pre", "cmp-answer", side.answer === null ? "(no answer)" : side.answer));
    return td;
  }

  // Opens a session on the row of the frame with this seq (a request's first row).
  async function openAt(sid, seq) {
    if (!state.current || state.current.id !== sid) await A.openSession(sid);
    A.showTab("timeline");
    const row = state.rows.find((r) => r && r.seq === seq);
    if (row) A.select(row.n, true);
  }

  Object.assign(A, { renderCompare, openAt });
})();
