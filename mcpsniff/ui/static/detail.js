// mcpsniff's web views: the detail pane of one message: its facts, findings, body,
// raw bytes, HTTP exchange and the copy actions.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;
  const { visible, el, clear, fmtTime, fmtMs, KIND_LABEL, describe } = window.McpDom;
  const state = A.state;
  const { closeDetail, select, filterNow } = A.late;

  const JSON_NODE_LIMIT = 4000;

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
      filterNow();
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

  Object.assign(A, { showDetail, specLine, findingBlock, jsonTree });
})();
