"""Differential conformance: one scenario suite run against Apache Kafka and sharetxn.

A scenario is a function taking a ``Ctx`` (a bootstrap address and a run token) and
returning a JSON-able observation of what a client sees: error codes per request, records
and their delivery counts, offsets, share-partition start offsets, group states and
assignments.  The runner runs every scenario against both brokers, compares the
observations and prints a table: identical, different-and-documented (listed in
``KNOWN_DIFFERENCES`` with the section of ``docs/conformance.md`` that gives the reason),
different-and-open.  See ``docs/reference.md``.
"""
