// mcpsniff's web views: the helpers every part of the page uses to make elements and
// format times. Text from traffic only ever reaches the page through `el` and `svg`,
// which set textContent with bidi controls shown as escapes (docs/architecture.md, invariant 6).
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";


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

  // A table with a head row of column headings; its rows go into the returned body.
  function headedTable(cls, headings) {
    const table = el("table", cls);
    const head = el("tr");
    for (const h of headings) {
      const th = el("th", null, h);
      th.scope = "col";
      head.appendChild(th);
    }
    const thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    const body = el("tbody");
    table.appendChild(body);
    return { table, body };
  }

  window.McpDom = { visible, el, svg, clear, fmtTime, fmtDate, fmtDuration, fmtMs, SEV_RANK, KIND_LABEL, describe, headedTable };
})();
