"""The guard across sessions and traces: what each server offers, and what a team allows.

* ``inventory``: one pass over a trace: each session's server, its definitions,
  its slowest requests
* ``tokens``: what definitions cost in a model's context, by real offline tokenizers
* ``lockfile``: ``mcpsniff pin``'s reviewed lock file, read and written
* ``history``: the state folder's memory of each server's last offer
* ``findings``: drift, pins, shadowing and the policy gates, as finding records
* ``tools_report``: ``mcpsniff tools``, as text or JSON
* ``enforce``: the relays' ``--guard enforce`` decision on a ``tools/call``

The per-message guard rules (hidden instructions, drift within a session) are
core rules (``core/rules/guard.py``); this package reads whole traces.
"""
