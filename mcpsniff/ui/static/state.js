// mcpsniff's web views: the page's one shared state, which every part reads and
// changes; the scripts loaded after this one hang their functions on McpApp.
"use strict";

(function () {
  const state = {
    source: null,
    sessions: [],
    current: null,       // session summary
    rows: [],            // all rows of the current session
    findings: [],
    loadingRows: false,
    visible: [],         // indices into rows, what the list shows
    filtered: null,      // Set of row numbers, or null
    filterText: "",
    expanded: new Set(), // batch rows shown with their elements
    selected: null,
    tab: "timeline",
    statsFor: null,
  };

  const A = { state };

  // A function a later script hangs on McpApp, looked up when called:
  // `const { relayout, showTab } = A.late;` works whatever order the scripts ran in.
  A.late = new Proxy({}, { get: (_, name) => (...args) => A[name](...args) });

  // A tab draws each session once: when it does not show the current session yet,
  // mark it as showing it (state[forKey]) and hand back its emptied box and the
  // session's id; else null.
  A.openTab = function (boxId, forKey) {
    if (!state.current || state[forKey] === state.current.id) return null;
    const sid = state.current.id;
    state[forKey] = sid;
    const box = document.getElementById(boxId);
    window.McpDom.clear(box);
    return { box, sid };
  };

  window.McpApp = A;
})();
