"""What a question looks at (G3, G31, L4-L5): the bounded candidate pool (FTS5 and vectors, one
graph hop in BuJo) in :mod:`~memory_es.recall.retrieve.candidates`, and lexical evidence from
the index's own statistics in :mod:`~memory_es.recall.retrieve.lexical`.
"""
