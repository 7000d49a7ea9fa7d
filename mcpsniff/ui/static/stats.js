// mcpsniff's web views: the Stats tab: methods, tools, errors by layer, the
// definitions' context cost, in tables whose columns sort.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const { el, clear, fmtMs } = window.McpDom;
  const state = A.state;

  // ------------------------------------------------------------------ stats tab

  async function renderStats() {
    const tab = A.openTab("tab-stats", "statsFor");
    if (!tab) return;
    const { box, sid } = tab;
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

  Object.assign(A, { renderStats });
})();
