"""BuJo capture (SPEC E*, DESIGN 6): model contracts, chat providers and the pipeline.

The worker step itself is :mod:`memory_es.capture.pipeline` (with :mod:`.rules`,
:mod:`.reconcile` and :mod:`.commit`); :mod:`.reads` is what it reads from the index. Import
what you use from its module: the package re-exports nothing, so importing one part of
capture loads no other.
"""
