// mcpsniff's web views: where the page's data comes from, the live server's API
// (`mcpsniff ui`) or the data inlined in an HTML report.
//
// Everything shown here came from traffic and is hostile (docs/architecture.md, invariant 6):
// elements are made with createElement and filled with textContent, never markup.
"use strict";

(function () {
  const A = window.McpApp;

  // ------------------------------------------------------------------ data sources

  function httpSource() {
    const get = async (url) => {
      const response = await fetch(url, { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error(`${response.status} ${url}`);
      return response.json();
    };
    const enc = encodeURIComponent;
    return {
      label: "live",
      live: true,
      start(onSessions) {
        const events = new EventSource("/api/events");
        events.addEventListener("sessions", (e) => onSessions(JSON.parse(e.data)));
        events.onerror = () => { document.getElementById("live").classList.add("muted"); };
        events.onopen = () => { document.getElementById("live").classList.remove("muted"); };
      },
      rows: (sid, from) => get(`/api/session/${enc(sid)}/rows?from=${from}`),
      findings: (sid, from) => get(`/api/session/${enc(sid)}/findings?from=${from}`),
      message: (sid, n) => get(`/api/session/${enc(sid)}/message/${n}`),
      filter: (sid, q) => get(`/api/session/${enc(sid)}/filter?q=${enc(q)}`),
      stats: (sid) => get(`/api/session/${enc(sid)}/stats`),
      compare: (a, b) => get(`/api/compare?a=${enc(a)}&b=${enc(b)}`),
      downloads: (sid) => ({
        jsonl: `/api/session/${enc(sid)}/download/jsonl`,
        har: `/api/session/${enc(sid)}/download/har`,
        html: `/api/session/${enc(sid)}/download/html`,
      }),
    };
  }

  function staticSource(data) {
    const of = (sid) => data.data[sid] || { rows: [], findings: [], details: {}, stats: null };
    // A batch's raw text is stored once, with its first element; the others name it.
    const detailOf = (sid, n) => {
      const details = of(sid).details;
      const d = details[n];
      if (!d || d.rawOf === undefined || !details[d.rawOf]) return d;
      const first = details[d.rawOf];
      return { ...d, raw: first.raw, rawTruncated: first.rawTruncated, size: first.size, utf8: first.utf8 };
    };
    return {
      label: data.label || "report",
      live: false,
      start(onSessions) { onSessions({ sessions: data.sessions, total: data.total, problems: data.problems || [] }); },
      rows: async (sid, from) => ({ rows: of(sid).rows.slice(from), total: of(sid).rows.length }),
      findings: async (sid, from) => ({ findings: of(sid).findings.slice(from), total: of(sid).findings.length }),
      message: async (sid, n) => detailOf(sid, n) || { n, missing: "not included in this report" },
      stats: async (sid) => of(sid).stats,
      filter: async (sid, q) => {
        if (!q.trim()) return { rows: null };
        let predicate;
        try {
          predicate = window.McpFilter.compile(q);
        } catch (e) {
          return { error: e.message, caret: e.caret || "" };
        }
        const session = of(sid);
        const findings = session.findings;
        const out = [];
        for (const row of session.rows) {
          const detail = detailOf(sid, row.n);
          const rowFindings = (row.f || []).map((i) => findings[i]);
          if (predicate({ row, findings: rowFindings, detail, session: sessionKey(sid) })) out.push(row.n);
        }
        return { rows: out };
      },
    };
    function sessionKey(sid) {
      const s = data.sessions.find((x) => x.id === sid);
      return s ? s.key : "";
    }
  }

  Object.assign(A, { httpSource, staticSource });
})();
