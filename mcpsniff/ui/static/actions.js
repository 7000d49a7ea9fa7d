// Actions on one message: copy it as JSON (the bytes as received), as a cURL
// command (an HTTP request), or the filter that selects its exchange.
//
// The text built here goes to the clipboard, never into the page as markup.
// A cURL command is a shell command a person pastes: every value from traffic
// is single-quoted, and one holding a control character is written as $'...'
// with escapes, so that nothing in it can end the quoting or the line.
"use strict";

(function () {
  // Headers a replayed MCP request needs; hop-by-hop and length headers are left to curl.
  const SKIPPED = new Set(["host", "content-length", "connection", "transfer-encoding", "keep-alive",
    "accept-encoding", "upgrade", "te", "trailer", "proxy-connection"]);

  function shellQuote(text) {
    if (/[\u0000-\u001f\u007f]/.test(text)) {
      const escaped = text.replace(/[\\']/g, (c) => "\\" + c)
        .replace(/[\u0000-\u001f\u007f]/g, (c) => "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0"));
      return `$'${escaped}'`;
    }
    return `'${text.replace(/'/g, "'\\''")}'`;
  }

  function header(headers, name) {
    for (const pair of headers || []) {
      if (Array.isArray(pair) && String(pair[0]).toLowerCase() === name) return String(pair[1]);
    }
    return null;
  }

  // ``curl`` for the HTTP request that carried a client message, or null (stdio, a response).
  function curl(detail, row) {
    const request = detail && detail.http && detail.http.request;
    if (!request || row.dir !== "c2s" || typeof detail.raw !== "string") return null;
    const headers = request.headers || [];
    const host = header(headers, "host") || "localhost";
    const scheme = request.scheme === "https" ? "https" : "http";
    const path = typeof request.path === "string" && request.path.startsWith("/") ? request.path : "/";
    const parts = ["curl", "-X", shellQuote(String(request.method || "POST")), shellQuote(`${scheme}://${host}${path}`)];
    for (const pair of headers) {
      if (!Array.isArray(pair)) continue;
      const name = String(pair[0]);
      if (SKIPPED.has(name.toLowerCase())) continue;
      parts.push("-H", shellQuote(`${name}: ${pair[1]}`));
    }
    parts.push("--data-raw", shellQuote(detail.raw));
    return parts.join(" ");
  }

  function quoted(value) {
    return /^[A-Za-z0-9_./:-]+$/.test(value) ? value : JSON.stringify(value);
  }

  // The filter expression that selects this message's exchange: a request and its
  // answer share id and method; anything else is named by its sequence number.
  function exchangeFilter(row) {
    if ((row.kind === "request" || row.kind === "response" || row.kind === "error") && row.id !== undefined && row.method) {
      // Rows spell ids as JSON does: "abc" for a string, 7 for a number.
      let id = row.id;
      if (id.startsWith('"') && id.endsWith('"')) id = JSON.stringify(JSON.parse(id));
      return `id == ${id} and method == ${quoted(row.method)}`;
    }
    return `seq == ${row.seq}`;
  }

  async function copy(text) {
    try {
      await navigator.clipboard.writeText(text);
      return true;
    } catch (e) {
      // file:// or a page without clipboard permission: the older way.
      const area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("aria-hidden", "true");
      area.style.position = "fixed";
      area.style.opacity = "0";
      document.body.appendChild(area);
      area.select();
      let done = false;
      try { done = document.execCommand("copy"); } catch (e2) { done = false; }
      area.remove();
      return done;
    }
  }

  window.McpActions = { curl, exchangeFilter, copy, shellQuote };
})();
