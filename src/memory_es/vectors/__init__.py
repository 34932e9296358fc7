"""The index's vectors (SPEC D4, D6, D9, B25; DESIGN 9.5): written by the store and the worker,
read by recall, and by nothing that answers a question itself.

- :mod:`~memory_es.vectors.cache`: the vector cache at the root (by identity and text hash);
- :mod:`~memory_es.vectors.pending`: the pending-vector queue, embedding and backlog;
- :mod:`~memory_es.vectors.matrix`: a generation's vectors as one matrix, searched exactly
  or through :mod:`~memory_es.vectors.ann` past its threshold, its rows kept by
  :mod:`~memory_es.vectors.spill` in a long-lived writer;
- :mod:`~memory_es.vectors.health`: what health reports of the cache and the stored vectors.

This room never imports recall, browse or calibration: it is the floor they stand on.
"""
