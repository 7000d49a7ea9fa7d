"""The one error a filter expression can raise, with a caret under the bad spot."""

from __future__ import annotations

from mcpsniff.core.escape import terminal_safe


class FilterError(ValueError):
    """A filter expression that cannot be parsed or compiled.

    ``message`` says what is wrong, ``position`` is the 0-based character
    offset in ``source`` it concerns; ``caret()`` renders both for a terminal.
    ``str(error)`` is the one-line form: ``message (at column N)``.
    """

    def __init__(self, message: str, source: str, position: int) -> None:
        self.message = message
        self.source = source
        self.position = max(0, min(position, len(source)))
        super().__init__(f"{message} (at column {self.position + 1})")

    def caret(self) -> str:
        """Two lines: the expression, then a caret under the offending position.

        A command prints ``str(error)`` as its one-line error, then these two.

        The expression is shown terminal-safe; the caret is placed under the
        same character of the escaped text, so that it still points right when
        an earlier character had to be escaped.
        """
        shown = terminal_safe(self.source.replace("\n", " ").replace("\t", " "))
        prefix = terminal_safe(self.source[: self.position].replace("\n", " ").replace("\t", " "))
        return f"{shown}\n{' ' * len(prefix)}^"
