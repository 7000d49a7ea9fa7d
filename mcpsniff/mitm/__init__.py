"""The mitmproxy integration: ``mitmdump -s addons/mcpsniff.py`` loads ``addon.McpSniff``.

=================  ==========================================================
module             runs in
=================  ==========================================================
``addon``          mitmproxy's process: the addon (hooks, options, the trace's
                   lifecycle); it only observes and notes each MCP exchange
``link``           mitmproxy's process: the addon's end of its analysis
                   process (``AnalysisClient``) and the messages both ends share
``flow_findings``  mitmproxy's process: which flow gets an exchange's
                   findings, and how they look there
``worker``         the addon's analysis process (``python -m
                   mcpsniff.mitm.worker``): the capture worker, plus the
                   replies that carry findings back
=================  ==========================================================

Only ``addon`` imports mitmproxy; the analysis process never does.
"""
