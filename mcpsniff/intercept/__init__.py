"""The relays' wire, and what changes traffic on it (docs/architecture.md, layer 7).

How bytes move between the peers once a shell (``mcpsniff.relay``) has its
sockets and pipes: the HTTP connections and exchanges, the pumps' shared pipe
handling, and the interventions asked for by name: ``--guard enforce`` (the
gates) and ``--fault`` (the faulted connection and pumps). Nothing here imports
a shell; the shells choose which wire runs.
"""
