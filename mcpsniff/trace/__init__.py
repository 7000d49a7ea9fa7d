"""The trace file: the JSONL record of a session, and everything that reads or writes one.

``codec`` is the format (records <-> lines); ``writer`` writes a trace,
``reader`` reads one (``inputs()`` is check's hot loop) and ``tail`` follows
one as it grows; ``paths`` names and opens trace files, ``salvage`` completes
the trace of an analysis process that died, ``validate`` judges a record's
shape, ``longlines`` reads past junk lines, ``spool`` copies a pipe to a file,
``gaps`` tallies capture gaps, ``redact_trace`` redacts a recorded trace, and
``output_target`` keeps an ``-o`` from replacing a trace.
"""
