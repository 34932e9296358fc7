"""Fitting a recall calibration on a root's own labelled questions (``memory-es calibrate``,
DESIGN 9.4): a tool over a root, never on the question path.

- :mod:`~memory_es.calibration.labelled`: the labelled question sets and their checks;
- :mod:`~memory_es.calibration.fit`: the fitting itself, pure over candidate pools;
- :mod:`~memory_es.calibration.report`: reading a root, fitting, and the report.

Recall never imports it; only ``memory-es calibrate`` and the bench load it.
"""
