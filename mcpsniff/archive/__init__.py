"""The columnar archive: traces as Parquet tables (``export parquet``) queried with SQL (``query``).

The schema is versioned and documented in docs/archive.md. ``rows`` turns a
trace into plain row dicts (no third-party library), ``parquet`` writes and
appends them (pyarrow), ``sql`` runs a query over an archive or traces
(DuckDB). pyarrow and DuckDB are the optional extra ``archive``.
"""
