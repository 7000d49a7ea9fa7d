// Completion for the filter box: field names where a field may start, and the
// values seen in the session after "field ==". An ARIA combobox: ↓/↑ choose,
// Tab or Enter take the choice, Escape closes the list.
//
// Suggestions are values from traffic: they are list items filled with
// textContent, never markup.
"use strict";

(function () {
  const LIMIT = 30;
  const OPERATORS = ["==", "!=", "~", "!~", "<", ">", "<=", ">="];

  // What is being typed at the cursor: a field name, or the value of a comparison.
  function context(text) {
    const value = /([A-Za-z_.]+)\s*(==|!=|~|!~|<=|>=|<|>)\s*("?)([^\s"()]*)$/.exec(text);
    if (value) return { kind: "value", field: value[1], prefix: value[4], start: text.length - value[4].length - value[3].length };
    const word = /(^|[\s(])([A-Za-z_.]*)$/.exec(text);
    if (word) return { kind: "field", prefix: word[2], start: text.length - word[2].length };
    return null;
  }

  function attach(input, list, valuesOf) {
    let items = [];
    let active = -1;
    let at = null;

    function close() {
      const open = !list.hidden;
      list.hidden = true;
      input.setAttribute("aria-expanded", "false");
      input.removeAttribute("aria-activedescendant");
      items = [];
      active = -1;
      return open;
    }

    function show(candidates) {
      while (list.firstChild) list.removeChild(list.firstChild);
      items = candidates.slice(0, LIMIT);
      active = -1;
      if (!items.length) { close(); return; }
      items.forEach((item, i) => {
        const li = document.createElement("li");
        li.id = `suggestion-${i}`;
        li.setAttribute("role", "option");
        li.setAttribute("aria-selected", "false");
        li.textContent = item.text;
        if (item.hint) {
          const hint = document.createElement("span");
          hint.className = "hint";
          hint.textContent = item.hint;
          li.appendChild(hint);
        }
        li.addEventListener("mousedown", (event) => { event.preventDefault(); take(i); });
        list.appendChild(li);
      });
      list.hidden = false;
      input.setAttribute("aria-expanded", "true");
    }

    function mark(i) {
      active = i;
      Array.from(list.children).forEach((li, j) => li.setAttribute("aria-selected", j === i ? "true" : "false"));
      if (i >= 0) {
        input.setAttribute("aria-activedescendant", `suggestion-${i}`);
        list.children[i].scrollIntoView({ block: "nearest" });
      }
    }

    function take(i) {
      const item = items[i];
      if (!item || !at) return;
      const before = input.value.slice(0, at.start);
      input.value = before + item.insert;
      close();
      input.focus();
      input.dispatchEvent(new Event("input"));
    }

    function update() {
      const cursor = input.selectionStart === null ? input.value.length : input.selectionStart;
      if (cursor !== input.value.length) { close(); return; }
      at = context(input.value);
      if (!at || (at.kind === "field" && !at.prefix)) { close(); return; }
      const prefix = at.prefix.toLowerCase();
      if (at.kind === "field") {
        const fields = window.McpFilter.fields().filter((f) => f.name.toLowerCase().startsWith(prefix) && f.name !== at.prefix);
        show(fields.map((f) => ({ text: f.name, insert: f.name + " ", hint: f.of ? `= ${f.of}` : f.type })));
        return;
      }
      const name = window.McpFilter.resolve(at.field);
      if (!name) { close(); return; }
      const field = window.McpFilter.fields().find((f) => f.name === name);
      const seen = new Set([...(field.choices || []), ...(valuesOf(name) || [])]);
      const quote = (v) => (/^[A-Za-z0-9_./:-]+$/.test(v) ? v : JSON.stringify(v));
      const values = [...seen].filter((v) => String(v).toLowerCase().startsWith(prefix) && String(v) !== at.prefix);
      show(values.sort().map((v) => ({ text: String(v), insert: quote(String(v)) + " " })));
    }

    input.addEventListener("input", update);
    input.addEventListener("blur", () => setTimeout(close, 100));
    input.addEventListener("keydown", (event) => {
      if (list.hidden) return;
      if (event.key === "ArrowDown") { mark(Math.min(items.length - 1, active + 1)); event.preventDefault(); }
      else if (event.key === "ArrowUp") { mark(Math.max(0, active - 1)); event.preventDefault(); }
      else if ((event.key === "Tab" || event.key === "Enter") && active >= 0) {
        take(active);
        event.preventDefault();
        event.stopImmediatePropagation();
      }
    });
    return { close, update };
  }

  window.McpComplete = { attach, context, OPERATORS };
})();
