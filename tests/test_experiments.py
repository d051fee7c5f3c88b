"""epm_lib.experiments: folds, split, run records, the grid (resume, Dask), the command line.

Everything runs on toy90 or small random matrices with a few Gibbs iterations and writes only
into pytest's tmp_path. Subprocesses and clusters are killed / closed before a test returns.
"""
import json
import math
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp

import epm_lib
from epm_lib import experiments as ex
from epm_lib.fit import missing_mask
import epm_lib.baselines  # noqa: F401  (epm_lib.baselines.score_baselines)

FAST = dict(n_iter=5, n_avg=2)


@pytest.fixture(scope="module", autouse=True)
def warm_numba():
    """Compile (or load from numba's cache) the samplers once, so that subprocesses load them."""
    for model, T in (("DEPM", 2), ("IDEPM", None), ("EPM", 2), ("CEPM", 2)):
        ex.run_one(ex.Run("toy90", model, T=T, n_iter=2, n_avg=1))


# ---------------------------------------------------------------------------------------------
# folds and split
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,n_folds", [((7, 11), 10), ((90, 90), 10), ((3, 4), 5), ((1, 2), 2)])
def test_folds_partition_every_entry_exactly_once(shape, n_folds):
    I, J = shape
    folds = ex.cv_folds(shape, n_folds=n_folds, seed=3)
    assert len(folds) == n_folds
    linear = np.concatenate([r.astype(np.int64) * J + c for r, c in folds])
    assert np.array_equal(np.sort(linear), np.arange(I * J))
    sizes = [r.size for r, _ in folds]
    assert max(sizes) - min(sizes) <= 1
    for r, c in folds:
        assert r.dtype == np.int32 and c.dtype == np.int32
        key = r.astype(np.int64) * J + c
        assert np.all(np.diff(key) > 0)                    # sorted row-major, no repeats
        assert r.min() >= 0 and r.max() < I and c.min() >= 0 and c.max() < J


def test_folds_are_reproducible_and_defined_by_the_seeded_permutation():
    a = ex.cv_folds((13, 17), seed=5)
    b = ex.cv_folds((13, 17), seed=5)
    c = ex.cv_folds((13, 17), seed=6)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    assert not all(np.array_equal(x[0], y[0]) for x, y in zip(a, c))
    # the documented definition: consecutive pieces of default_rng(seed).permutation(I * J)
    perm = np.random.default_rng(5).permutation(13 * 17)
    assert np.array_equal(ex.cv_permutation((13, 17), 5), perm)
    pieces = np.array_split(perm, 10)
    for f in range(10):
        r, c = ex.cv_fold((13, 17), f, 10, 5)
        assert np.array_equal(r.astype(np.int64) * 17 + c, np.sort(pieces[f]))
        assert np.array_equal(r, a[f][0]) and np.array_equal(c, a[f][1])


@pytest.mark.slow
def test_one_fold_of_movielens1m_size_is_int32():
    r, c = ex.cv_fold((6040, 3706), 9)
    assert r.dtype == np.int32 and r.size == 6040 * 3706 // 10
    assert r.max() < 6040 and c.max() < 3706
    ex._PERM_CACHE.clear()                                 # free the 90 MB permutation


