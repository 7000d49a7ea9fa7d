"""The capture layer: from what a shell forwarded to a trace, across two processes.

Every shell (``mcpsniff stdio``, ``mcpsniff http``, the mitmproxy addon) only
forwards bytes and notes what it forwarded as observations; recording and
analysis run in a separate *analysis process*, so that they never sit between
a read and its write (docs/architecture.md, "forward first, observe second").
This package is everything between the two, and each module says which
process it runs in:

=====================  =====================================================
module                 runs in
=====================  =====================================================
``channel``            both: ``Channel`` in the shell (batches, the bounded
                       backlog, gap accounting); ``read_batches`` in the
                       analysis process
``analysis_process``   the shell: forks or spawns the analysis process and
                       waits for it (``become_analysis_process`` runs in the
                       child)
``supervisor``         the shell: what happens when the analysis process dies
``priority``           both: ``ForwardingClock`` (the shell stamps it, through
                       the channel); ``Baton`` in the analysis process (a low
                       thread while the shell forwards, the main one after)
``worker``             the analysis process: observations in, trace out
                       (``fork_analysis`` starts it from the shell)
``recorder``           the analysis process (or the shell's own, for replay
                       and tests): the analyzer into the trace and the sinks
``sinks``              the analysis process: outputs besides the trace, built
                       from the command's ``Outputs``
``lanes``              ``mcpsniff stdio --lanes 2``: the analysis process (the
                       recording lane) forks the derived lane and passes it
                       every byte; the derived lane runs the full analysis
=====================  =====================================================

Nothing here imports a shell (``mcpsniff.relay``, ``mcpsniff.mitm``).
"""
