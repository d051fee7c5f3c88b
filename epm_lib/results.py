"""The former home of the Part III chapters' helpers, kept so that ``from epm_lib.results import X``
still works: the book's own modules live in ``epm_lib.book`` (no module of the library imports them).

- ``epm_lib.book.records``: the stored records read back and checked, a metric per fold;
- ``epm_lib.book.tables``: means and paired differences over folds, the markdown tables;
- ``epm_lib.book.verdicts``: chapter 26's verdicts on H1-H3;
- ``epm_lib.book.figures``: one panel of Fig. 2 (``plot_metric``) and the Part III figures;
- ``epm_lib.book.style``: the book's palette and the models' colours, markers and lines;
- ``epm_lib.book.start_benchmarks``: the JSON files of ``benchmarks/bench_starts.py``.

Not to be confused with ``epm_lib.result``, what ``fit`` returns (``FitResult``).
"""
from .book.figures import plot_metric
from .book.records import (CONVERGED_MODELS, CONVERGED_SPLIT_MERGE, DATASET_NAMES, EXPECTED_FOLDS, METRICS,
                           PART3_DATASETS, TRUNCATED, baseline_values, check_converged, check_part3_parameters,
                           check_records, common_folds, completeness, hyper_end, load_baselines_present,
                           load_converged_present, load_present, load_protocols, n_grid, on_folds, paper_protocol,
                           paper_runs, rhat_max, start_means, values)
from .book.start_benchmarks import (START_METRICS, START_SEED, START_SWEEPS, network_scores, planted_scores,
                                    start_differences, start_tag)
from .book.style import BASELINE_STYLE, OKABE_ITO, STYLE
from .book.tables import (PROTOCOL_KEY_COLUMNS, PROTOCOL_MODELS, baseline_table, best_T, check_digits, clear, fmt,
                          md_table, mean_se, model_spread, narrow, number_table, paired, protocol_comparison,
                          protocol_table)
from .book.verdicts import (PART_ORDER, at_start_share, compare, h3_level, verdict_changes, verdict_label,
                            verdict_parts, verdict_table)

__all__ = ["PART3_DATASETS", "check_part3_parameters", "EXPECTED_FOLDS", "TRUNCATED", "STYLE", "METRICS",
           "paper_protocol", "check_records", "load_present", "load_baselines_present", "baseline_values",
           "BASELINE_STYLE", "values", "mean_se", "paired", "hyper_end", "n_grid", "completeness", "plot_metric",
           "OKABE_ITO", "DATASET_NAMES", "fmt", "check_digits", "md_table", "narrow", "PROTOCOL_KEY_COLUMNS",
           "number_table", "baseline_table", "load_protocols", "protocol_table", "best_T", "clear",
           "load_converged_present", "check_converged", "CONVERGED_SPLIT_MERGE", "on_folds", "protocol_comparison",
           "compare", "verdict_parts", "verdict_label", "verdict_table", "PART_ORDER", "verdict_changes",
           "common_folds", "CONVERGED_MODELS", "h3_level", "rhat_max", "start_means", "model_spread",
           "planted_scores", "network_scores", "paper_runs", "PROTOCOL_MODELS", "at_start_share",
           "START_METRICS", "START_SEED", "START_SWEEPS", "start_tag", "start_differences"]
