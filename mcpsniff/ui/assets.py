"""The page's files (``static/``) in the package: served by ``ui``, inlined by ``report``."""

from __future__ import annotations

from importlib import resources

#: The page's scripts, in the order they run (app.js, last, uses the others).
SCRIPTS = (
    "regex.js",
    "filter.js",
    "waterfall.js",
    "actions.js",
    "complete.js",
    "dom.js",
    "state.js",
    "sources.js",
    "sessions.js",
    "timeline.js",
    "detail.js",
    "filtering.js",
    "findings.js",
    "stats.js",
    "compare.js",
    "wholefile.js",
    "app.js",
)
#: Every file the server hands out, with its media type.
STATIC = {
    **dict.fromkeys(SCRIPTS, "text/javascript"),
    "app.css": "text/css",
}


def static_text(name: str) -> str:
    """A file of the page, from the package."""
    return resources.files("mcpsniff.ui").joinpath("static", name).read_text("utf-8")
