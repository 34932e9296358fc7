"""How long a test waits for a process, a thread or a condition before calling it hung.

A ceiling guards against a hang, never measures speed: a loaded 2-core machine must never reach
it (a crash-matrix helper that takes 2 s alone took over 30 s under a parallel suite). Tests wait
on the condition they need and give up only at this bound.
"""

from __future__ import annotations

HANG_S = 600.0
