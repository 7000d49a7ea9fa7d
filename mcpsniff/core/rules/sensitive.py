"""Secrets where the specification forbids them: in log messages and in form elicitations.

* LOG-NO-SECRETS (``server/utilities/logging.mdx`` § Security): "Log messages
  **MUST NOT** contain: Credentials or secrets". A log message's ``data`` is
  judged by the redactor's own detectors (core/redact.py: credential formats
  with a fixed shape, members named like credentials); a trace recorded with
  redaction on holds ``[REDACTED]`` where one was, which counts the same.
  Reported as a warning: a detector recognises a credential's shape, it cannot
  prove it is live.
* ELIC-NO-SENSITIVE (``client/elicitation.mdx`` § Form Mode Security, 2025-11-25;
  § Security Considerations, 2025-06-18): "Servers **MUST NOT** use form mode
  elicitation to request sensitive information such as passwords, API keys,
  access tokens, or payment credentials". A field of ``requestedSchema`` named
  like a credential (core/secret_names.py) is such a request; URL mode exists
  for it. A warning for the same reason: the name is the evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from mcpsniff.core.model import S2C
from mcpsniff.core.redact import MARK, may_redact, redact_frame
from mcpsniff.core.rules.registry import NOTIFICATION, REQUEST, rule
from mcpsniff.core.secret_names import is_secret_name

if TYPE_CHECKING:
    from mcpsniff.core.session import Session
    from mcpsniff.core.state import Msg

RULES = ("LOG-NO-SECRETS", "ELIC-NO-SENSITIVE")
#: Log data longer than this is judged on its first part only (the detectors
#: are regular expressions; a megabyte log line must not stall the analysis).
DATA_LIMIT = 65536
_MARK_BYTES = MARK.encode()


@rule("LOG-NO-SECRETS", on=NOTIFICATION, methods=("notifications/message",))
def log_secrets(session: Session, msg: Msg) -> None:
    """A log message whose data holds a credential (or its redaction mark)."""
    params = msg.params
    if params is None or msg.direction != S2C or "data" not in params:
        return
    data = params["data"]
    raw = data.encode("utf-8", "replace") if isinstance(data, str) else _dumped(data)
    raw = raw[:DATA_LIMIT]
    # ``find``: ``bytes in bytes`` tries the operand as an integer first and
    # raises and clears a TypeError inside CPython (about 1.8K instructions).
    if raw.find(_MARK_BYTES) >= 0:
        found = "a value the recorder redacted as a secret"
    elif may_redact(raw) and redact_frame(raw)[1]:
        found = "what looks like a credential"
    else:
        return
    logger = str(params.get("logger", ""))[:40] or "unnamed"
    session.report(
        "LOG-NO-SECRETS",
        f"the server's notifications/message (logger {logger}) carries {found}; log messages "
        "must not contain credentials or secrets",
        [msg.frame],
        severity="warning",
    )


def _dumped(data: Any) -> bytes:
    try:
        return orjson.dumps(data)
    except TypeError:  # an integer beyond 64 bits: no secret is a number
        return b""


@rule("ELIC-NO-SENSITIVE", on=REQUEST, methods=("elicitation/create",))
def elicited_secret(session: Session, msg: Msg) -> None:
    """A form elicitation asking for a field named like a credential."""
    params = msg.params
    if params is None or msg.direction != S2C or params.get("mode", "form") != "form":
        return
    schema = params.get("requestedSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return
    named = [name for name in list(properties)[:256] if is_secret_name(name[:200])]
    if not named:
        return
    shown = ", ".join(repr(n[:40]) for n in named[:5])
    session.report(
        "ELIC-NO-SENSITIVE",
        f"the server's form-mode elicitation/create asks for {shown}, named like a credential; "
        "sensitive information such as passwords, API keys and tokens is never requested in "
        "form mode (URL mode sends the user to the server instead)",
        [msg.frame],
        severity="warning",
        fields=[n[:100] for n in named[:20]],
    )
