"""The book's own rooms: code that exists to read the stored records into the chapters' tables and
verdicts. Nothing in the library (``epm_lib`` outside this package) imports from here.

- ``regions.py``: the converged protocol's runs with chains from the data's start and from one
  atom (MovieLens100K and MovieLens1M): per-region records, the verdicts of H1-H3 decided or left
  open by the two regions and the held-out pairs' preference (stacking), honest run labels
  (*converged* or *capped*, with the spread between chains).
"""
