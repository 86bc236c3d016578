"""What the SQLite and PostgreSQL backends share: statements written once (in SQLite's
``?`` placeholder style, converted by :func:`~mnesis.store.shared.sql.pg`), column lists,
row decoders and the pure halves of the write paths.

Backend-specific things (FTS5 vs tsvector, triggers, connection handling, locking) stay in
the backend packages.
"""
