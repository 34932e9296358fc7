"""projections: pure, deterministic folds of the journal's events into files and an index.

``memory_es`` is imported first: its face imports the store, which imports these modules, and
these modules import the domain from ``memory_es``. Importing it here fixes one order whichever
package a caller names first.
"""

import memory_es  # noqa: F401  (import order, see above)
