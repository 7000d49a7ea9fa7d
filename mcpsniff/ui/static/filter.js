// The filter language of the command line (mcpsniff/filter/), for the HTML report.
//
// A report opened from file:// has no server to ask, so the page evaluates the
// expression itself. This is a port of lexer.py, syntax.py and compile.py: the
// same grammar, fields, aliases, operators, durations and error messages (with
// the column), evaluated over a report's rows. The live UI does not use it: the
// server runs the Python filter there. tests/ui/test_report_browser.py checks
// that both give the same rows for the same expressions.
"use strict";

(function () {
  const OPERATORS = ["==", "!=", "!~", "<=", ">=", "~", "<", ">", "="];
  const SYMBOLS = { "&&": "and", "||": "or", "!": "not" };
  const KEYWORDS = { and: "and", or: "or", not: "not" };
  const STOP = new Set([" ", "\t", "\r", "\n", "(", ")", '"', "'", "=", "!", "<", ">", "~", "&", "|"]);
  const ESCAPES = { n: "\n", t: "\t", r: "\r", "\\": "\\", '"': '"', "'": "'" };
  const MAX_DEPTH = 100;
  const FIELD_PREFIXES = ["mcp.", "gen_ai.", "jsonrpc.", "error."];
  const SEVERITY_ORDER = { info: 0, warning: 1, error: 2 };
  const KINDS = ["request", "notification", "response", "error", "batch", "invalid", "unparseable", "event", "finding"];
  const CHOICE_ALIASES = { result: "response", notify: "notification", client: "c2s", server: "s2c" };
  const UNIT_MS = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60000, h: 3600000 };
  const UNITS = ["ns", "us", "µs", "ms", "s", "m", "h"];
  const DURATION = /^(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*(ns|us|µs|ms|s|m|h)?$/i;

  class FilterError extends Error {
    constructor(message, source, position) {
      const pos = Math.max(0, Math.min(position, source.length));
      super(`${message} (at column ${pos + 1})`);
      const shown = source.replace(/[\n\t]/g, " ");
      this.caret = `${shown}\n${" ".repeat(pos)}^`;
    }
  }

  // A row as the filter sees it: the same getters as fields.py, each returning a list.
  const one = (v) => (v === undefined || v === null ? [] : [v]);
  function idValue(text) {
    if (text === undefined) return [];
    if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) return [text.slice(1, -1)];
    const n = Number(text);
    return Number.isNaN(n) ? [text] : [n];
  }
  function code(v) {
    if (v === undefined) return [];
    const n = Number(v);
    return v !== "" && !Number.isNaN(n) ? [n] : [];
  }
  const FIELDS = {
    "mcp.method.name": { type: "text", get: (x) => one(x.row.method) },
    "gen_ai.tool.name": { type: "text", get: (x) => one(x.row.tool) },
    "jsonrpc.request.id": { type: "id", get: (x) => idValue(x.row.id) },
    "mcp.session.id": { type: "text", get: (x) => [x.session] },
    "mcp.resource.uri": { type: "text", get: (x) => ((x.row.method || "").startsWith("resources/") ? one(x.row.target) : []) },
    "error.code": { type: "number", get: (x) => code(x.row.code) },
    "error.type": { type: "text", get: (x) => (x.row.isError ? ["tool_error"] : one(x.row.code)) },
    "trace.id": { type: "text", get: (x) => one(x.row.traceId) },
    "trace.problem": { type: "text", get: (x) => one(x.row.traceProblem) },
    direction: { type: "choice", get: (x) => one(x.row.dir), choices: ["c2s", "s2c"] },
    kind: { type: "choice", get: (x) => [x.row.kind], choices: KINDS },
    latency: { type: "duration", get: (x) => one(x.row.latency) },
    rule: { type: "text", get: (x) => x.findings.map((f) => f.rule) },
    severity: { type: "severity", get: (x) => x.findings.map((f) => f.severity), choices: ["info", "warning", "error"] },
    event: { type: "text", get: (x) => one(x.row.event) },
    seq: { type: "number", get: (x) => [x.row.seq] },
    size: { type: "number", get: (x) => one(x.row.size) },
  };
  const ALIASES = { method: "mcp.method.name", tool: "gen_ai.tool.name", id: "jsonrpc.request.id",
    session: "mcp.session.id", uri: "mcp.resource.uri", code: "error.code", dir: "direction",
    traceid: "trace.id", trace_id: "trace.id" };
  const resolve = (name) => (name in FIELDS ? name : ALIASES[name] || null);

  // ------------------------------------------------------------------ lexer

  function tokenize(source) {
    const tokens = [];
    let i = 0;
    const n = source.length;
    while (i < n) {
      const ch = source[i];
      if (/\s/.test(ch)) { i++; continue; }
      if (ch === "(" || ch === ")") { tokens.push({ kind: ch, text: ch, pos: i }); i++; continue; }
      if (ch === '"' || ch === "'") {
        const start = i;
        const out = [];
        i++;
        let closed = false;
        while (i < n) {
          const c = source[i];
          if (c === ch) { closed = true; i++; break; }
          if (c === "\\" && i + 1 < n) {
            const next = source[i + 1];
            out.push(next in ESCAPES ? ESCAPES[next] : "\\" + next);
            i += 2;
            continue;
          }
          out.push(c);
          i++;
        }
        if (!closed) throw new FilterError(`unterminated string (no closing ${ch})`, source, start);
        tokens.push({ kind: "string", text: out.join(""), pos: start });
        continue;
      }
      const two = source.slice(i, i + 2);
      if (two === "&&" || two === "||") { tokens.push({ kind: SYMBOLS[two], text: two, pos: i }); i += 2; continue; }
      const op = OPERATORS.find((o) => source.startsWith(o, i));
      if (op) { tokens.push({ kind: "op", text: op === "=" ? "==" : op, pos: i }); i += op.length; continue; }
      if (ch === "!") { tokens.push({ kind: "not", text: ch, pos: i }); i++; continue; }
      if (ch === "&" || ch === "|") throw new FilterError(`unexpected '${ch}' (use 'and' / 'or', or && / ||)`, source, i);
      const start = i;
      while (i < n && !STOP.has(source[i])) i++;
      const word = source.slice(start, i);
      tokens.push({ kind: KEYWORDS[word.toLowerCase()] || "word", text: word, pos: start });
    }
    tokens.push({ kind: "end", text: "", pos: n });
    return tokens;
  }

  // ------------------------------------------------------------------ parser

  function describe(token) { return token.kind === "end" ? "the end of the expression" : `'${token.text}'`; }

  function parse(source) {
    const tokens = tokenize(source);
    let i = 0;
    let depth = 0;
    const peek = () => tokens[i];
    const take = () => { const t = tokens[i]; if (t.kind !== "end") i++; return t; };
    const error = (message, token) => new FilterError(message, source, token.pos);
    function unknownField(name) { return `unknown field '${name}'; \`mcpsniff show --help\` lists the fields`; }
    function parseOr() {
      const items = [parseAnd()];
      while (peek().kind === "or") { take(); items.push(parseAnd()); }
      return items.length === 1 ? items[0] : { type: "or", items };
    }
    function parseAnd() {
      const items = [parseUnary()];
      for (;;) {
        const kind = peek().kind;
        if (kind === "and") take();
        else if (!["word", "string", "(", "not"].includes(kind)) break;
        items.push(parseUnary());
      }
      return items.length === 1 ? items[0] : { type: "and", items };
    }
    function parseUnary() {
      const token = peek();
      if (token.kind !== "not" && token.kind !== "(") return parsePrimary();
      depth++;
      if (depth > MAX_DEPTH) throw error(`nested more than ${MAX_DEPTH} levels deep`, token);
      let node;
      if (token.kind === "not") { take(); node = { type: "not", item: parseUnary() }; } else node = parsePrimary();
      depth--;
      return node;
    }
    function parsePrimary() {
      const token = take();
      if (token.kind === "(") {
        const node = parseOr();
        const closing = peek();
        if (closing.kind !== ")") {
          throw error(`expected ')' to close the '(' at column ${token.pos + 1}, got ${describe(closing)}`, closing);
        }
        take();
        return node;
      }
      if (token.kind === "op") throw error(`expected a field name before '${token.text}'`, token);
      if (token.kind === "string") {
        if (peek().kind === "op") throw error("a field name is not quoted", token);
        return { type: "text", text: token.text };
      }
      if (token.kind !== "word") throw error(`expected an expression, got ${describe(token)}`, token);
      const name = resolve(token.text);
      if (peek().kind === "op") {
        if (!name) throw error(unknownField(token.text), token);
        const op = take();
        const value = take();
        if (value.kind !== "word" && value.kind !== "string") throw error(`expected a value after '${op.text}'`, value);
        const unit = peek();
        let text = value.text;
        if (value.kind === "word" && unit.kind === "word" && FIELDS[name].type === "duration" &&
            /^-?(?:\d+(?:\.\d*)?|\.\d+)$/.test(text) && UNITS.includes(unit.text.toLowerCase())) {
          // "latency > 5 ms": the unit after a space belongs to the number.
          take();
          text += unit.text;
        }
        return { type: "compare", field: name, op: op.text, value: text, quoted: value.kind === "string",
          opPos: op.pos, valuePos: value.pos };
      }
      if (name) return { type: "present", field: name };
      if (FIELD_PREFIXES.some((p) => token.text.toLowerCase().startsWith(p))) throw error(unknownField(token.text), token);
      return { type: "text", text: token.text };
    }
    if (peek().kind === "end") throw error("empty filter expression", peek());
    const node = parseOr();
    if (peek().kind !== "end") throw error(`unexpected ${describe(peek())}`, peek());
    return node;
  }

  // ------------------------------------------------------------------ compiler

  function asText(v) { return typeof v === "string" ? v : JSON.stringify(v); }

  function searchable(x) {
    if (x._text !== undefined) return x._text;
    const parts = [];
    if (x.detail && typeof x.detail.raw === "string") parts.push(x.detail.raw);
    for (const v of [x.row.method, x.row.tool, x.row.target]) if (v) parts.push(v);
    for (const f of x.findings) { parts.push(f.rule); parts.push(f.message); }
    if (x.row.kind === "event") {
      parts.push(x.row.event || "");
      if (x.detail && x.detail.event !== undefined) parts.push(asText(x.detail.event));
    }
    x._text = parts.join("\n").toLowerCase();
    return x._text;
  }

  function duration(text, source, where) {
    const m = DURATION.exec(text.trim());
    if (!m) throw new FilterError(`bad duration '${text}' (a number with ns, us, ms, s, m or h; plain means ms)`, source, where);
    return parseFloat(m[1]) * (m[2] ? UNIT_MS[m[2].toLowerCase()] : 1);
  }

  function ordered(op, wanted) {
    if (op === "<") return (v) => v < wanted;
    if (op === ">") return (v) => v > wanted;
    if (op === "<=") return (v) => v <= wanted;
    if (op === ">=") return (v) => v >= wanted;
    return (v) => v === wanted;
  }

  function anyOrNone(op, match) { return op === "!=" ? (x) => !match(x) : match; }

  function value(node, field, source) {
    const text = node.value, where = node.valuePos;
    if (field.type === "number") {
      const n = Number(text);
      if (text.trim() === "" || Number.isNaN(n)) throw new FilterError(`${node.field} takes a number, not '${text}'`, source, where);
      return n;
    }
    if (field.type === "duration") return duration(text, source, where);
    if (field.type === "severity") {
      if (!(text.toLowerCase() in SEVERITY_ORDER)) throw new FilterError(`unknown severity '${text}' (one of info, warning, error)`, source, where);
      return text.toLowerCase();
    }
    if (field.type === "choice") {
      const v = CHOICE_ALIASES[text.toLowerCase()] || text.toLowerCase();
      if (!field.choices.includes(v)) throw new FilterError(`unknown ${node.field} '${text}' (one of ${field.choices.join(", ")})`, source, where);
      return v;
    }
    if (field.type === "id") {
      if (node.quoted) return ["s", text];
      const n = Number(text);
      return text.trim() !== "" && !Number.isNaN(n) ? ["n", n] : ["s", text];
    }
    return text;
  }

  function compileNode(node, source) {
    if (node.type === "or") { const ps = node.items.map((n) => compileNode(n, source)); return (x) => ps.some((p) => p(x)); }
    if (node.type === "and") { const ps = node.items.map((n) => compileNode(n, source)); return (x) => ps.every((p) => p(x)); }
    if (node.type === "not") { const p = compileNode(node.item, source); return (x) => !p(x); }
    if (node.type === "present") { const get = FIELDS[node.field].get; return (x) => get(x).length > 0; }
    if (node.type === "text") { const needle = node.text.toLowerCase(); return (x) => searchable(x).includes(needle); }
    const field = FIELDS[node.field];
    const get = field.get;
    const op = node.op;
    if (op === "~" || op === "!~") {
      // Not RegExp, which backtracks: `(.|.)*z` on a long value froze the tab.
      // regex.js matches in time linear in the text, with RE2's syntax, as the server.
      let pattern;
      try {
        pattern = window.McpRegex.compile(node.value);
      } catch (e) {
        const at = typeof e.index === "number" ? e.index : 0;
        throw new FilterError(`bad regular expression: ${e.message}`, source, node.valuePos + (node.quoted ? 1 : 0) + at);
      }
      // Rows repeat their values (a method, a tool): each distinct one is searched once.
      const seen = new Map();
      const search = (text) => {
        let found = seen.get(text);
        if (found === undefined) {
          found = pattern.test(text);
          if (seen.size < 100000) seen.set(text, found);
        }
        return found;
      };
      const match = (x) => get(x).some((v) => search(asText(v)));
      return op === "~" ? match : (x) => !match(x);
    }
    if (["<", ">", "<=", ">="].includes(op) && !["number", "duration", "severity"].includes(field.type)) {
      throw new FilterError(`'${op}' compares numbers, durations or severities; ${node.field} is ${field.type === "id" ? "an id" : "text"} (use == or ~)`, source, node.opPos);
    }
    const wanted = value(node, field, source);
    if (field.type === "severity") {
      const test = ordered(op, SEVERITY_ORDER[wanted]);
      return anyOrNone(op, (x) => get(x).some((s) => test(s in SEVERITY_ORDER ? SEVERITY_ORDER[s] : -1)));
    }
    if (field.type === "number" || field.type === "duration") {
      const test = ordered(op, wanted);
      return anyOrNone(op, (x) => get(x).some((v) => typeof v === "number" && test(v)));
    }
    if (field.type === "id") {
      const [kind, target] = wanted;
      return anyOrNone(op, (x) => get(x).some((v) => (kind === "s" ? typeof v === "string" : typeof v === "number") && v === target));
    }
    return anyOrNone(op, (x) => get(x).includes(wanted));
  }

  window.McpFilter = {
    /** The predicate for `source` over {row, findings, detail, session}; throws FilterError. */
    compile(source) { return compileNode(parse(source), source); },
    /** Field names (long and short) with their type and fixed choices, for completion. */
    fields() {
      const out = Object.entries(FIELDS).map(([name, f]) => ({ name, type: f.type, choices: f.choices || [] }));
      for (const [alias, name] of Object.entries(ALIASES)) out.push({ name: alias, type: FIELDS[name].type, choices: FIELDS[name].choices || [], of: name });
      return out;
    },
    resolve,
  };
})();
