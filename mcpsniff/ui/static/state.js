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

  window.McpApp = { state };
})();
