"""The book's look: the rcParams of every chapter's figures, the Okabe-Ito palette, and the colour,
marker and line of each model and baseline in the Part III figures.

``notebook.book_style`` sets :data:`BOOK_RC` and hands out :data:`OKABE_ITO`; ``figures`` draws
with :data:`STYLE` and :data:`BASELINE_STYLE`; ``tables`` names the baselines by their labels.
"""
from __future__ import annotations

__all__ = ["BOOK_RC", "OKABE_ITO", "STYLE", "BASELINE_STYLE"]

#: the rcParams of every chapter's figures (STYLE.md: 150 dpi, text at 10 pt, legends as large)
BOOK_RC = {"figure.dpi": 150, "savefig.dpi": 150, "font.size": 10, "legend.fontsize": 10}
#: The Okabe-Ito palette (colour-blind safe; Okabe & Ito 2008) the book's figures draw with.
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
#: Colour, marker and line of each model in Fig. 2 and the Part III figures (``figures.plot_metric``);
#: the order of the keys is the order of the models in a figure's legend (``figures.finish_figure``).
STYLE = {"EPM": dict(color=OKABE_ITO[1], marker="o", ls="-"), "EPMpaper": dict(color=OKABE_ITO[3], marker="v", ls="--"),
         "CEPM": dict(color=OKABE_ITO[0], marker="s", ls="-"), "DEPM": dict(color=OKABE_ITO[2], marker="^", ls="-"),
         "IDEPM": dict(color="k")}
#: The baselines drawn in Fig. 2 (name in the baseline records -> label, line style).
BASELINE_STYLE = {"popularity": dict(label="popularity", color="0.45", ls=":", lw=1.3),
                  "svd-auto": dict(label="SVD (rank chosen)", color=OKABE_ITO[3], ls="-.", lw=1.2)}
