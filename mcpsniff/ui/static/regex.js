// The `~` operator's regular expressions in the HTML report, matched in time linear in the text.
//
// The live UI's server searches with RE2 (mcpsniff/filter/regex.py); a report opened
// from file:// has no server, and JavaScript's RegExp backtracks: `(.|.)*z` against a
// 300-character method name never ends, and froze the tab. This is RE2's approach in
// small: the pattern (RE2's syntax, case-insensitive) is parsed and compiled to a
// Thompson NFA, and the text is read once while every live state advances together
// (Russ Cox, "Regular Expression Matching Can Be Simple And Fast"), so a search costs
// at most the text's length times the program's size, whatever the pattern.
// Backreferences and lookaround need backtracking and are refused, as RE2 refuses them.
// A character class alone is tested with RegExp on one character: no backtracking there.
"use strict";

(function () {
  //: Repetition counts RE2 accepts at most (x{1001} is refused).
  const MAX_REPEAT = 1000;
  //: Instructions a compiled pattern may hold ("pattern too large" beyond).
  const MAX_PROGRAM = 20000;
  //: The upper count of `*`, `+` and `{n,}`.
  const UNBOUNDED = -1;
  const POSIX = {
    alnum: "0-9A-Za-z", alpha: "A-Za-z", ascii: "\\x00-\\x7F", blank: "\\t ", cntrl: "\\x00-\\x1F\\x7F",
    digit: "0-9", graph: "!-~", lower: "a-z", print: " -~", punct: "!-\\/:-@\\[-`{-~",
    space: "\\t\\n\\v\\f\\r ", upper: "A-Z", word: "0-9A-Za-z_", xdigit: "0-9A-Fa-f",
  };
  const SYNTAX = new Set(["^", "$", "\\", ".", "*", "+", "?", "(", ")", "[", "]", "{", "}", "|", "/", "-"]);
  const CONTROL = { n: "\n", t: "\t", r: "\r", f: "\f", v: "\v", a: "\x07" };

  class RegexError extends Error {
    constructor(message, index) { super(message); this.index = index; }
  }

  const isWord = (c) => c !== undefined && /^\w$/.test(c);

  function fold(c) { return c.toLowerCase(); }

  function literal(c) {
    const lower = c.toLowerCase(), upper = c.toUpperCase();
    return (x) => x === c || x === lower || x === upper || fold(x) === lower;
  }

  function single(source) {
    // One character against a class: RegExp, anchored, on one code point.
    let re;
    try { re = new RegExp(`^${source}$`, "iu"); } catch (e) { return null; }
    return (x) => re.test(x);
  }

  function unicodeClass(name, negated, at) {
    const pred = single(`\\p{${name}}`) || single(`\\p{Script=${name}}`);
    if (!pred) throw new RegexError(`invalid character class range: \\p{${name}}`, at);
    return negated ? (x) => !pred(x) : pred;
  }

  function parse(pattern) {
    const s = Array.from(pattern);
    let i = 0;
    let dotAll = false, multiLine = false;
    const peek = () => s[i];
    const eof = () => i >= s.length;

    function parseAlt(depth) {
      const items = [parseCat(depth)];
      while (peek() === "|") { i++; items.push(parseCat(depth)); }
      return items.length === 1 ? items[0] : { t: "alt", items };
    }
    function parseCat(depth) {
      const items = [];
      while (!eof() && peek() !== "|" && peek() !== ")") {
        const atom = parseAtom(depth);
        if (atom === null) continue; // a flags group: nothing to match
        items.push(parseRepeat(atom));
      }
      return { t: "cat", items };
    }
    // A quantifier at i (consumed), as [min, max], or null.
    function quantifier() {
      const c = peek();
      const at = i;
      if (c === "*") { i++; return [0, UNBOUNDED]; }
      if (c === "+") { i++; return [1, UNBOUNDED]; }
      if (c === "?") { i++; return [0, 1]; }
      if (c !== "{") return null;
      const m = /^\{(\d+)(,(\d*))?\}/.exec(s.slice(i, i + 16).join(""));
      if (!m) return null; // a literal brace, as in RE2
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === "" ? UNBOUNDED : Number(m[3]);
      if (min > MAX_REPEAT || (max !== UNBOUNDED && (max > MAX_REPEAT || max < min))) {
        throw new RegexError(`bad repetition operator: ${m[0]}`, at);
      }
      i += m[0].length;
      return [min, max];
    }
    function parseRepeat(atom) {
      const at = i;
      const q = quantifier();
      if (!q) return atom;
      if (peek() === "?") i++; // lazy: the same texts match
      const after = i;
      if (quantifier()) throw new RegexError(`bad repetition operator: ${s.slice(at, i).join("")}`, after);
      return { t: "rep", item: atom, min: q[0], max: q[1] };
    }
    function parseAtom(depth) {
      const c = peek();
      const at = i;
      if (c === "*" || c === "+" || c === "?") throw new RegexError(`missing argument to repetition operator: ${c}`, at);
      if (c === "(") {
        if (depth > 1000) throw new RegexError("expression nests too deeply", at);
        i++;
        if (peek() === "?") {
          const rest = s.slice(i, i + 4).join("");
          if (rest.startsWith("?:")) i += 2;
          else if (rest.startsWith("?P<") || rest.startsWith("?<") && !/^\?<[=!]/.test(rest)) {
            const end = s.indexOf(">", i);
            if (end < 0) throw new RegexError(`invalid named capture group: ${s.slice(at).join("")}`, at);
            i = end + 1;
          } else {
            const m = /^\?([imsU]*)(-[imsU]*)?([:)])/.exec(s.slice(i).join(""));
            if (!m) throw new RegexError(`invalid or unsupported Perl syntax: ${s.slice(at, at + 3).join("")}`, at);
            const on = m[1], off = m[2] || "";
            if (on.includes("s")) dotAll = true;
            if (off.includes("s")) dotAll = false;
            if (on.includes("m")) multiLine = true;
            if (off.includes("m")) multiLine = false;
            i += m[0].length;
            if (m[3] === ")") return null;
          }
        }
        const inner = parseAlt(depth + 1);
        if (peek() !== ")") throw new RegexError(`missing ): ${pattern}`, at);
        i++;
        return inner;
      }
      if (c === ")") throw new RegexError(`unexpected ): ${pattern}`, at);
      if (c === "[") return parseClass();
      i++;
      if (c === ".") {
        const all = dotAll;
        return { t: "char", test: all ? () => true : (x) => x !== "\n" };
      }
      if (c === "^") return { t: "assert", kind: multiLine ? "bol" : "begin" };
      if (c === "$") return { t: "assert", kind: multiLine ? "eol" : "end" };
      if (c !== "\\") return { t: "char", test: literal(c) };
      return parseEscape(at);
    }
    function parseEscape(at) {
      if (eof()) throw new RegexError("trailing \\", at);
      const e = s[i++];
      if (/[1-9]/.test(e) || e === "k" || e === "g") throw new RegexError(`invalid escape sequence: \\${e}`, at);
      if (e === "b") return { t: "assert", kind: "word" };
      if (e === "B") return { t: "assert", kind: "notword" };
      if (e === "A") return { t: "assert", kind: "begin" };
      if (e === "z") return { t: "assert", kind: "end" };
      if (e === "Q") {
        // \Q...\E: literal text.
        const items = [];
        while (!eof() && !(s[i] === "\\" && s[i + 1] === "E")) items.push({ t: "char", test: literal(s[i++]) });
        if (!eof()) i += 2;
        return { t: "cat", items };
      }
      const test = classEscape(e, at);
      return { t: "char", test };
    }
    // An escape that stands for one character or a class of them (also inside [...]).
    function classEscape(e, at, asSource) {
      if ("dDwWsS".includes(e)) return asSource ? `\\${e}` : single(`\\${e}`);
      if (e === "p" || e === "P") {
        let name;
        if (peek() === "{") {
          const end = s.indexOf("}", i);
          if (end < 0) throw new RegexError(`invalid character class range: \\${e}`, at);
          name = s.slice(i + 1, end).join("");
          i = end + 1;
        } else {
          if (eof()) throw new RegexError(`invalid character class range: \\${e}`, at);
          name = s[i++];
        }
        let negated = e === "P";
        if (name.startsWith("^")) { negated = !negated; name = name.slice(1); }
        if (name === "Any") name = "Any";
        if (asSource) {
          const ok = single(`\\p{${name}}`) ? `\\p{${name}}` : single(`\\p{Script=${name}}`) ? `\\p{Script=${name}}` : null;
          if (!ok) throw new RegexError(`invalid character class range: \\p{${name}}`, at);
          return negated ? ok.replace("\\p", "\\P") : ok;
        }
        return unicodeClass(name, negated, at);
      }
      let ch;
      if (e in CONTROL) ch = CONTROL[e];
      else if (e === "x") {
        let hex;
        if (peek() === "{") {
          const end = s.indexOf("}", i);
          hex = end < 0 ? "" : s.slice(i + 1, end).join("");
          if (!/^[0-9A-Fa-f]{1,6}$/.test(hex)) throw new RegexError(`invalid escape sequence: \\x`, at);
          i = end + 1;
        } else {
          hex = s.slice(i, i + 2).join("");
          if (!/^[0-9A-Fa-f]{2}$/.test(hex)) throw new RegexError(`invalid escape sequence: \\x${hex}`, at);
          i += 2;
        }
        const cp = parseInt(hex, 16);
        if (cp > 0x10ffff) throw new RegexError(`invalid escape sequence: \\x{${hex}}`, at);
        ch = String.fromCodePoint(cp);
      } else if (e === "0") ch = "\0";
      else if (/[A-Za-z0-9]/.test(e)) throw new RegexError(`invalid escape sequence: \\${e}`, at);
      else ch = e; // escaped punctuation stands for itself
      if (asSource) return `\\u{${ch.codePointAt(0).toString(16)}}`;
      return literal(ch);
    }
    function parseClass() {
      const at = i;
      i++;
      let negated = false;
      if (peek() === "^") { negated = true; i++; }
      let body = "";
      let first = true;
      for (;;) {
        if (eof()) throw new RegexError(`missing ]: ${s.slice(at).join("")}`, at);
        const c = s[i];
        if (c === "]" && !first) { i++; break; }
        first = false;
        if (c === "[" && s[i + 1] === ":") {
          const end = s.slice(i).join("").indexOf(":]");
          const name = end < 0 ? "" : s.slice(i + 2, i + end).join("");
          const neg = name.startsWith("^");
          const known = POSIX[neg ? name.slice(1) : name];
          if (end < 0 || !known) throw new RegexError(`invalid character class range: ${s.slice(i, i + (end < 0 ? 2 : end + 2)).join("")}`, i);
          if (neg) throw new RegexError(`invalid character class range: [:${name}:]`, i);
          body += known;
          i += Array.from(s.slice(i, i + end + 2).join("")).length;
          continue;
        }
        i++;
        if (c === "\\") {
          if (eof()) throw new RegexError(`missing ]: ${s.slice(at).join("")}`, at);
          const e = s[i++];
          body += classEscape(e, i - 2, true);
        } else if (c === "-") body += "\\-";
        else if (SYNTAX.has(c)) body += `\\${c}`;
        else body += `\\u{${c.codePointAt(0).toString(16)}}`;
        // A range "a-z": the dash between two members.
        if (peek() === "-" && s[i + 1] !== undefined && s[i + 1] !== "]") {
          i++;
          let hi = s[i++];
          if (hi === "\\") {
            if (eof()) throw new RegexError(`missing ]: ${s.slice(at).join("")}`, at);
            hi = classEscape(s[i++], i - 2, true);
          } else hi = `\\u{${hi.codePointAt(0).toString(16)}}`;
          body += `-${hi}`;
        }
      }
      const test = single(`[${negated ? "^" : ""}${body}]`);
      if (!test) throw new RegexError(`invalid character class range: ${s.slice(at, i).join("")}`, at);
      return { t: "char", test };
    }

    const tree = parseAlt(0);
    if (!eof()) throw new RegexError(`unexpected ): ${pattern}`, i);
    return tree;
  }

  // ------------------------------------------------------------------ the program

  function compile(tree) {
    const prog = [];
    const emit = (op) => {
      if (prog.length >= MAX_PROGRAM) throw new RegexError("pattern too large - compile failed", 0);
      prog.push(op);
      return prog.length - 1;
    };
    function gen(node) {
      if (node.t === "char") { emit({ op: "char", test: node.test }); return; }
      if (node.t === "assert") { emit({ op: "assert", kind: node.kind }); return; }
      if (node.t === "cat") { for (const item of node.items) gen(item); return; }
      if (node.t === "alt") {
        const jumps = [];
        node.items.forEach((item, k) => {
          if (k < node.items.length - 1) {
            const split = emit({ op: "split", x: 0, y: 0 });
            prog[split].x = prog.length;
            gen(item);
            jumps.push(emit({ op: "jmp", x: 0 }));
            prog[split].y = prog.length;
          } else gen(item);
        });
        for (const j of jumps) prog[j].x = prog.length;
        return;
      }
      // Repetition: min copies, then (max - min) optional copies, or a loop.
      for (let k = 0; k < node.min; k++) gen(node.item);
      if (node.max === UNBOUNDED) {
        const split = emit({ op: "split", x: 0, y: 0 });
        prog[split].x = prog.length;
        gen(node.item);
        emit({ op: "jmp", x: split });
        prog[split].y = prog.length;
        return;
      }
      const splits = [];
      for (let k = node.min; k < node.max; k++) {
        const split = emit({ op: "split", x: 0, y: 0 });
        prog[split].x = prog.length;
        splits.push(split);
        gen(node.item);
      }
      for (const split of splits) prog[split].y = prog.length;
    }
    gen(tree);
    emit({ op: "match" });
    return prog;
  }

  function holds(kind, chars, pos) {
    const prev = chars[pos - 1], next = chars[pos];
    if (kind === "begin") return pos === 0;
    if (kind === "end") return pos === chars.length;
    if (kind === "bol") return pos === 0 || prev === "\n";
    if (kind === "eol") return pos === chars.length || next === "\n";
    const boundary = isWord(prev) !== isWord(next);
    return kind === "word" ? boundary : !boundary;
  }

  function searcher(prog) {
    const size = prog.length;
    const mark = new Int32Array(size);
    let generation = 0;
    // Add the thread at `pc` and every state reachable from it without reading a character.
    function add(list, pc, chars, pos) {
      const stack = [pc];
      while (stack.length) {
        const at = stack.pop();
        if (mark[at] === generation) continue;
        mark[at] = generation;
        const inst = prog[at];
        if (inst.op === "jmp") stack.push(inst.x);
        else if (inst.op === "split") { stack.push(inst.y); stack.push(inst.x); }
        else if (inst.op === "assert") { if (holds(inst.kind, chars, pos)) stack.push(at + 1); }
        else list.push(at);
      }
    }
    return function test(text) {
      const chars = Array.from(text);
      generation++;
      let live = [];
      add(live, 0, chars, 0);
      for (let pos = 0; ; pos++) {
        for (const pc of live) if (prog[pc].op === "match") return true;
        if (pos === chars.length) return false;
        const c = chars[pos];
        generation++;
        const next = [];
        for (const pc of live) {
          const inst = prog[pc];
          if (inst.op === "char" && inst.test(c)) add(next, pc + 1, chars, pos + 1);
        }
        // Unanchored: a new thread starts at every position.
        add(next, 0, chars, pos + 1);
        live = next;
      }
    };
  }

  window.McpRegex = {
    /** A linear-time, case-insensitive search for `pattern`; throws an Error with `index`. */
    compile(pattern) {
      return { test: searcher(compile(parse(pattern))) };
    },
    RegexError,
  };
})();
