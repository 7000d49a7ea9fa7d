"""``mcpsniff check``: re-analyze a trace's raw frames with today's rules and give a verdict.

``run.py`` walks the trace and reports; ``cli/check.py`` only parses the options
into a :class:`~mcpsniff.check.run.CheckOptions` and turns the result into an
exit status.
"""

#: The report formats: ``text`` for a person, ``json`` a finding a line, and the
#: two files a CI system reads (``export/check_report.py``). Here, not in
#: ``run.py``, so that ``check --help`` lists them without importing the analyzer.
FORMATS = ("text", "json", "sarif", "junit")
