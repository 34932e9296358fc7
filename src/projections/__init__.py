"""projections: pure, deterministic folds of the journal's events into files and an index.

These modules import the domain from ``memory_es`` (events, ids, the journal); ``memory_es``'s
face imports nothing until a name is used, so either package may be imported first.
"""
