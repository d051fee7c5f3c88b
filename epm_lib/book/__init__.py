"""The book's own rooms: code that exists for the book's pages -- a chapter's setup, the stored
records read into the chapters' tables, figures and verdicts, the site's source archive. Nothing in
the library (``epm_lib`` outside this package) imports from here; ``epm_lib.results``,
``epm_lib.figures`` and ``epm_lib.notebook`` only re-export these modules under their former names.

- ``notebook.py``: what every chapter calls (``setup_chapter``, ``check_parameters``, ``key_result``,
  ``versions``, ``import_arviz``);
- ``style.py``: the book's figure style, the Okabe-Ito palette, each model's colour and marker;
- ``records.py``: the stored records of Sec. 5's protocol, of the converged one and of the
  baselines, read back and checked; a metric per fold;
- ``tables.py``: means and paired differences over folds, the markdown tables;
- ``fig2.py``: the numbers behind Fig. 2 (chapter 22) as tidy tables: per (model, T), per pair of
  points, per converged run;
- ``verdicts.py``: chapter 26's verdicts on H1-H3, under either protocol;
- ``figures.py``: one panel of Fig. 2 (``plot_metric``) and the Part III figures;
- ``start_benchmarks.py``: the JSON files of ``benchmarks/bench_starts.py`` (chapters 29, 29b);
- ``regions.py``: the converged protocol's runs with chains from the data's start and from one
  atom (MovieLens100K and MovieLens1M): per-region records, the verdicts of H1-H3 decided or left
  open by the two regions and the held-out pairs' preference (stacking), honest run labels
  (*converged* or *capped*, with the spread between chains);
- the readings of the chapters' hidden cells, each returning the page's claims by name:
  ``overfit.py`` (chapter 23), ``mixing_h3.py`` (chapter 24), ``verdict_readings.py`` (chapters 26,
  26b), ``link_prediction.py`` (chapter 30b: the folds, fits and baselines as one tidy table),
  ``landing.py`` (``intro.ipynb``);
- ``source_archive.py``: the Sphinx extension that writes the site's source archive.
"""
