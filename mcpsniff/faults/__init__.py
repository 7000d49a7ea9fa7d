"""Fault injection: misbehave on purpose on the wire, deterministically, and say so in the trace.

``spec`` parses ``--fault`` specifications (``ACTION [ARGS] [when FILTER]
[MODIFIERS]``); ``engine`` decides, message by message, which fault applies
(filters, ``prob``/``seed``, ``times``, ``after``) and describes each
injection as a ``fault`` event for the trace (``record``); ``lines`` carries
the decisions out on a newline-delimited stream (the stdio relay, ``replay
serve``). The shells call these only when a fault was asked for: without one
nothing here runs and forwarding is unchanged. docs/faults.md is the user's guide.
"""
