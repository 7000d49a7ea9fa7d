// mcpsniff's web views: the filter box applied to the open session (the expression
// is evaluated by the server, or by filter.js in a report).
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const state = A.state;
  const { relayout } = A.late;

  // ------------------------------------------------------------------ filter

  let filterTimer = null;
  let filtering = false;
  let filterAgain = false;
  function scheduleFilter() {
    clearTimeout(filterTimer);
    filterTimer = setTimeout(applyFilter, 250);
  }

  // The filter applied now (Enter, or a button that set the box), not after the typing pause.
  function filterNow() {
    clearTimeout(filterTimer);
    return applyFilter();
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

  Object.assign(A, { scheduleFilter, applyFilter, filterNow, updateFilterStatus });
})();
