// mcpsniff's waterfall: every request a bar from its send to its answer on the
// session's real time scale, as in a browser's network panel. A request still
// in flight on a live session is drawn as pending and grows; one never answered
// by the end of the session is marked there. Notifications are ticks.
//
// Nothing from traffic becomes markup here: the bars are canvas drawing and
// elements with our own class names; labels are set with textContent.
"use strict";

(function () {
  const LANE_H = 4;
  const TICK_H = 6;
  // Seconds between a live session's last record and now beyond which its times are not ours.
  const LIVE_GAP = 3600;

  // What became of a request: "answered", "pending" (live, no answer yet) or "unanswered".
  function status(row, rows, live) {
    if (row.kind !== "request" || row.id === undefined) return null;
    const answer = row.pair !== undefined ? rows[row.pair] : null;
    if (answer) return "answered";
    return live ? "pending" : "unanswered";
  }

  // [start, end] of a request's bar; a pending one ends now, an unanswered one at the session's end.
  function extent(row, rows, span, live) {
    const answer = row.pair !== undefined ? rows[row.pair] : null;
    if (answer && typeof answer.t === "number") return [row.t, answer.t];
    return [row.t, live ? Math.min(span.now, span.end) : span.end];
  }

  // The session's time scale: from its first record to its last (or to now, while it is live).
  function span(rows, summary, live) {
    let start = null, end = null;
    for (const row of rows) {
      if (!row || typeof row.t !== "number") continue;
      if (start === null || row.t < start) start = row.t;
      if (end === null || row.t > end) end = row.t;
    }
    if (summary && typeof summary.last === "number" && (end === null || summary.last > end)) end = summary.last;
    const now = Date.now() / 1000;
    // A live session's scale runs to now; not when its clock is far from ours (a
    // trace written with other times, a copied file still "recent" by its mtime).
    if (live && end !== null && now > end && now - end < LIVE_GAP) end = now;
    if (start === null) start = end = 0;
    if (end <= start) end = start + 0.001;
    return { start, end, now };
  }

  function within(value, view) {
    return (value - view.start) / (view.end - view.start);
  }

  // The waterfall cell of one row of the list: its bar (a request), or its tick.
  function cell(row, rows, view, live) {
    const box = document.createElement("div");
    box.className = "wf";
    box.setAttribute("aria-hidden", "true");
    if (typeof row.t !== "number") return box;
    const state = status(row, rows, live);
    const mark = document.createElement("span");
    if (state) {
      const [a, b] = extent(row, rows, view, live);
      const left = Math.max(0, Math.min(1, within(a, view)));
      const right = Math.max(left, Math.min(1, within(b, view)));
      mark.className = `wf-bar wf-${state}`;
      mark.style.left = `${(left * 100).toFixed(3)}%`;
      mark.style.width = `max(2px, ${((right - left) * 100).toFixed(3)}%)`;
      box.dataset.status = state;
    } else {
      const at = within(row.t, view);
      if (at < 0 || at > 1) return box;
      mark.className = `wf-tick wf-${row.kind}`;
      mark.style.left = `${(at * 100).toFixed(3)}%`;
    }
    box.appendChild(mark);
    return box;
  }

  // The overview: every request of the session on one strip, packed into lanes,
  // with a drag to select a time range. ``onRange([a, b])`` or ``onRange(null)``.
  function overview(canvas, onRange) {
    const self = { rows: [], view: null, live: false, selection: null, drag: null };
    const styleOf = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";

    // The strip's size and colours are kept, not read at each drawing: reading them
    // forces the browser to lay out the page it is still building (over 100 ms on a
    // long session). A ResizeObserver and a theme change renew them.
    let size = null;
    let colours = null;
    self.recolour = function () { colours = null; self.draw(); };
    new ResizeObserver((entries) => {
      const box = entries[entries.length - 1].contentRect;
      size = [box.width, box.height];
      self.draw();
    }).observe(canvas);
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => self.recolour());

    self.draw = function () {
      const view = self.view;
      const ratio = window.devicePixelRatio || 1;
      if (!size) return;
      const [width, height] = size;
      if (!width || !height) return;
      if (canvas.width !== Math.round(width * ratio)) canvas.width = Math.round(width * ratio);
      if (canvas.height !== Math.round(height * ratio)) canvas.height = Math.round(height * ratio);
      const g = canvas.getContext("2d");
      g.setTransform(ratio, 0, 0, ratio, 0, 0);
      g.clearRect(0, 0, width, height);
      if (!view) return;
      if (!colours) {
        colours = { answered: styleOf("--c2s"), pending: styleOf("--warning"), unanswered: styleOf("--error"),
          notification: styleOf("--s2c"), muted: styleOf("--muted"), select: styleOf("--select") };
      }
      const x = (t) => within(t, view) * width;
      const scale = width / (view.end - view.start);
      const lanes = Math.max(1, Math.floor((height - TICK_H - 14) / LANE_H));
      const ends = [];
      // One path per colour, filled once: a fillStyle and a fill per bar made a
      // 100,000-message session take 400 ms a frame. A bar that adds no pixel to
      // the last one of its lane and colour is left out.
      const paths = { answered: new Path2D(), pending: new Path2D(), unanswered: new Path2D(), notification: new Path2D() };
      const drawn = { answered: [], pending: [], unanswered: [] };
      let lastTick = -1;
      let longest = null;
      const counts = { requests: 0, pending: 0, unanswered: 0 };
      const rows = self.rows, live = self.live;
      for (const row of rows) {
        if (!row || typeof row.t !== "number") continue;
        const state = status(row, rows, live);
        if (!state) {
          if (row.kind === "notification") {
            const px = Math.floor((row.t - view.start) * scale);
            if (px !== lastTick) { paths.notification.rect(px, height - TICK_H, 1, TICK_H); lastTick = px; }
          }
          continue;
        }
        counts.requests++;
        if (state !== "answered") counts[state]++;
        const [a, b] = extent(row, rows, view, live);
        if (longest === null || b - a > longest[1] - longest[0]) longest = [a, b, row];
        let lane = -1;
        for (let i = 0; i < ends.length; i++) if (ends[i] <= a) { lane = i; break; }
        if (lane < 0) lane = ends.length < lanes ? ends.length : lanes - 1;
        ends[lane] = Math.max(ends[lane] || 0, b);
        const x0 = (a - view.start) * scale, x1 = Math.max(x0 + 1.5, (b - view.start) * scale);
        const last = drawn[state][lane];
        if (last !== undefined && x1 <= last + 0.5 && state !== "unanswered") continue;
        drawn[state][lane] = x1;
        const y = 12 + lane * LANE_H;
        paths[state].rect(x0, y, x1 - x0, LANE_H - 1);
        if (state === "unanswered") paths.unanswered.rect(x1 - 1, y - 2, 2, LANE_H + 3);  // at the session's end
      }
      for (const name of ["notification", "answered", "pending", "unanswered"]) {
        g.fillStyle = colours[name];
        g.fill(paths[name]);
      }
      self.counts = counts;
      g.fillStyle = colours.muted;
      g.font = "10px ui-monospace, monospace";
      g.textBaseline = "top";
      g.fillText("0", 2, 0);
      const total = fmtSeconds(view.end - view.start);
      g.textAlign = "right";
      g.fillText(total, width - 2, 0);
      g.textAlign = "left";
      if (self.selection) {
        const [a, b] = self.selection;
        g.fillStyle = colours.select;
        g.globalAlpha = 0.45;
        g.fillRect(x(a), 0, Math.max(1, x(b) - x(a)), height);
        g.globalAlpha = 1;
      }
      self.longest = longest;
    };

    self.update = function (rows, view, live) {
      self.rows = rows;
      self.view = view;
      self.live = live;
      self.draw();
    };

    const timeAt = (event) => {
      const box = canvas.getBoundingClientRect();  // on a pointer event: the page is laid out
      const f = Math.max(0, Math.min(1, (event.clientX - box.left) / box.width));
      return self.view.start + f * (self.view.end - self.view.start);
    };
    canvas.addEventListener("pointerdown", (event) => {
      if (!self.view) return;
      self.drag = timeAt(event);
      self.selection = [self.drag, self.drag];
      canvas.setPointerCapture(event.pointerId);
      self.draw();
    });
    canvas.addEventListener("pointermove", (event) => {
      if (self.drag === null) return;
      const t = timeAt(event);
      self.selection = [Math.min(self.drag, t), Math.max(self.drag, t)];
      self.draw();
    });
    canvas.addEventListener("pointerup", (event) => {
      if (self.drag === null) return;
      const t = timeAt(event);
      const a = Math.min(self.drag, t), b = Math.max(self.drag, t);
      self.drag = null;
      const box = canvas.getBoundingClientRect();
      const wide = ((b - a) / (self.view.end - self.view.start)) * box.width >= 3;
      self.selection = wide ? [a, b] : null;
      self.draw();
      onRange(self.selection);
    });
    return self;
  }

  function fmtSeconds(s) {
    if (s < 1) return `${(s * 1000).toFixed(s < 0.01 ? 2 : 0)} ms`;
    if (s < 120) return `${s.toFixed(s < 10 ? 2 : 1)} s`;
    return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  }

  window.McpWaterfall = { status, extent, span, cell, overview, fmtSeconds };
})();