@pytest.mark.parametrize("kwargs,msg", [
    (dict(shape=(5, 5), n_folds=1), "n_folds must be an integer >= 2"),
    (dict(shape=(2, 2), n_folds=5), "exceeds the 4 entries"),
    (dict(shape=(0, 5)), "shape must be positive"),
])
def test_fold_errors(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        ex.cv_folds(**kwargs)


@pytest.mark.parametrize("fold", [10, -1, 2.0, True])
def test_fold_out_of_range(fold):
    with pytest.raises(ValueError, match="out of range: folds are 0..9"):
        ex.cv_fold((5, 5), fold)


@pytest.mark.parametrize("sparse,table", [(False, True), (True, True), (True, False)])
def test_split_zeroes_the_test_entries_and_labels_are_their_values(sparse, table, monkeypatch):
    if not table:                                          # the sorting path of huge matrices
        monkeypatch.setattr(ex.folds, "_TABLE_MAX", 0)
    rng = np.random.default_rng(0)
    X = (rng.random((12, 9)) < 0.3).astype(np.int8)
    for f, fold in enumerate(ex.cv_folds(X.shape, n_folds=4, seed=1)):
        X_train, (r, c, labels) = ex.split(sp.csr_matrix(X) if sparse else X, fold)
        assert isinstance(X_train, sp.csr_matrix) and X_train.dtype == np.int8
        assert X_train.has_canonical_format
        A = X_train.toarray()
        assert np.all(A[r, c] == 0)                        # test entries are zeros of X_train
        assert np.array_equal(labels, X[r, c]) and labels.dtype == np.int8
        mask = np.ones(X.shape, dtype=bool)
        mask[r, c] = False
        assert np.array_equal(A[mask], X[mask])            # everything else untouched
        assert X_train.nnz + labels.sum() == X.sum()


@pytest.mark.parametrize("table", [True, False])
def test_split_errors(table, monkeypatch):
    if not table:
        monkeypatch.setattr(ex.folds, "_TABLE_MAX", 0)
    X = np.eye(4, dtype=np.int8)
    with pytest.raises(ValueError, match="pair"):
        ex.split(X, np.arange(3))
    with pytest.raises(ValueError, match="out of range"):
        ex.split(X, (np.array([0, 4]), np.array([0, 0])))
    with pytest.raises(ValueError, match="more than once"):
        ex.split(X, (np.array([1, 1]), np.array([2, 2])))
    with pytest.raises(ValueError, match="integer"):
        ex.split(X, (np.array([1.0]), np.array([2.0])))
    with pytest.raises(ValueError, match="binary"):
        ex.split(2 * X, (np.array([1]), np.array([2])))


# ---------------------------------------------------------------------------------------------
# runs and records
# ---------------------------------------------------------------------------------------------
def test_run_ids_encode_the_settings():
    assert ex.Run("toy90", "DEPM", T=128, fold=3).run_id == "DEPM-T128-fold3-seed0-n600"
    assert ex.Run("toy90", "epmpaper", T=8, seed=2, n_iter=50, n_avg=10).run_id \
        == "EPMpaper-T8-fold0-seed2-n50-avg10"
    assert ex.Run("toy90", "IDEPM").run_id == f"IDEPM-K{epm_lib.DEFAULT_K_INIT}-fold0-seed0-n600"
    assert ex.Run("toy90", "IDEPM", K_init=7, n_folds=5, cv_seed=1).run_id \
        == "IDEPM-K7-fold0-seed0-n600-cv5s1"
    r = ex.Run("enron09", "CEPMpaper", T=4, fold=9)
    assert r.path("res").as_posix() == "res/enron09/CEPMpaper-T4-fold9-seed0-n600.json"
    assert r.settings()["sampler"] == "CEPM" and r.settings()["a_update"] == "paper"
    assert ex.Run("toy90", "IDEPMpaper").settings()["m_step"] == "paper"
    assert ex.DataSpec("enron09", options={"recipients": "all"}).folder == "enron09_recipients-all"
    assert ex.DataSpec("enron09", options={"recipients": "to"}).folder == "enron09"


@pytest.mark.parametrize("kwargs,msg", [
    (dict(data="mnist", model="DEPM", T=2), "unknown data set 'mnist'"),
    (dict(data="toy90", model="LDA", T=2), "unknown model 'LDA'"),
    (dict(data="toy90", model="IDEPM", T=8), "T = 8 given for the IDEPM: the IDEPM is not truncated"),
    (dict(data="toy90", model="DEPM"), "the DEPM is truncated: give T"),
    (dict(data="toy90", model="DEPM", T=2, K_init=5), "K_init = 5 given for the DEPM"),
    (dict(data="toy90", model="DEPM", T=2, fold=10), r"fold 10 is out of range: folds are 0..9"),
    (dict(data="toy90", model="DEPM", T=2, fold=4, n_folds=3), r"folds are 0..2"),
    (dict(data="toy90", model="DEPM", T=0), "T must be an integer >= 1"),
    (dict(data="toy90", model="DEPM", T=2, n_iter=5, n_avg=6), "n_avg = 6 exceeds n_iter = 5"),
])
def test_run_errors(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        ex.Run(**kwargs)


@pytest.mark.parametrize("kwargs,msg", [
    (dict(datasets="nope"), "unknown data set 'nope'"),
    (dict(datasets="toy90", models=["IDEPM"], T=[2, 4]), "not truncated"),
    (dict(datasets="toy90", models=["DEPM"], K_init=[10]), "no IDEPM"),
    (dict(datasets="toy90", folds="0-10"), "fold 10 is out of range"),
    (dict(datasets="toy90", models=["EPM", "XEPM"]), "unknown model 'XEPM'"),
    (dict(datasets="toy90", models=[]), "no model"),
])
def test_grid_errors(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        ex.grid(**kwargs)


def test_grid_is_the_papers_product():
    runs = ex.grid("toy90", folds="0-9")
    assert len(runs) == 10 * (4 * len(ex.PAPER_T) + 1)
    assert len({r.run_id for r in runs}) == len(runs)
    runs = ex.grid(["toy90", "enron09"], models=["DEPM", "IDEPM"], T=[2, 4], folds=[0, 1],
                   K_init=[10, 100], seeds=[0, 1])
    assert len(runs) == 2 * (2 + 2) * 2 * 2


def test_run_record_fields_and_file(tmp_path):
    run = ex.Run("toy90", "DEPM", T=4, fold=2, seed=1, **FAST)
    rec = ex.run_one(run, results_dir=tmp_path)
    path = tmp_path / "toy90" / "DEPM-T4-fold2-seed1-n5-avg2.json"
    assert path.is_file() and not list(tmp_path.rglob("*.tmp"))
    assert ex.read_record(path, run) == json.loads(json.dumps(rec))
    text = path.read_text()
    assert "\n" not in text.rstrip("\n") and ": " not in text  # compact
    assert rec["format"] == ex.RECORD_FORMAT and rec["run_id"] == run.run_id
    assert (rec["dataset"], rec["model"], rec["T"], rec["fold"], rec["seed"]) == ("toy90", "DEPM", 4, 2, 1)
    tr = rec["traces"]
    assert len(tr["K"]) == len(tr["tdll"]) == len(tr["seconds"]) == len(tr["M"]) == 5
    assert set(tr["hyper"]) == {"alpha1", "alpha2", "gamma0", "c0"}
    assert rec["K_mean"] == pytest.approx(np.mean(tr["K"][-2:]))
    assert math.isfinite(rec["tdll"]) and rec["tdll"] < 0 and 0 <= rec["tdauc_pr"] <= 1
    floats = tr["tdll"] + tr["seconds"] + sum(tr["hyper"].values(), [])
    assert all(float(f"{v:.6g}") == v for v in floats)                 # 6 significant digits
    assert np.all(np.diff(tr["seconds"]) >= 0)
    s = rec["settings"]
    assert (s["n_iter"], s["n_avg"], s["n_folds"], s["cv_seed"], s["e0"], s["f0"]) == (5, 2, 10, 0, 0.01, 0.01)
    d = rec["data"]
    assert d["shape"] == [90, 90] and d["test_entries"] == 810 and d["ones"] == d["train_ones"] + d["test_ones"]
    assert d["fingerprint"] == epm_lib.datasets.fingerprint(epm_lib.datasets.load("toy90").X)
    assert rec["time"]["wall"] >= rec["time"]["sampler"] > 0 and rec["time"]["cpu"] > 0
    assert rec["versions"]["epm_lib"] == epm_lib.__version__
    assert rec["versions"]["numpy"] == np.__version__
    assert set(rec["machine"]) >= {"platform", "cpu_count", "cpus_available"}
    # the record's numbers are fit's numbers on the split
    X_train, test = ex.split(epm_lib.datasets.load("toy90").X, ex.cv_fold((90, 90), 2))
    r = epm_lib.fit(X_train, "DEPM", T=4, seed=1, test=test, init="paper", **FAST)   # Sec. 5's start
    assert rec["tdll"] == r.tdll and rec["K_mean"] == r.K_mean and tr["K"] == r.K.tolist()


@pytest.mark.parametrize("model,T,settings", [
    ("EPMpaper", 3, dict(a_update="paper", sampler="EPM")),
    ("CEPM", 3, dict(a_update="exact", sampler="CEPM")),
    ("IDEPM", None, dict(K_init=epm_lib.DEFAULT_K_INIT, m_step="exact")),
])
def test_every_model_runs(model, T, settings):
    rec = ex.run_one(ex.Run("toy90", model, T=T, **FAST))
    assert all(rec["settings"][k] == v for k, v in settings.items())
    names = {"a1", "b1", "a2", "b2", "gamma0", "c0"} if T else {"alpha1", "alpha2", "gamma0", "c0"}
    assert set(rec["traces"]["hyper"]) == names


def test_write_record_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "d" / "x.json"
    ex.write_record({"a": 1}, path)

    def broken(src, dst):
        raise OSError("disk full")
    monkeypatch.setattr(ex.records.os, "replace", broken)
    with pytest.raises(OSError, match="disk full"):
        ex.write_record({"a": 2}, path)
    assert json.loads(path.read_text()) == {"a": 1}         # old content intact
    assert [p.name for p in path.parent.iterdir()] == ["x.json"]   # no temp file left


def test_own_file_through_load_file(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.random((15, 12)) < 0.25
    lines = [f"u{i},m{j},{rng.integers(4, 6)}" for i, j in zip(*np.nonzero(X))]
    lines += [f"u{i},m{j},{rng.integers(1, 4)}" for i, j in zip(*np.nonzero(~X))][:40]
    f = tmp_path / "my ratings.csv"
    f.write_text("user,item,rating\n" + "\n".join(lines) + "\n")
    spec = ex.DataSpec.from_file(f, threshold=3)
    assert spec.folder == "my_ratings"
    runs = [ex.Run(spec, "DEPM", T=2, fold=k, **FAST) for k in (0, 1)]
    assert ex.grid(str(f), models=["DEPM"], T=[2], folds=[0], **FAST)[0].data.path == spec.path
    report = ex.run_grid(runs, tmp_path / "res", n_jobs=1, progress=False)
    assert sorted(report.done) == sorted(r.key for r in runs)
    recs = ex.load_results(tmp_path / "res", dataset="my_ratings")
    assert len(recs) == 2 and recs[0]["data"]["ones"] == int(X.sum())
    clash = tmp_path / "enron09.csv"
    clash.write_text("a,b\n")
    with pytest.raises(ValueError, match="name of a built-in data set"):
        ex.DataSpec.from_file(clash)
    assert ex.DataSpec.from_file(clash, name="my-enron").folder == "my-enron"


# ---------------------------------------------------------------------------------------------
# the grid: skipping, resuming, failures, loading
# ---------------------------------------------------------------------------------------------
def small_grid(**kw):
    return ex.grid("toy90", models=["DEPM", "IDEPM"], T=[2, 3], folds=[0, 1], **{**FAST, **kw})


@pytest.fixture
def count_fits(monkeypatch):
    calls = []
    real = ex.records.fit

    def counting(*args, **kwargs):
        calls.append(kwargs.get("T"))
        return real(*args, **kwargs)
    monkeypatch.setattr(ex.records, "fit", counting)
    return calls


def test_rerun_skips_finished_runs_and_recomputes_corrupt_ones(tmp_path, count_fits):
    runs = small_grid()
    assert len(runs) == 6
    report = ex.run_grid(runs, tmp_path, n_jobs=1, progress=False)
    assert len(count_fits) == 6 and len(report.done) == 6 and not report.skipped
    files = {r.run_id: r.path(tmp_path) for r in runs}
    stamp = {k: (p.stat().st_mtime_ns, p.read_bytes()) for k, p in files.items()}
    report = ex.run_grid(runs, tmp_path, n_jobs=1, progress=False)
    assert len(count_fits) == 6 and not report.done and len(report.skipped) == 6
    assert {k: (p.stat().st_mtime_ns, p.read_bytes()) for k, p in files.items()} == stamp
    # a truncated file (e.g. copied half-way) and a deleted one are recomputed, nothing else
    bad, gone = runs[0], runs[3]
    bad.path(tmp_path).write_bytes(stamp[bad.run_id][1][:200])
    gone.path(tmp_path).unlink()
    report = ex.run_grid(runs, tmp_path, n_jobs=1, progress=False)
    assert len(count_fits) == 8
    assert sorted(report.done) == sorted([bad.key, gone.key])
    assert report.corrupt == [bad.key] and bad.key == f"toy90/{bad.run_id}"
    for r in runs:
        ex.read_record(r.path(tmp_path), r)
        if r not in (bad, gone):
            assert r.path(tmp_path).stat().st_mtime_ns == stamp[r.run_id][0]
    # a file of another run under this run's name is not accepted either
    runs[1].path(tmp_path).write_bytes(stamp[runs[2].run_id][1])
    todo, done, corrupt, stale = ex.plan(runs, tmp_path)
    assert todo == [runs[1]] and runs[1] in corrupt


def test_read_record_rejects_incomplete_files(tmp_path):
    run = ex.Run("toy90", "DEPM", T=2, **FAST)
    good = ex.run_one(run)
    path = run.path(tmp_path)
    path.parent.mkdir(parents=True)

    def changed(**kw):
        return json.dumps({**good, **kw})
    bad = {
        "not valid JSON": json.dumps(good)[:-1],
        "not a run record": "[1, 2]",
        "lacks tdll": json.dumps({k: v for k, v in good.items() if k != "tdll"}),
        "must be JSON objects": changed(settings=3),
        "trace 'K' does not have n_iter = 5": changed(traces={**good["traces"], "K": [1, 2]}),
        "holds run": changed(run_id="DEPM-T3-fold0-seed0-n5-avg2"),
        "settings differ": changed(settings={**good["settings"], "seed": 1}),
    }
    for msg, text in bad.items():
        path.write_text(text)
        with pytest.raises(ValueError, match=msg):
            ex.read_record(path, run)
        todo, done, corrupt, stale = ex.plan([run], tmp_path)
        assert todo == [run] and not done and msg.split("'")[0] in corrupt[run]
    path.write_text(json.dumps(good))
    assert ex.read_record(path, run) == good


def test_failed_run_does_not_stop_the_grid(tmp_path, monkeypatch):
    real = ex.records.fit

    def flaky(X, model, **kw):
        if kw.get("T") == 3:
            raise FloatingPointError("boom")
        return real(X, model, **kw)
    monkeypatch.setattr(ex.records, "fit", flaky)
    runs = small_grid()
    with pytest.raises(ex.GridError, match="2 of 6 runs failed") as info:
        ex.run_grid(runs, tmp_path, n_jobs=1, progress=False)
    report = info.value.report
    assert sorted(report.failed) == sorted(r.key for r in runs if r.T == 3)
    assert "FloatingPointError: boom" in next(iter(report.failed.values()))
    assert len(report.done) == 4 and all(r.path(tmp_path).exists() == (r.T != 3) for r in runs)


def test_load_results_and_summary(tmp_path):
    runs = small_grid()
    ex.run_grid(runs, tmp_path, n_jobs=1, progress=False)
    (tmp_path / "toy90" / "junk.json").write_text("{not json")
    with pytest.warns(UserWarning, match="junk.json"):
        recs = ex.load_results(tmp_path)
    assert len(recs) == 6 and [r["model"] for r in recs] == ["DEPM"] * 4 + ["IDEPM"] * 2
    rows = ex.summarize(recs)
    assert [(r["model"], r["T"], r["K_init"], r["n"]) for r in rows] == \
        [("DEPM", 2, None, 2), ("DEPM", 3, None, 2), ("IDEPM", None, 100, 2)]
    for row in rows:
        vals = [r["tdll"] for r in recs if r["model"] == row["model"] and r["T"] == row["T"]]
        assert row["tdll"] == pytest.approx(np.mean(vals))
        assert row["tdll_se"] == pytest.approx(np.std(vals, ddof=1) / np.sqrt(2))
        assert row["folds"] == [0, 1]
    table = ex.format_summary(rows)
    assert "TDAUC-PR" in table and "K0=100" in table and "±" in table and len(table.splitlines()) == 5


@pytest.mark.slow
def test_run_grid_in_processes_matches_one_process(tmp_path):
    from joblib.externals.loky import get_reusable_executor
    runs = small_grid(n_iter=4, n_avg=2)[:3]
    try:
        ex.run_grid(runs, tmp_path / "a", n_jobs=2, progress=False)
    finally:
        get_reusable_executor().shutdown(wait=True)
    ex.run_grid(runs, tmp_path / "b", n_jobs=1, progress=False)
    for r in runs:
        a, b = (ex.read_record(r.path(tmp_path / x)) for x in "ab")
        assert a["traces"]["tdll"] == b["traces"]["tdll"] and a["K_mean"] == b["K_mean"]


@pytest.mark.slow
def test_dask_path(tmp_path):
    """run_grid inside joblib.parallel_config(backend="dask") on a one-worker LocalCluster."""
    import joblib
    from dask.distributed import Client, LocalCluster
    psutil = pytest.importorskip("psutil")
    runs = small_grid(n_iter=4, n_avg=2)[:3]
    cluster = LocalCluster(n_workers=1, processes=True, threads_per_worker=1,
                           dashboard_address=None, silence_logs=40)
    try:
        with Client(cluster) as client:
            with joblib.parallel_config(backend="dask"):
                report = ex.run_grid(runs, tmp_path, progress=False)
            worker_pids = set(client.run(os.getpid).values())
    finally:
        cluster.close()
    assert len(report.done) == 3 and worker_pids and os.getpid() not in worker_pids
    for r in runs:
        rec = ex.read_record(r.path(tmp_path), r)
        assert rec["traces"]["K"] == ex.run_one(r)["traces"]["K"]     # same numbers as here
    deadline = time.time() + 10
    while time.time() < deadline and any(psutil.pid_exists(p) for p in worker_pids):
        time.sleep(0.1)
    assert not any(psutil.pid_exists(p) for p in worker_pids)


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------
def cli(*args):
    return [sys.executable, "-m", "epm_lib.experiments", *map(str, args)]


@pytest.mark.slow
def test_cli_end_to_end(tmp_path):
    """Two runs in two worker processes (loky), then the same command again: all skipped."""
    args = cli("--dataset", "toy90", "--models", "DEPM", "IDEPM", "--T", "4", "--folds", "0",
               "--n-iter", 5, "--n-avg", 2, "--jobs", 2, "--results", tmp_path, "--no-progress")
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "2 runs in" in out.stdout and "0 done (skipped), 2 to run" in out.stdout
    assert "toy90: run 2: IDEPM-K100-fold0-seed0-n5-avg2, DEPM-T4-fold0-seed0-n5-avg2" in out.stdout \
        or "toy90: run 2: DEPM-T4-fold0-seed0-n5-avg2, IDEPM-K100-fold0-seed0-n5-avg2" in out.stdout
    assert "2 runs computed, 0 skipped, 0 failed" in out.stdout
    table = out.stdout.split("mean ± standard error over folds")[1]
    assert "DEPM" in table and "T=4" in table and "IDEPM" in table and "K0=100" in table
    assert sorted(p.name for p in (tmp_path / "toy90").iterdir()) == \
        ["DEPM-T4-fold0-seed0-n5-avg2.json", "IDEPM-K100-fold0-seed0-n5-avg2.json"]
    again = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and "2 done (skipped), 0 to run" in again.stdout
    assert "0 runs computed, 2 skipped" in again.stdout


@pytest.mark.slow
def test_cli_dask_local(tmp_path):
    args = cli("--dataset", "toy90", "--models", "DEPM", "--T", 2, 3, "--folds", "0",
               "--n-iter", 4, "--n-avg", 2, "--dask-local", 1, "--results", tmp_path, "--no-progress")
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Dask: 1 worker(s)" in out.stdout and "2 runs computed, 0 skipped, 0 failed" in out.stdout
    for T in (2, 3):
        run = ex.Run("toy90", "DEPM", T=T, n_iter=4, n_avg=2)
        assert ex.read_record(run.path(tmp_path), run)["traces"]["K"] == ex.run_one(run)["traces"]["K"]


@pytest.mark.parametrize("args,msg", [
    (["--dataset", "nope"], "unknown data set 'nope'"),
    (["--dataset", "toy90", "--models", "EPM", "FOO"], "unknown model 'FOO'"),
    (["--dataset", "toy90", "--models", "IDEPM", "--T", "4"], "--T 4 given, but the IDEPM is not truncated"),
    (["--dataset", "toy90", "--models", "DEPM", "--K-init", "5"], "no IDEPM"),
    (["--dataset", "toy90", "--folds", "0-10"], "fold 10 is out of range: folds are 0..9"),
    (["--dataset", "toy90", "--folds", "3", "--n-folds", "3"], "fold 3 is out of range: folds are 0..2"),
    (["--dataset", "toy90", "--folds", "x"], "cannot read fold 'x'"),
    (["--dataset", "toy90", "--dask-local", "1", "--dask-scheduler", "tcp://x:1"], "not allowed with"),
])
def test_cli_errors(args, msg, capsys):
    with pytest.raises(SystemExit) as info:
        ex.main(args)
    assert info.value.code == 2
    assert msg in capsys.readouterr().err


def test_cli_dry_run_and_missing_movielens(tmp_path, capsys):
    assert ex.main(["--dataset", "toy90", "--folds", "0-1", "--dry-run", "--results", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "58 runs in" in out and "58 to run" in out and not (tmp_path / "toy90").exists()
    code = ex.main(["--dataset", "movielens100k", "--models", "DEPM", "--T", "2", "--folds", "0",
                    "--data-dir", str(tmp_path / "nowhere"), "--results", str(tmp_path), "--no-progress"])
    assert code == 1 and "u.data" in capsys.readouterr().err


@pytest.mark.slow
def test_resume_after_kill(tmp_path):
    """SIGKILL a grid after its first result file appears; the rerun completes it without
    recomputing (or corrupting) what was written before the kill."""
    res = tmp_path / "res"
    args = cli("--dataset", "toy90", "--models", "DEPM", "--T", 2, 3, 4, "--folds", "0-1",
               "--n-iter", 400, "--n-avg", 10, "--jobs", 1, "--results", res, "--no-progress")
    folder = res / "toy90"
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not list(folder.glob("*.json")) and proc.poll() is None:
            time.sleep(0.005)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.glob("*.json")}
    assert 1 <= len(before) < 6, f"{len(before)} of 6 runs written at the kill (exit code {proc.returncode})"
    assert proc.returncode == -signal.SIGKILL
    for name, (_, data) in before.items():
        assert json.loads(data)["run_id"] + ".json" == name           # complete, valid records
    out = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert f"{len(before)} done (skipped), {6 - len(before)} to run" in out.stdout
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in folder.glob("*.json")}
    assert len(after) == 6
    assert all(after[k] == v for k, v in before.items())               # not recomputed
    for run in ex.grid("toy90", models=["DEPM"], T=[2, 3, 4], folds=[0, 1], n_iter=400, n_avg=10):
        ex.read_record(run.path(res), run)                             # none corrupted


# ---------------------------------------------------------------------------------------------
# hostile input: records of other data, malformed records, a killed grid's workers
# ---------------------------------------------------------------------------------------------
def write_pairs(path, X):
    """An edge list "i,j" of the ones of the boolean matrix X (read by datasets.load_file)."""
    path.write_text("".join(f"{i},{j}\n" for i, j in zip(*np.nonzero(X))))


def file_fingerprint(path):
    return epm_lib.datasets.fingerprint(epm_lib.datasets.load_file(path).X)


def two_graphs(seed=7):
    X = np.random.default_rng(seed).random((12, 10)) < 0.3
    X2 = X.copy()
    X2[0] = ~X2[0]                                         # the edit: row 0 flipped
    return X, X2


def test_records_of_other_data_are_stale_not_done(tmp_path, count_fits):
    """Edit the data file, or give another file of the same name: the records of the old data
    are not reported done. run_grid refuses by default (naming the folder, the file and both
    fingerprints) and recomputes them with on_stale="recompute"."""
    X, X2 = two_graphs()
    f, res = tmp_path / "graph.csv", tmp_path / "res"
    write_pairs(f, X)
    runs = ex.grid(str(f), models=["DEPM"], T=[2], folds=[0, 1], **FAST)
    ex.run_grid(runs, res, n_jobs=1, progress=False)
    old_fp = file_fingerprint(f)
    stamp = {r.key: r.path(res).read_bytes() for r in runs}
    assert len(count_fits) == 2
    write_pairs(f, X2)                                     # same name, same process, other data
    new_fp = file_fingerprint(f)
    assert new_fp != old_fp
    p = ex.plan(runs, res)
    assert not p.done and not p.corrupt and set(p.stale) == set(p.todo) == set(runs)
    with pytest.raises(ex.StaleResultsError) as info:
        ex.run_grid(runs, res, n_jobs=1, progress=False)
    msg = str(info.value)
    for part in (f"{res / 'graph'}/ holds 2 finished runs of other data", str(f), old_fp, new_fp,
                 str(runs[0].path(res)), 'on_stale="recompute"', "--recompute-stale", "--results"):
        assert part in msg, (part, msg)
    assert len(count_fits) == 2 and {r.key: r.path(res).read_bytes() for r in runs} == stamp
    report = ex.run_grid(runs, res, n_jobs=1, progress=False, on_stale="recompute")
    assert sorted(report.stale) == sorted(report.done) == sorted(r.key for r in runs)
    assert not report.skipped and len(count_fits) == 4
    for r in runs:
        rec = ex.read_record(r.path(res), r)
        assert rec["data"]["fingerprint"] == new_fp
        Xf = epm_lib.datasets.load_file(f).X
        X_train, test = ex.split(Xf, ex.cv_fold(Xf.shape, r.fold))
        assert rec["traces"]["K"] == epm_lib.fit(X_train, "DEPM", T=2, test=test, init="paper", **FAST).K.tolist()
    report = ex.run_grid(runs, res, n_jobs=1, progress=False)
    assert sorted(report.skipped) == sorted(r.key for r in runs) and not report.stale
    # another file of the same name elsewhere, with other data: stale as well
    other = tmp_path / "elsewhere" / "graph.csv"
    other.parent.mkdir()
    write_pairs(other, X)
    runs2 = ex.grid(str(other), models=["DEPM"], T=[2], folds=[0, 1], **FAST)
    assert [r.key for r in runs2] == [r.key for r in runs]
    with pytest.raises(ex.StaleResultsError, match=re.escape(str(other))):
        ex.run_grid(runs2, res, n_jobs=1, progress=False)
    # the same matrix written differently (lines reversed): the same data, done
    other.write_text("".join(reversed(f.read_text().splitlines(keepends=True))))
    assert ex.plan(runs2, res).done == runs2


def test_worker_refuses_data_other_than_planned():
    """A worker that loads other data than the grid was planned with fails the run."""
    run = ex.Run("toy90", "DEPM", T=2, **FAST)
    out = ex._execute(run, os.getpid(), "0" * 64)
    assert out[0] == "error" and out[1] == run.key
    assert "fingerprint" in out[2] and "0" * 64 in out[2] and run.data.fingerprint() in out[2]
    assert ex._execute(run, os.getpid(), run.data.fingerprint())[0] == "ok"


def test_cli_refuses_stale_results_and_recomputes_them_on_request(tmp_path, capsys):
    X, X2 = two_graphs(8)
    f, res = tmp_path / "graph.csv", tmp_path / "res"
    write_pairs(f, X)
    args = ["--dataset", str(f), "--models", "DEPM", "--T", "2", "--folds", "0", "--n-iter", "5",
            "--n-avg", "2", "--jobs", "1", "--results", str(res), "--no-progress"]
    assert ex.main(args) == 0
    path = res / "graph" / "DEPM-T2-fold0-seed0-n5-avg2.json"
    before, old_fp = path.read_bytes(), file_fingerprint(f)
    write_pairs(f, X2)
    new_fp = file_fingerprint(f)
    capsys.readouterr()
    for extra in ([], ["--dry-run"]):
        assert ex.main(args + extra) == 1
        out, err = capsys.readouterr()
        assert "0 done (skipped), 1 to run (1 of other data: stale)" in out
        assert "graph: stale 1: DEPM-T2-fold0-seed0-n5-avg2" in out
        assert err.startswith("error: ") and "runs computed" not in out
        for part in (str(path), str(f), old_fp, new_fp, "--recompute-stale"):
            assert part in err
        assert path.read_bytes() == before
    assert ex.main(args + ["--recompute-stale"]) == 0
    out, err = capsys.readouterr()
    assert "1 of other data: stale, recomputed" in out and "1 runs computed, 0 skipped" in out
    assert json.loads(path.read_text())["data"]["fingerprint"] == new_fp
    assert ex.main(args) == 0 and "1 done (skipped), 0 to run" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("name,K_init,n", [
    ("enron09", [None, 1, 10, 50, 128], 330),
    ("movielens100k", [None, 1, 10, 50, 128], 330),
    ("movielens1m", [None], 290),
])
def test_stored_records_are_done_for_the_real_data(name, K_init, n):
    """The committed records under results/ are recognised as done for the data sets themselves
    (MovieLens: when $EPM_DATA_DIR holds it)."""
    from pathlib import Path
    results = Path(__file__).resolve().parents[1] / "results"
    runs = ex.grid(name, folds="0-9", K_init=K_init)
    try:
        t = time.perf_counter()
        p = ex.plan(runs, results)
        seconds = time.perf_counter() - t
    except epm_lib.datasets.DataNotFoundError as e:
        pytest.skip(str(e)[:80])
    assert len(runs) == len(p.done) == n and not p.todo and not p.corrupt and not p.stale
    assert seconds < 20


DELETE = object()


def set_field(rec, dotted, value):
    """A deep copy of rec with the field at the dotted path set to value (or deleted)."""
    rec = json.loads(json.dumps(rec))
    *parents, last = dotted.split(".")
    d = rec
    for k in parents:
        d = d[k]
    if value is DELETE:
        del d[last]
    else:
        d[last] = value
    return rec


@pytest.fixture(scope="module")
def good_record():
    return ex.run_one(ex.Run("toy90", "DEPM", T=2, **FAST))


@pytest.mark.parametrize("field,value", [
    ("K_mean", "abc"), ("fold", "x"), ("fold", 1.5), ("seed", -1), ("T", "2"), ("T", True),
    ("tdll", [1.0]), ("tdauc_pr", {}), ("model", 3), ("dataset", None),
    ("settings.n_iter", "5"), ("settings.n_avg", 2.0), ("settings.n_folds", None),
    ("traces.tdll", ["a"] * 5), ("traces.K", [1.5] * 5), ("traces.M", ["1"] * 5),
    ("traces.seconds", [None, "x", 1, 2, 3]), ("traces.hyper.gamma0", ["x"] * 5), ("traces.M", DELETE),
    ("traces.hyper", [1, 2]), ("data.fingerprint", 5), ("data.shape", [90]), ("data", "x"),
    ("time.wall", "1"), ("time", None),
])
def test_malformed_record_names_the_file_and_field(tmp_path, good_record, field, value):
    """A record of the right layout but a wrong type in a field the summary or the chapters use:
    read_record names the file and the field, load_results skips it with that warning, the
    summary of the others works, and a grid recomputes it."""
    run = ex.Run("toy90", "DEPM", T=2, **FAST)
    ok = ex.Run("toy90", "DEPM", T=2, fold=1, **FAST)
    ex.write_record({**good_record, "run_id": ok.run_id, "fold": 1,
                     "settings": {**good_record["settings"], "fold": 1}}, ok.path(tmp_path))
    bad = set_field(good_record, field, value)
    path = ex.write_record(bad, run.path(tmp_path))
    with pytest.raises(ValueError) as info:
        ex.read_record(path)
    assert str(path) in str(info.value) and repr(field) in str(info.value), str(info.value)
    with pytest.warns(UserWarning, match=re.escape(str(path))):
        recs = ex.load_results(tmp_path)
    assert [r["run_id"] for r in recs] == [ok.run_id]
    assert "DEPM" in ex.format_summary(ex.summarize(recs))
    p = ex.plan([run, ok], tmp_path)
    assert p.todo == [run] and p.done == [ok] and repr(field) in p.corrupt[run]
    if field in ("K_mean", "fold", "seed", "T", "tdll", "tdauc_pr", "model", "dataset", "data",
                 "data.fingerprint", "time", "time.wall", "settings.n_iter", "settings.n_avg"):
        with pytest.raises(ValueError) as info:                 # the fields summarize uses
            ex.summarize([ex.read_record(ok.path(tmp_path)), bad])
        assert f"record {run.run_id}" in str(info.value).replace("toy90/", "")
        assert repr(field) in str(info.value)


@pytest.mark.parametrize("edit,msg", [
    (lambda t: t.replace('"K_mean":', '"K_mean":NaN,"x":', 1), r"not valid JSON \(NaN is not a JSON number"),
    (lambda t: "[" * 100_000, r"not valid JSON \(nested too deeply\)"),
    (lambda t: t.replace('"K_mean":', '"K_mean":1e999,"x":', 1), "field 'K_mean' must be a number.*, got inf"),
    (lambda t: t.replace('"fold":0', '"fold":' + "9" * 30, 1), "field 'fold' must be an integer >= 0"),
    (lambda t: re.sub(r'"traces":\{"K":\[\d+', '"traces":{"K":[-1', t, count=1),
     "field 'traces.K' must be a list of integers >= 0; entry 0 is -1"),
])
def test_unreadable_record_text(tmp_path, good_record, edit, msg):
    """Not JSON of the format (NaN, too deep) or numbers out of range: named, skipped."""
    path = tmp_path / "toy90" / "DEPM-T2-fold0-seed0-n5-avg2.json"
    text = ex.write_record(good_record, path).read_text()
    path.write_text(edit(text))
    with pytest.raises(ValueError, match=msg) as info:
        ex.read_record(path)
    assert str(path) in str(info.value)
    with pytest.warns(UserWarning, match=re.escape(str(path))):
        assert ex.load_results(tmp_path) == []


def test_cli_recomputes_a_malformed_record_and_prints_the_summary(tmp_path, capsys):
    args = ["--dataset", "toy90", "--models", "DEPM", "--T", "2", "--folds", "0", "--n-iter", "5",
            "--n-avg", "2", "--jobs", "1", "--results", str(tmp_path), "--no-progress"]
    assert ex.main(args) == 0
    path = tmp_path / "toy90" / "DEPM-T2-fold0-seed0-n5-avg2.json"
    good = json.loads(path.read_text())
    path.write_text(json.dumps({**good, "K_mean": "abc"}))
    capsys.readouterr()
    assert ex.main(args) == 0
    out = capsys.readouterr().out
    assert "1 corrupt, recomputed" in out and "1 runs computed" in out and "T=2" in out
    assert json.loads(path.read_text())["K_mean"] == good["K_mean"]


@pytest.mark.slow
def test_workers_exit_when_the_grid_process_is_killed(tmp_path):
    """SIGKILL the process that drives a grid of two long runs on two loky workers: the workers
    notice that their parent is gone and exit within seconds instead of finishing their runs."""
    psutil = pytest.importorskip("psutil")
    if not sys.platform.startswith("linux"):
        pytest.skip("reads the names of the workers' threads in /proc")
    f = tmp_path / "tiny.csv"
    write_pairs(f, two_graphs()[0])
    args = cli("--dataset", f, "--models", "DEPM", "--T", 2, "--folds", 0, 1, "--n-iter", 10**6,
               "--n-avg", 1, "--jobs", 2, "--results", tmp_path / "res", "--no-progress")
    stderr = tmp_path / "stderr.txt"
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    workers = []
    try:
        parent = psutil.Process(proc.pid)
        deadline = time.time() + 60

        def watched(p):                                   # its watchdog thread has started
            try:
                return any(open(f"/proc/{p.pid}/task/{t.id}/comm").read().strip() == "epm-watchdog"
                           for t in p.threads())
            except (OSError, psutil.Error):
                return False

        def importing(p):                                 # it unpickled a task: epm_lib, numba
            try:
                return "llvmlite" in open(f"/proc/{p.pid}/maps").read()
            except OSError:
                return False
        since = None                                      # both importing (no watchdog: 20 s)
        while time.time() < deadline and proc.poll() is None:
            workers = [c for c in parent.children() if "popen_loky" in " ".join(c.cmdline())]
            if len(workers) == 2 and all(watched(w) for w in workers):
                break
            if len(workers) == 2 and all(importing(w) for w in workers):
                since = since or time.time()
                if time.time() > since + 20:
                    break
            time.sleep(0.1)
        assert len(workers) == 2, f"no two workers (exit code {proc.poll()}): {stderr.read_text()[-2000:]}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

        def running(p):                                   # a zombie has exited (and awaits its reaper)
            try:
                return p.status() != psutil.STATUS_ZOMBIE
            except psutil.NoSuchProcess:
                return False
        t_kill = time.time()
        while time.time() < t_kill + 10 and any(running(w) for w in workers):
            time.sleep(0.05)
        alive = [w.pid for w in workers if running(w)]
        assert not alive, f"workers {alive} still run 10 s after their parent was killed"
        assert "is gone" in stderr.read_text()
    finally:
        for w in workers:                                 # never leave a worker behind
            try:
                w.kill()
            except psutil.Error:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# ------------------------------------------------------------------ held-out protocols, baselines
@pytest.mark.slow
def test_missing_protocol_run_masks_the_test_entries(tmp_path):
    """heldout="missing": the run id and settings say so, the fit gets the mask (its result differs
    from the zeros protocol's), records of the zeros protocol keep their ids and settings."""
    zeros = ex.Run("toy90", "DEPM", T=4, n_iter=6, n_avg=2)
    miss = ex.Run("toy90", "DEPM", T=4, n_iter=6, n_avg=2, heldout="missing")
    assert zeros.run_id == "DEPM-T4-fold0-seed0-n6-avg2" and "heldout" not in zeros.settings()
    assert miss.run_id == "DEPM-T4-fold0-seed0-n6-avg2-missing"
    assert miss.settings()["heldout"] == "missing"
    rz, rm = ex.run_one(zeros, tmp_path), ex.run_one(miss, tmp_path)
    assert ex.read_record(miss.path(tmp_path), miss)["settings"]["heldout"] == "missing"
    assert rz["tdll"] != rm["tdll"] and 0 <= rm["tdauc_roc"] <= 1
    ds = ex.DataSpec.parse("toy90").load()
    X_train, test = ex.split(ds.X, ex.cv_fold(ds.shape, 0))
    ref = epm_lib.fit(X_train, "DEPM", T=4, n_iter=6, n_avg=2, seed=0, test=test, init="paper",
                      mask=missing_mask(ds.shape, test[0], test[1]))
    assert rm["tdll"] == ref.tdll and rm["traces"]["K"] == [int(k) for k in ref.K]
    rows = ex.summarize(ex.load_results(tmp_path, heldout=None))
    assert sorted(r["heldout"] for r in rows) == ["missing", "zeros"]
    assert [r["run_id"] for r in ex.load_results(tmp_path)] == [zeros.run_id]
    assert [r["run_id"] for r in ex.load_results(tmp_path, heldout="missing")] == [miss.run_id]
    assert "DEPM (missing)" in ex.format_summary(rows)
    with pytest.raises(ValueError, match="heldout must be one of"):
        ex.Run("toy90", "DEPM", T=4, heldout="masked")
    assert [r.heldout for r in ex.grid("toy90", models=["IDEPM"], folds=[0], heldout="missing")] \
        == ["missing"]


@pytest.mark.slow
def test_baseline_records_resume_and_are_checked(tmp_path, monkeypatch):
    recs = ex.run_baselines("toy90", folds=[0, 3], results_dir=tmp_path, progress=False)
    assert [r["fold"] for r in recs] == [0, 3]
    path = ex.baseline_path("toy90", 3, tmp_path)
    assert path == tmp_path / "toy90" / "baselines" / "fold3.json" and path.is_file()
    for r in recs:
        assert set(r["heldout"]) == {"zeros", "missing"}
        assert set(r["heldout"]["zeros"]) == {"popularity", "svd-k16", "svd-auto"}
        for h in ("zeros", "missing"):
            for sc in r["heldout"][h].values():
                assert sc["tdll"] < 0 and 0 <= sc["tdauc_pr"] <= 1
    # the stored numbers are score_baselines' on the split
    ds = ex.DataSpec.parse("toy90").load()
    X_train, test = ex.split(ds.X, ex.cv_fold(ds.shape, 3))
    direct = epm_lib.baselines.score_baselines(X_train, test, seed=0)
    assert recs[1]["heldout"]["zeros"]["popularity"]["tdll"] == direct["popularity"]["tdll"]
    # model runs never see the baseline files
    assert ex.load_results(tmp_path) == []
    assert [r["fold"] for r in ex.load_baselines(tmp_path, "toy90")] == [0, 3]
    # resumed: nothing recomputed
    calls = []
    monkeypatch.setattr(ex.baselines, "baseline_record", lambda *a, **k: calls.append(a) or 1 / 0)
    assert ex.run_baselines("toy90", folds=[0, 3], results_dir=tmp_path, progress=False) == recs
    assert calls == []
    # a corrupt file is skipped by load_baselines and recomputed by run_baselines
    path.write_text('{"format": "epm-book baseline record 1", "fold": 3}')
    with pytest.warns(UserWarning, match="fold3.json"):
        assert [r["fold"] for r in ex.load_baselines(tmp_path, "toy90")] == [0]
    monkeypatch.undo()
    with pytest.warns(UserWarning, match="recomputing"):
        again = ex.run_baselines("toy90", folds=[3], results_dir=tmp_path, progress=False)
    assert again[0]["heldout"] == recs[1]["heldout"]
    # a record of other data stops unless told to recompute
    rec = json.loads(path.read_text())
    rec["data"]["fingerprint"] = "0" * 64
    path.write_text(json.dumps(rec))
    with pytest.raises(ValueError, match="baseline record of other data"):
        ex.run_baselines("toy90", folds=[3], results_dir=tmp_path, progress=False)
    ex.run_baselines("toy90", folds=[3], results_dir=tmp_path, progress=False, recompute_stale=True)
    assert ex.read_baseline(path)["data"]["fingerprint"] != "0" * 64


@pytest.mark.slow
def test_baselines_command_line(tmp_path, capsys):
    assert ex.main(["--dataset", "toy90", "--baselines", "--folds", "1", "--results",
                    str(tmp_path), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "svd-auto" in out and "missing" in out
    assert ex.baseline_path("toy90", 1, tmp_path).is_file()


# ------------------------------------------------------------------ the converged protocol
@pytest.mark.slow
def test_converged_run_record_resume_and_separation(tmp_path):
    run = ex.ConvergedRun("toy90", "IDEPM", starts=(1, 30), segment=10, max_sweeps=20, cap_seconds=None)
    assert run.run_id == "IDEPM-fold0-seed0-converged"
    assert run.path(tmp_path) == tmp_path / "toy90" / "converged" / "IDEPM-fold0-seed0-converged.json"
    rec = ex.run_converged(run, tmp_path)
    assert rec["stopped"] in ("converged", "max_sweeps") and rec["sweeps"] in (10, 20)
    assert set(rec["diagnostics"]) == {"K", "tdll"} and len(rec["traces"]["K"]) == 2
    assert ex.read_converged(run.path(tmp_path))["tdll"] == rec["tdll"]
    assert ex.load_results(tmp_path, heldout=None) == []            # never mixed with Sec. 5's runs
    assert [r["run_id"] for r in ex.load_converged(tmp_path, "toy90")] == [run.run_id]
    # the pooled posterior mean of the chains is what the record scores
    ds = ex.DataSpec.parse("toy90").load()
    X_train, test = ex.split(ds.X, ex.cv_fold(ds.shape, 0))
    cs, s = epm_lib.run_until_agree(X_train, "IDEPM", starts=(1, 30), seeds=[0, 1], segment=10,
                                    max_sweeps=20, n_avg=10, test=test)
    prob = np.mean([r.test_prob for r in cs.results], axis=0)
    assert rec["tdll"] == pytest.approx(epm_lib.metrics.bernoulli_tdll(test[2], prob), rel=1e-12)
    # a longer cap continues the checkpointed chains: the same as one uninterrupted call
    longer = ex.ConvergedRun("toy90", "IDEPM", starts=(1, 30), segment=10, max_sweeps=40, cap_seconds=None,
                             rhat=1.0001)
    assert longer.run_id == run.run_id
    rec2 = ex.run_converged(longer, tmp_path)
    fresh = ex.run_converged(longer, tmp_path / "fresh")
    assert rec2["sweeps"] == fresh["sweeps"] == 40 and rec2["traces"]["K"] == fresh["traces"]["K"]
    assert rec2["tdll"] == fresh["tdll"]


@pytest.mark.slow
def test_converged_run_of_a_printed_update_runs_that_sampler(tmp_path):
    """EPMpaper under the converged protocol runs the chains of fit(..., a_update="paper"), not
    those of the exact EPM."""
    from epm_lib import chains
    run = ex.ConvergedRun("toy90", "EPMpaper", T=6, starts=(1, 6), segment=10, max_sweeps=20,
                          cap_seconds=None, rhat=1.0001)
    assert run.run_id == "EPMpaper-T6-fold0-seed0-converged"
    rec = ex.run_converged(run, tmp_path)
    assert rec["model"] == "EPMpaper" and rec["sweeps"] == 20
    ds = run.data.load()
    X, test = ex.split(ds.X, ex.cv_fold(ds.shape, 0, run.n_folds, run.cv_seed))
    kw = dict(T=6, test=test, n_avg=10, segment=10, max_sweeps=20, rhat=1.0001, var_names=("K", "tdll"),
              seeds=[0, 1])
    paper, _ = chains.run_until_agree(X, "EPM", starts=(1, 6), a_update="paper", **kw)
    exact, _ = chains.run_until_agree(X, "EPM", starts=(1, 6), **kw)
    for c, r in enumerate(paper.results):
        assert rec["traces"]["K"][c] == [int(r.K[i - 1]) for i in rec["traces"]["sweep"]]
    assert rec["K_mean"] == pytest.approx(np.mean([r.K[10:].mean() for r in paper.results]))
    # the record's chains are the printed update's, not the exact EPM's: same TDLL traces as the former only
    idx = [i - 1 for i in rec["traces"]["sweep"]]
    same = lambda cs: all(np.allclose(rec["traces"]["tdll"][c], r.tdll_trace[idx], rtol=1e-5, atol=0)
                          for c, r in enumerate(cs.results))
    assert same(paper) and not same(exact)


@pytest.mark.parametrize("kwargs, msg", [
    (dict(model="DEPM", T=4, starts=(1, 8)), "starts must be"),
    (dict(model="EPM", T=4, split_merge=5), "split_merge is for the IDEPM and the DEPM"),
    (dict(model="IDEPM", max_sweeps=None, cap_seconds=None), "give max_sweeps or cap_seconds"),
    (dict(model="IDEPM", rhat=1.0), "rhat must be a number > 1"),
    (dict(model="IDEPM", cap_seconds=-1), "cap_seconds must be"),
])
def test_converged_run_errors(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        ex.ConvergedRun("toy90", **kwargs)


@pytest.mark.slow
def test_converged_command_line(tmp_path, capsys):
    argv = ["--dataset", "toy90", "--models", "DEPM", "--T", "4", "--folds", "1", "--converged",
            "--segment", "8", "--max-sweeps", "16", "--results", str(tmp_path), "--no-progress"]
    assert ex.main(argv) == 0
    out = capsys.readouterr().out
    assert "1 to run" in out and "DEPM-T4-fold1-seed0-converged:" in out
    rec = ex.read_converged(tmp_path / "toy90" / "converged" / "DEPM-T4-fold1-seed0-converged.json")
    assert rec["settings"]["starts"] == [1, 1, 4, 4] and rec["sweeps"] <= 16
    assert ex.main(argv) == 0 and "1 done, 0 to run" in capsys.readouterr().out


@pytest.mark.parametrize("extra, msg", [
    (["--converged", "--heldout", "missing"], "--heldout missing is for model runs"),
    (["--baselines", "--heldout", "missing"], "--heldout missing is for model runs"),
    (["--converged", "--baselines"], "two different runs"),
    (["--converged", "--models", "IDEPM", "--K-init", "5"], "--K-init is not for --converged"),
])
def test_command_line_refuses_options_it_would_ignore(extra, msg, capsys):
    with pytest.raises(SystemExit):
        ex.main(["--dataset", "toy90", "--folds", "0", "--dry-run"] + extra)
    assert msg in capsys.readouterr().err



def test_record_readers_refuse_other_files(tmp_path):
    for reader in (ex.read_baseline, ex.read_converged):
        bad = tmp_path / "x.json"
        bad.write_text("{not json")
        with pytest.raises(ValueError, match="not valid JSON"):
            reader(bad)
        bad.write_text('{"format": "something else"}')
        with pytest.raises(ValueError, match="not a record of format"):
            reader(bad)
        bad.write_text('{"format": "epm-book baseline record 1", "x": NaN}')
        with pytest.raises(ValueError, match="not valid JSON"):
            reader(bad)


# ------------------------------------------------------------------ the converged protocol in parallel
CONV_ARGS = ["--dataset", "toy90", "--models", "DEPM", "IDEPM", "--T", "4", "--folds", "0", "1",
             "--converged", "--segment", "8", "--max-sweeps", "24", "--starts", "data", "data", "1", "1",
             "--no-progress"]


def _timeless(rec):
    return {k: v for k, v in rec.items() if k not in ("time", "seconds_per_chain")}


def _records(folder):
    return {p.name: _timeless(json.loads(p.read_text())) for p in sorted((folder / "toy90" / "converged").glob("*.json"))}


@pytest.mark.slow
def test_converged_in_parallel_is_bit_identical_to_serial(tmp_path, capsys):
    """--converged --jobs 2 (two runs at a time) writes the records of --jobs 1, but for their times;
    the data's start and one atom: per-chain starts, K and scores, R-hat within each start's chains,
    the stacking weights of the two regions."""
    assert ex.main(CONV_ARGS + ["--jobs", "1", "--results", str(tmp_path / "serial")]) == 0
    assert ex.main(CONV_ARGS + ["--jobs", "2", "--results", str(tmp_path / "par")]) == 0
    serial, par = _records(tmp_path / "serial"), _records(tmp_path / "par")
    assert sorted(serial) == ["DEPM-T4-fold0-seed0-datastart-converged.json", "DEPM-T4-fold1-seed0-datastart-converged.json",
                              "IDEPM-fold0-seed0-datastart-converged.json", "IDEPM-fold1-seed0-datastart-converged.json"]
    assert serial == par
    rec = serial["IDEPM-fold1-seed0-datastart-converged.json"]
    assert rec["settings"]["starts"] == ["data", "data", 1, 1]
    assert [c["start"] for c in rec["chains"]] == ["data", "data", 1, 1] and [c["seed"] for c in rec["chains"]] == [0, 1, 2, 3]
    assert set(rec["groups"]) == {"data", "1"} and rec["groups"]["1"]["chains"] == [2, 3]
    assert set(rec["groups"]["data"]["diagnostics"]) == {"K", "tdll"}
    w = rec["stacking"]["weights"]
    assert set(w) == {"data", "1"} and abs(sum(w.values()) - 1) < 1e-9
    # the pooled scores of a group are those of its chains' mean prediction; K its chains' mean
    assert rec["groups"]["data"]["K_mean"] == pytest.approx(np.mean([c["K_mean"] for c in rec["chains"][:2]]))


@pytest.mark.slow
def test_a_killed_parallel_converged_run_resumes_from_its_checkpoints(tmp_path):
    """The command is killed (SIGKILL, its workers with it) once chains are checkpointed; the same
    command then continues them and writes the records of an uninterrupted serial run."""
    args = cli(*CONV_ARGS, "--max-sweeps", "200", "--jobs", "2", "--results", tmp_path / "killed")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    ck = tmp_path / "killed" / ".chains" / "toy90"
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list(ck.glob("*/chain3.npz"))) < 1:
            time.sleep(0.05)
        assert list(ck.glob("*/chain3.npz")), "no chain was checkpointed within 2 minutes"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    done_before = set(_records(tmp_path / "killed")) if (tmp_path / "killed" / "toy90" / "converged").exists() else set()
    assert len(done_before) < 4                           # killed mid-way
    again = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert ex.main(CONV_ARGS + ["--max-sweeps", "200", "--jobs", "1", "--results", str(tmp_path / "whole")]) == 0
    assert _records(tmp_path / "killed") == _records(tmp_path / "whole")


def test_converged_cli_names_an_unreachable_dask_scheduler(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(ex.cli, "DASK_TIMEOUT", 1)
    code = ex.main(CONV_ARGS + ["--dask-scheduler", "tcp://127.0.0.1:1", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "cannot reach the Dask scheduler at tcp://127.0.0.1:1" in err
    assert not (tmp_path / "toy90" / "converged").exists() or not list((tmp_path / "toy90" / "converged").iterdir())


@pytest.mark.slow
def test_converged_cli_on_a_local_dask_cluster(tmp_path):
    out = subprocess.run(cli(*CONV_ARGS, "--models", "DEPM", "--folds", "0", "--dask-local", 1,
                             "--results", tmp_path / "dask"), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "Dask: 1 worker(s)" in out.stdout
    assert ex.main(CONV_ARGS + ["--models", "DEPM", "--folds", "0", "--jobs", "1", "--results", str(tmp_path / "one")]) == 0
    assert _records(tmp_path / "dask") == _records(tmp_path / "one")
