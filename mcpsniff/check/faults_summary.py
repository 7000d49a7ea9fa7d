"""``check --faults-summary``: each fault mcpsniff injected, and how the other peer reacted.

The faults are the ``fault`` events of the trace (``mcpsniff.faults.engine``);
the reactions are what the resilience rules (``core/rules/resilience.py``)
concluded while ``check`` re-analyzed the session, kept on the session's
``FaultLedger`` with the count of findings it withheld because they named a
frame mcpsniff made, damaged or withheld.
"""

from __future__ import annotations

from mcpsniff.core.analyzer import Analyzer
from mcpsniff.core.escape import terminal_safe
from mcpsniff.core.fault_ledger import FaultNote
from mcpsniff.core.ids import show_id

#: What a fault's reaction says when no resilience rule judges that action.
NOT_JUDGED = "not judged (no resilience rule for this action)"


def faults_summary_lines(analyzer: Analyzer) -> list[str]:
    """The text of the summary: a headline, then one line per fault, session by session."""
    lines: list[str] = []
    total = 0
    withheld = 0
    for key, session in analyzer.sessions.items():
        ledger = session.faults
        if ledger is None:
            continue
        total += len(ledger.notes)
        withheld += ledger.withheld
        lines.append(f"session {terminal_safe(key)}:")
        lines.extend(f"  {_describe(note)}" for note in ledger.notes)
        if ledger.withheld:
            rules = sorted({rule for rule, _ in ledger.withheld_rules})
            lines.append(
                f"  {ledger.withheld} finding(s) withheld, naming frames mcpsniff touched: "
                + ", ".join(rules)
            )
    if not total:
        return ["Faults: none injected in this trace."]
    head = f"Faults: {total} injected; {withheld} finding(s) withheld (not the peers' doing)"
    return [head, *lines]


def _describe(note: FaultNote) -> str:
    data = note.data
    what = note.action
    if note.action == "delay" and isinstance(data.get("delay_ms"), int | float):
        what = f"delay {data['delay_ms']:.0f} ms"
    elif note.action == "corrupt":
        what = f"corrupt {data.get('corruption', '?')}"
    elif note.action in ("error", "status"):
        what = f"{note.action} {data.get('code', '?')}"
    target = f"{note.direction} {note.kind}"
    if note.method:
        target += f" {note.method}"
    if note.has_id:
        target += f" id {show_id(note.id)}"
    reaction = note.reaction or NOT_JUDGED
    spec = str(data.get("spec", ""))[:120]
    return terminal_safe(f"seq {note.seq}  {what}  to {target}  [{spec}]  reaction: {reaction}")
