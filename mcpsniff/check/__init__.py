"""``mcpsniff check``: re-analyze a trace's raw frames with today's rules and give a verdict.

``run.py`` walks the trace and reports; ``cli/check.py`` only parses the options
into a :class:`~mcpsniff.check.run.CheckOptions` and turns the result into an
exit status.
"""
