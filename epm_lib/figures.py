"""The former home of the Part III figures, kept so that ``from epm_lib.figures import X`` still
works: the book's own modules live in ``epm_lib.book`` (here ``epm_lib.book.figures``; no module of
the library imports them)."""
from .book.figures import T_TICKS, fig2_figure, finish_figure, plot_metric, protocols_figure

__all__ = ["plot_metric", "finish_figure", "fig2_figure", "protocols_figure", "T_TICKS"]
