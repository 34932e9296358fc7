"""Reading the memories by date and by id, with no ranking (SPEC I*, C9-C11).

- :mod:`~memory_es.browse.journal`: MemoryJournal, a civil-date range read in pages (I*),
  whose typed pages are :mod:`~memory_es.browse.journal_page` and whose cursors are signed
  with :mod:`~memory_es.browse.journal_key`;
- :mod:`~memory_es.browse.inventory`: ``memory-es list`` and ``show`` and id resolution.

It borrows line forms and currentness from :mod:`memory_es.recall.rank`; recall never
imports it.
"""
