"""The severities a rule's findings carry (``mcpsniff rules`` lists them).

A finding's severity is the catalogue's for the version in force
(``CatalogEntry.severity_for``; the strongest keyword while no version is
known), unless the rule passes its own to ``Session.report(severity=...)``:
a heuristic part of a MUST reported as a warning, a notice at info. ``OVERRIDES``
names every rule that does, with every severity its findings carry, so that the
listing says what the findings say. tests/core/rules/test_severities.py holds
the table to the sources (each ``report`` call's severity) and to the proofs.
"""

from __future__ import annotations

from mcpsniff.core import catalog

#: The severities, strongest first.
ORDER = ("error", "warning", "info")
#: Rules that report with a severity of their own: every severity they carry,
#: strongest first (the catalogue's too where some of their reports use it).
OVERRIDES: dict[str, tuple[str, ...]] = {
    "CANCEL-IN-PROGRESS": ("info",),
    "CANCEL-NO-RESPONSE": ("info",),
    "ELIC-FORM-NO-LINKS": ("warning",),
    "ELIC-NO-SENSITIVE": ("warning",),
    "ELIC-URL-SAFE": ("warning",),
    "EXT-TASKS-UNKNOWN": ("error", "warning"),
    "GUARD-HIDDEN-DEFINITION": ("warning", "info"),  # strong or weak hits
    "GUARD-HIDDEN-RESULT": ("warning", "info"),  # strong or weak hits
    "HTTP-ORIGIN": ("warning",),
    "HTTP-POST-ACCEPT": ("error", "warning"),
    "HTTP-SESSION-ASSIGN": ("info",),
    "HTTP-SESSION-SECURE": ("info",),
    "ICON-SAFE-SCHEME": ("warning",),
    "JR-PARSE": ("error", "info"),
    "JR-RESP-REQUIRED": ("error", "info"),
    "LC-VERSION-CLIENT-DISCONNECT": ("info",),
    "LC-VERSION-SERVER": ("warning",),
    "LOG-NO-SECRETS": ("warning",),
    "MOD-CANCEL": ("info",),
    "MOD-HTTP-POST-ONLY": ("error", "warning"),
    "MOD-HTTP-SSE": ("error", "warning"),
    "MOD-LIST-STABLE": ("info",),
    "MOD-REMOVED": ("warning",),
    "MOD-UNSUPPORTED-VERSION": ("error", "warning"),
    "PAGE-INVALID-CURSOR": ("warning",),
    "PING-PROMPT": ("info",),
    "PROMPT-REQUIRED-ARGS": ("info",),
    "SAMP-TOOLCHOICE": ("error", "info"),
    "SSE-ORIGIN": ("warning",),
    "TASK-RELATED-META": ("warning",),
    "TOOL-STRUCTURED-TEXT": ("warning",),
}


def severities(rule_id: str) -> tuple[str, ...]:
    """Every severity ``rule_id``'s findings can carry, strongest first.

    Raises KeyError for an id the catalogue does not have.
    """
    found = OVERRIDES.get(rule_id)
    if found is not None:
        return found
    entry = catalog.get(rule_id)
    carried = {entry.default_severity, *(entry.severity_for(v) for v in entry.versions)}
    return tuple(severity for severity in ORDER if severity in carried)
