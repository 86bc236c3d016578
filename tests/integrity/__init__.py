"""Integrity tests: a compacted template session, fault injection, checksums.

The helpers are split by job: :mod:`.template` builds the compacted session the tests
corrupt copies of, :mod:`.tampering` writes into a store with plain :mod:`sqlite3` as a
bug or a careless operator would, :mod:`.faults` is the one catalogue of faults shared
by the checker and repair tests, and :mod:`.checksums` reads the file back through a
separate read-only connection. The crash campaign's parent and child live in
``benchmarks/crash_trials.py`` and ``benchmarks/crash_child.py`` (the benchmark runs
the full campaign, ``test_crash_campaign.py`` ten trials).
"""
