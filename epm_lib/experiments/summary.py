"""Reading results back: the records of a results folder (:func:`load_results`), mean and
standard error over folds (:func:`summarize`), and the plain-text tables of runs and baselines
(:func:`format_summary`, :func:`format_baselines`)."""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from .records import _check_summary_fields, read_record
from .runs import _MODEL_ORDER, HELDOUT, DataSpec


def _record_key(rec):
    return (rec["dataset"], _MODEL_ORDER.get(rec["model"], 99), rec["model"],
            rec["T"] if rec["T"] is not None else -1, rec.get("K_init") or 0,
            rec["settings"]["n_iter"], rec["settings"]["n_avg"],
            str(rec["settings"].get("heldout", "zeros")), rec["fold"], rec["seed"])


def load_results(results_dir="results", dataset=None, run_ids=None, heldout="zeros") -> list[dict]:
    """All records under ``results_dir`` (of one ``dataset`` folder, or some of them;
    and only ``run_ids`` if given), sorted by data set, model, T, fold, seed.

    ``heldout``: only the records of that held-out protocol (:data:`HELDOUT`); by default
    ``"zeros"``, Sec. 5's, so that a reader who keys records by (model, T, fold) never mixes in
    a masked run; ``None``: every record.

    Files that are not complete records (:func:`read_record`: invalid JSON, a missing field,
    a field of the wrong type, ...) are skipped with a warning that names the file and the
    field. JSON ``null`` in a number stands for a non-finite value (e.g. TDAUC-PR of a fold
    without test ones).
    """
    root = Path(results_dir)
    if dataset is None:
        folders = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    else:
        names = [dataset] if isinstance(dataset, (str, DataSpec)) else list(dataset)
        folders = [root / (d.folder if isinstance(d, DataSpec) else str(d)) for d in names]
    wanted = None if run_ids is None else set(run_ids)
    records = []
    for folder in folders:
        for path in sorted(folder.glob("*.json")):
            if wanted is not None and path.stem not in wanted:
                continue
            try:
                rec = read_record(path)
            except (ValueError, OSError) as e:
                warnings.warn(f"skipping {e}", stacklevel=2)
                continue
            if heldout is None or rec["settings"].get("heldout", "zeros") == heldout:
                records.append(rec)
    records.sort(key=_record_key)
    return records


def _mean_se(values):
    v = np.array([np.nan if x is None else x for x in values], dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return float("nan"), float("nan"), 0
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se, int(v.size)


def summarize(records, metrics=("K_mean", "tdll", "tdauc_pr")) -> list[dict]:
    """Mean and standard error over folds (and seeds) per (data set, model, T, K_init, n_iter, n_avg).

    Each row: the group's keys, ``n`` (runs), ``folds``, and for each metric ``<m>`` and
    ``<m>_se`` (sample standard deviation / sqrt(n); NaN for n = 1; runs with a non-finite
    value are left out of that metric), plus ``seconds``, the mean wall time of a run.
    ``ValueError`` (naming the record and the field) for a record whose fields used here have
    the wrong type (records from :func:`load_results` have been checked).
    """
    records = list(records)
    for k, rec in enumerate(records):
        where = f"record {k}"
        if isinstance(rec, dict) and isinstance(rec.get("run_id"), str):
            where = f"record {rec['dataset']}/{rec['run_id']}" \
                if isinstance(rec.get("dataset"), str) else f"record {rec['run_id']}"
        _check_summary_fields(rec, where, metrics)
    groups = {}
    for rec in sorted(records, key=_record_key):
        s = rec["settings"]
        key = (rec["dataset"], rec["model"], rec["T"], rec.get("K_init"), s["n_iter"], s["n_avg"],
               s.get("heldout", "zeros"))
        groups.setdefault(key, []).append(rec)
    rows = []
    for (dataset, model, T, K_init, n_iter, n_avg, heldout), recs in groups.items():
        row = dict(dataset=dataset, model=model, T=T, K_init=K_init, n_iter=n_iter, n_avg=n_avg,
                   heldout=heldout, n=len(recs), folds=sorted({r["fold"] for r in recs}))
        for m in metrics:
            row[m], row[m + "_se"], _ = _mean_se([r[m] for r in recs])
        row["seconds"] = float(np.mean([r["time"]["wall"] for r in recs]))
        if len({r["data"]["fingerprint"] for r in recs}) > 1:
            warnings.warn(f"{dataset}/{model}: runs of different data (fingerprints differ)",
                          stacklevel=2)
        rows.append(row)
    return rows


def _pm(mean, se, digits):
    if not math.isfinite(mean):
        return "-"
    if not math.isfinite(se):
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def format_baselines(records) -> str:
    """A plain-text table of baseline records: mean ± SE over folds per protocol and baseline."""
    if not records:
        return "(no baseline records)"
    head = ["dataset", "heldout", "baseline", "folds", "TDLL", "TDAUC-PR", "AUC-ROC"]
    body = []
    for h in HELDOUT:
        for name in records[0]["heldout"][h]:
            vals = {m: _mean_se([r["heldout"][h][name][m] for r in records if name in r["heldout"][h]])
                    for m in ("tdll", "tdauc_pr", "auc_roc")}
            body.append([records[0]["dataset"], h, name, str(vals["tdll"][2]),
                         _pm(*vals["tdll"][:2], 4), _pm(*vals["tdauc_pr"][:2], 4),
                         _pm(*vals["auc_roc"][:2], 4)])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(cells, widths))
                     for cells in [head, ["-" * w for w in widths]] + body)


def format_summary(rows) -> str:
    """A plain-text table of :func:`summarize` rows (mean ± SE over folds)."""
    head = ["dataset", "model", "T/K_init", "n", "K", "TDLL", "TDAUC-PR", "s/run"]
    body = [[r["dataset"], r["model"] + (f" ({r['heldout']})" if r.get("heldout", "zeros") != "zeros"
                                         else ""), f"T={r['T']}" if r["T"] is not None else f"K0={r['K_init']}",
             str(r["n"]), _pm(r["K_mean"], r["K_mean_se"], 2), _pm(r["tdll"], r["tdll_se"], 4),
             _pm(r["tdauc_pr"], r["tdauc_pr_se"], 4), f"{r['seconds']:.1f}"] for r in rows]
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    fmt = lambda cells: "  ".join(c.rjust(w) if k >= 3 else c.ljust(w)   # noqa: E731
                                  for k, (c, w) in enumerate(zip(cells, widths)))
    return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body])
