"""What comes first and what is cut (G4-G22, H2-H11, M24-M33): pure functions over a candidate
pool: anchors, the score, selection, the read policies, the calibrations, and a hit with its
line forms. It never retrieves and never builds a section: it imports neither
:mod:`memory_es.recall.retrieve` nor :mod:`memory_es.recall.sections`.
"""
