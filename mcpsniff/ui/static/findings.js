// mcpsniff's web views: the Findings tab, the session's findings grouped by rule.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const { visible, el, clear, SEV_RANK, KIND_LABEL, describe } = window.McpDom;
  const state = A.state;
  const { showTab, select, specLine } = A.late;

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

  Object.assign(A, { renderFindings });
})();
