"""Issue 19: bad input gets a clear error naming the problem (never a silent wrong answer, a raw
traceback or a crash), and long runs are safe (checkpoints, results folders, stale data)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import epm_lib
from epm_lib import chains
from epm_lib import experiments as ex


def small(seed=0, I=25, J=20):
    rng = np.random.default_rng(seed)
    return (rng.random((I, J)) < 0.15).astype(np.int8)


def network(n=12, seed=0, loop=None):
    rng = np.random.default_rng(seed)
    A = np.triu((rng.random((n, n)) < 0.3).astype(np.int8), 1)
    A = A + A.T
    if loop is not None:
        A[loop, loop] = 1
    return A


# ------------------------------------------------------------------ 1. hold_out and self-loops
def test_hold_out_refuses_self_loops_when_the_diagonal_is_masked():
    A = network(loop=4)
    fold = ex.pair_folds(A.shape, n_folds=4, seed=0, symmetric=True)[0]
    with pytest.raises(ValueError, match=r"self-loop\(s\) .*e\.g\. \(4, 4\).*diagonal=False"):
        ex.hold_out(A, fold, symmetric=True)
    with pytest.raises(ValueError, match=r"e\.g\. \(4, 4\)"):
        ex.hold_out(A, fold, diagonal=True)
    # the documented ways out: keep the diagonal observed, or remove the self-loops
    X_train, test, mask = ex.hold_out(A, fold, symmetric=True, diagonal=False)
    r = epm_lib.fit(X_train, "IDEPM", n_iter=3, n_avg=1, test=test, mask=mask, symmetric=True)
    assert np.isfinite(r.tdll)
    B = A.copy()
    np.fill_diagonal(B, 0)
    X_train, test, mask = ex.hold_out(B, fold, symmetric=True)
    assert np.isfinite(epm_lib.fit(X_train, "IDEPM", n_iter=3, n_avg=1, test=test, mask=mask,
                                   symmetric=True).tdll)


# ------------------------------------------------------------------ 2. shapes are integers
@pytest.mark.parametrize("shape", [(10.7, 10.2), (10.0, 10), (True, 5), (5, np.float64(4.0)), "ab",
                                   (5,), (5, 4, 3)])
@pytest.mark.parametrize("symmetric", [False, True])
def test_pair_folds_refuses_non_integer_shapes(shape, symmetric):
    with pytest.raises(ValueError, match="shape must be a pair"):
        ex.pair_folds(shape, 3, symmetric=symmetric)


@pytest.mark.parametrize("shape", [(-3, 4), (0, 5), (4, -1)])
def test_folds_refuse_non_positive_shapes(shape):
    with pytest.raises(ValueError, match="shape must be positive"):
        ex.pair_folds(shape, 2)
    with pytest.raises(ValueError, match="shape must be positive"):
        ex.cv_fold(shape, 0, 2)


def test_numpy_integer_shapes_are_accepted():
    a = ex.pair_folds((np.int64(10), np.int32(10)), 3, symmetric=True)
    b = ex.pair_folds((10, 10), 3, symmetric=True)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    assert len(ex.cv_folds(np.array([4, 5]), 3)) == 3


# ------------------------------------------------------------------ 3. starts and seeds
@pytest.mark.parametrize("kwargs, msg", [
    (dict(starts=2), "starts must be a sequence of integers >= 1"),
    (dict(starts="15"), "starts must be a sequence"),
    (dict(starts=(1, 2.5)), r"starts must be integers >= 1 .*got 2\.5"),
    (dict(starts=(0, 5)), "starts must be integers >= 1"),
    (dict(starts=(True, 5)), "starts must be integers >= 1"),
    (dict(starts=(1, 5), seeds=3), "seeds must be a sequence of non-negative integers"),
    (dict(starts=(1, 5), seeds=(0, -1)), r"seeds must be non-negative integers .*got -1"),
    (dict(starts=(1, 5), seeds=(0, 1.5)), "seeds must be non-negative integers"),
    (dict(starts=(1, 5), seeds=(0, 1, 2)), "one seed per start"),
])
def test_fit_chains_checks_starts_and_seeds(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        epm_lib.fit_chains(small(), "IDEPM", n_iter=2, n_avg=1, **kwargs)


def test_fit_chains_accepts_numpy_starts_and_seeds():
    cs = epm_lib.fit_chains(small(), "IDEPM", starts=np.array([1, 5]), seeds=np.array([3, 4]),
                            n_iter=2, n_avg=1)
    assert cs.starts == [1, 5] and cs.seeds == [3, 4] and type(cs.starts[0]) is int


# ------------------------------------------------------------------ 4. run_until_agree's settings
def _test_set(X, n=40, seed=3):
    rng = np.random.default_rng(seed)
    zeros = np.argwhere(X == 0)
    pick = zeros[rng.choice(len(zeros), n, replace=False)]
    return pick[:, 0], pick[:, 1], np.zeros(n, np.int8)


@pytest.fixture
def count_chain_fits(monkeypatch):
    calls = []
    real = chains.fit

    def counting(*args, **kwargs):
        calls.append(kwargs.get("n_iter"))
        return real(*args, **kwargs)
    monkeypatch.setattr(chains, "fit", counting)
    return calls


def test_min_segment_is_what_split_rhat_needs_after_the_burn_in():
    assert chains.min_segment(0.5) == 7 and chains.min_segment(0.0) == 4 and chains.min_segment(3) == 7
    assert chains.min_segment(0.75) == 13
    for burn_in in (0.5, 0.75, 3):                 # the first check works at the minimum, not below
        n = chains.min_segment(burn_in)
        az = chains._arviz()
        post = np.random.default_rng(0).normal(size=(2, n))
        chains.diagnostics(az.from_dict(posterior={"x": post}), burn_in=burn_in)
        with pytest.raises(ValueError, match="R-hat needs at least 4|fewer than 4"):
            chains.diagnostics(az.from_dict(posterior={"x": post[:, :n - 1]}), burn_in=burn_in)


@pytest.mark.parametrize("segment, burn_in, msg", [
    (5, 0.5, r"segment = 5 is too short: burn_in = 0.5 leaves 3 .* give segment >= 7"),
    (6, 0.5, r"give segment >= 7"),
    (6, 3, r"segment = 6 is too short.* give segment >= 7"),
    (8.0, 0.5, r"segment must be an integer >= 4"),
    (True, 0.5, r"segment must be an integer >= 4"),
])
def test_run_until_agree_refuses_a_short_segment_before_any_sweep(segment, burn_in, msg,
                                                                  count_chain_fits, tmp_path):
    with pytest.raises(ValueError, match=msg):
        chains.run_until_agree(small(), "DEPM", T=3, starts=(1, 3), segment=segment, burn_in=burn_in,
                               max_sweeps=30, var_names=("K",), checkpoint=tmp_path / "ck")
    assert count_chain_fits == [] and not (tmp_path / "ck").exists()


def test_run_until_agree_runs_at_the_minimum_segment():
    cs, s = chains.run_until_agree(small(), "DEPM", T=3, starts=(1, 3), segment=7, max_sweeps=7,
                                   var_names=("K",))
    assert s["sweeps"] == 7


@pytest.mark.parametrize("kwargs, msg", [
    (dict(max_sweeps=0), "max_sweeps must be an integer >= 1"),
    (dict(max_sweeps=20.5), "max_sweeps must be an integer >= 1"),
    (dict(max_sweeps=True), "max_sweeps must be an integer >= 1"),
    (dict(cap_seconds=0), "cap_seconds must be a positive number"),
    (dict(cap_seconds=-5.0), "cap_seconds must be a positive number"),
    (dict(cap_seconds=float("nan")), "cap_seconds must be a positive number"),
    (dict(cap_seconds="60"), "cap_seconds must be a positive number"),
    (dict(rhat=0), "rhat must be a positive finite number"),
    (dict(rhat=float("nan")), "rhat must be a positive finite number"),
    (dict(rhat="1.01"), "rhat must be a positive finite number"),
    (dict(var_names="K"), "var_names must be a non-empty list"),
    (dict(var_names=()), "var_names must be a non-empty list"),
    (dict(var_names=("K", 3)), "var_names must be a non-empty list"),
    (dict(var_names=("K", "nope")), r"unknown variable\(s\) \['nope'\] in var_names; the DEPM's chains trace"),
    (dict(var_names=("log_joint",)), r"unknown variable\(s\) \['log_joint'\]"),
    (dict(var_names=("a1",)), r"unknown variable\(s\) \['a1'\]"),
])
def test_run_until_agree_checks_its_settings_before_any_sweep(kwargs, msg, count_chain_fits):
    kw = dict(T=3, starts=(1, 3), segment=8, max_sweeps=16, var_names=("K",))
    kw.update(kwargs)
    with pytest.raises(ValueError, match=msg):
        chains.run_until_agree(small(), "DEPM", **kw)
    assert count_chain_fits == []


def test_traced_names_are_the_traced_variables():
    X = small()
    for model, T in (("IDEPM", None), ("DEPM", 3), ("EPM", 3)):
        cs = epm_lib.fit_chains(X, model, T=T, starts=(1, 3), n_iter=2, n_avg=1, test=_test_set(X))
        assert sorted(cs.idata.posterior.data_vars) == sorted(chains.traced_names(model, test=True))


@pytest.mark.parametrize("kwargs, msg", [
    (dict(segment=5), "give segment >= 7"),
    (dict(rhat=float("inf")), "rhat must be a number > 1"),
    (dict(rhat=True), "rhat must be a number > 1"),
])
def test_converged_run_checks_segment_and_rhat(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        ex.ConvergedRun("toy90", "IDEPM", **kwargs)


def test_a_run_that_failed_in_its_first_segment_does_not_block_the_next(tmp_path, monkeypatch):
    X = small(3)
    real = chains.fit

    def failing(*args, **kwargs):
        if kwargs.get("seed") == 1:
            raise RuntimeError("killed")
        return real(*args, **kwargs)
    monkeypatch.setattr(chains, "fit", failing)
    kw = dict(T=4, starts=(1, 4), max_sweeps=16, var_names=("K",), checkpoint=tmp_path)
    with pytest.raises(RuntimeError, match="killed"):
        chains.run_until_agree(X, "DEPM", segment=8, **kw)
    assert (tmp_path / "run.json").exists() and not list(tmp_path.glob("chain*.npz"))
    monkeypatch.setattr(chains, "fit", real)
    # another segment (other settings) in the same folder: taken over, nothing was lost
    cs, s = chains.run_until_agree(X, "DEPM", segment=10, **kw)
    assert s["sweeps"] == 20
    assert json.loads((tmp_path / "run.json").read_text())["segment"] == 10
    # a folder with chains of other settings: the error names the folder and the ways out
    with pytest.raises(chains.CheckpointError, match=rf"{tmp_path}: holds chains of other settings.*"
                       rf"delete the folder {tmp_path}.*--checkpoints DIR") as info:
        chains.run_until_agree(X, "DEPM", segment=8, **kw)
    assert info.value.kind == "settings" and info.value.folder == tmp_path


# ------------------------------------------------------------------ 5. checkpoint files
def test_run_json_is_written_atomically(tmp_path, monkeypatch):
    replaced, synced = [], []
    real_replace, real_fsync = os.replace, os.fsync
    monkeypatch.setattr(os, "replace", lambda a, b: (replaced.append((str(a), str(b))), real_replace(a, b)))
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    chains.run_until_agree(small(), "DEPM", T=3, starts=(1, 3), segment=8, max_sweeps=8, var_names=("K",),
                           checkpoint=tmp_path)
    meta = [(a, b) for a, b in replaced if b == str(tmp_path / "run.json")]
    assert len(meta) == 1 and os.path.dirname(meta[0][0]) == str(tmp_path) and synced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["chain0.npz", "chain1.npz", "run.json"]


def _checkpointed(folder, **extra):
    kw = dict(T=3, starts=(1, 3), segment=8, max_sweeps=8, var_names=("K",), checkpoint=folder)
    kw.update(extra)
    return chains.run_until_agree(small(), "DEPM", **kw)


@pytest.mark.parametrize("damage, name, what", [
    (lambda f: (f / "run.json").write_text(""), "run.json", "damaged checkpoint file"),
    (lambda f: (f / "run.json").write_text('{"model": "DE'), "run.json", "damaged checkpoint file"),
    (lambda f: (f / "chain1.npz").write_bytes((f / "chain1.npz").read_bytes()[:300]), "chain1.npz",
     "damaged chain file"),
    (lambda f: (f / "chain0.npz").write_bytes(b""), "chain0.npz", "damaged chain file"),
    (lambda f: (f / "chain0.npz").write_bytes(b"PK\x03\x04garbage" * 10), "chain0.npz", "damaged chain file"),
])
def test_a_damaged_checkpoint_names_the_file_and_what_to_do(tmp_path, damage, name, what):
    _checkpointed(tmp_path)
    damage(tmp_path)
    with pytest.raises(chains.CheckpointError) as info:
        _checkpointed(tmp_path, max_sweeps=16)
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / name}: {what}") and f"delete the folder {tmp_path}" in msg


def test_an_empty_run_json_without_chains_is_replaced(tmp_path):
    (tmp_path / "run.json").write_text("")
    cs, s = _checkpointed(tmp_path)
    assert s["sweeps"] == 8 and json.loads((tmp_path / "run.json").read_text())["segment"] == 8


def cli(*args):
    return [sys.executable, "-m", "epm_lib.experiments", *map(str, args)]


CONVERGED = ["--models", "DEPM", "--T", "3", "--folds", "0", "--converged", "--segment", "8",
             "--max-sweeps", "8", "--no-progress"]


@pytest.mark.slow
def test_cli_reports_a_damaged_checkpoint_in_one_line(tmp_path):
    args = ["--dataset", "toy90", *CONVERGED, "--results", str(tmp_path)]
    assert ex.main(args) == 0
    record = tmp_path / "toy90" / "converged" / "DEPM-T3-fold0-seed0-converged.json"
    folder = tmp_path / ".chains" / "toy90" / "DEPM-T3-fold0-seed0-converged"
    assert record.is_file() and (folder / "run.json").is_file()
    record.unlink()
    chain = folder / "chain2.npz"
    chain.write_bytes(chain.read_bytes()[:200])
    out = subprocess.run(cli(*args), capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: toy90/DEPM-T3-fold0-seed0-converged: ")
    assert f"{chain}: damaged chain file" in lines[0] and f"delete the folder {folder}" in lines[0]
    (folder / "run.json").write_text("")
    out = subprocess.run(cli(*args), capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and f"{folder / 'run.json'}: damaged" in out.stderr
    # the way out the message gives: another checkpoint folder
    assert ex.main(args + ["--checkpoints", str(tmp_path / "other")]) == 0 and record.is_file()


# ------------------------------------------------------------------ 6. unwritable results folder
@pytest.fixture
def count_all_fits(monkeypatch):
    calls = []
    for mod in (ex.records, chains):
        real = mod.fit

        def counting(*args, _real=real, **kwargs):
            calls.append(1)
            return _real(*args, **kwargs)
        monkeypatch.setattr(mod, "fit", counting)
    return calls


@pytest.mark.parametrize("mode", [
    ["--models", "DEPM", "--T", "2", "--n-iter", "4", "--n-avg", "2", "--jobs", "1"],
    CONVERGED,
    ["--baselines"],
])
@pytest.mark.parametrize("where", ["dataset folder is a file", "results is a file"])
def test_unwritable_results_are_refused_before_any_run(tmp_path, mode, where, count_all_fits, capsys,
                                                       monkeypatch):
    import epm_lib.baselines
    scored = []
    monkeypatch.setattr(epm_lib.baselines, "score_baselines", lambda *a, **k: scored.append(1))
    res = tmp_path / "res"
    if where == "results is a file":
        res.write_text("")
        bad = res
    else:
        res.mkdir()
        (res / "toy90").write_text("")
        bad = res / "toy90"
    code = ex.main(["--dataset", "toy90", "--folds", "0", "--results", str(res), "--no-progress"] + mode)
    err = capsys.readouterr().err
    assert code == 1 and count_all_fits == [] and scored == []
    assert err.startswith("error: ") and str(bad) in err and "--results DIR" in err


def test_an_unwritable_checkpoint_folder_is_refused_before_any_run(tmp_path, count_all_fits, capsys):
    (tmp_path / "ck").write_text("")
    code = ex.main(["--dataset", "toy90", "--folds", "0", "--results", str(tmp_path / "res"),
                    "--checkpoints", str(tmp_path / "ck")] + CONVERGED)
    err = capsys.readouterr().err
    assert code == 1 and count_all_fits == [] and str(tmp_path / "ck") in err and "--checkpoints DIR" in err


# ------------------------------------------------------------------ 7. no option silently ignored
@pytest.mark.parametrize("extra, msg", [
    (["--converged", "--n-iter", "5"], "--n-iter is not used by --converged"),
    (["--converged", "--n-iter", "600"], "--n-iter is not used by --converged"),
    (["--converged", "--n-avg", "50"], "--n-avg is not used by --converged"),
    (["--converged", "--jobs", "0"], "--jobs must be an integer >= 1 (processes) or -1"),
    (["--jobs", "-3"], "--jobs must be an integer >= 1 (processes) or -1"),
    (["--converged", "--dask-local", "0"], "--dask-local must be a number of worker processes >= 1"),
    (["--dask-local", "0"], "--dask-local must be a number of worker processes >= 1"),
    (["--converged", "--starts", "data"], "--starts takes at least two chains' starts"),
    (["--converged", "--starts", "data", "0"], "--starts takes at least two chains' starts"),
    (["--converged", "--starts", "data", "x"], "--starts takes at least two chains' starts"),
    (["--starts", "data", "1"], "--starts is for --converged runs"),
    (["--converged", "--models", "EPM", "CEPM", "--T", "4", "--split-merge", "20"],
     "--split-merge is for the IDEPM and the DEPM; none of the models EPM, CEPM uses it"),
    (["--segment", "8"], "--segment is for --converged runs"),
    (["--max-sweeps", "8"], "--max-sweeps is for --converged runs"),
    (["--cap-seconds", "8"], "--cap-seconds is for --converged runs"),
    (["--rhat", "1.05"], "--rhat is for --converged runs"),
    (["--split-merge", "20"], "--split-merge is for --converged runs"),
    (["--checkpoints", "x"], "--checkpoints is for --converged runs"),
    (["--jobs", "2", "--dask-local", "1"], "--jobs is not used with --dask-local / --dask-scheduler"),
    (["--baselines", "--models", "DEPM"], "--models is not used by --baselines"),
    (["--baselines", "--n-iter", "5"], "--n-iter is not used by --baselines"),
    (["--baselines", "--jobs", "2"], "--jobs is not used by --baselines"),
    (["--baselines", "--seeds", "1"], "--seeds is not used by --baselines"),
    (["--baselines", "--segment", "8"], "--segment is not used by --baselines"),
    (["--threshold", "0.5"], "--threshold is for reading your own file; toy90 is a built-in data set"),
    (["--square"], "--square is for reading your own file"),
])
def test_cli_refuses_every_option_it_would_ignore(extra, msg, capsys):
    with pytest.raises(SystemExit) as info:
        ex.main(["--dataset", "toy90", "--folds", "0", "--dry-run"] + extra)
    assert info.value.code == 2 and msg in capsys.readouterr().err


@pytest.mark.parametrize("extra", [
    ["--converged", "--models", "EPM", "DEPM", "--T", "4", "--split-merge", "20", "--rhat", "1.05"],
    ["--converged", "--models", "EPM", "--T", "4", "--split-merge", "0", "--checkpoints", "x"],
    ["--models", "DEPM", "--T", "4", "--n-iter", "600", "--jobs", "2"],
    ["--baselines", "--n-folds", "5", "--recompute-stale"],
])
def test_cli_accepts_the_options_it_uses(extra, capsys):
    assert ex.main(["--dataset", "toy90", "--folds", "0", "--dry-run"] + extra) == 0


# ------------------------------------------------------------------ 8. the data changed (converged)
def write_pairs(path, X):
    path.write_text("".join(f"{i},{j}\n" for i, j in zip(*np.nonzero(X))))


def test_converged_cli_says_the_data_changed_and_recomputes_on_request(tmp_path, capsys):
    X = np.random.default_rng(7).random((12, 10)) < 0.3
    X2 = X.copy()
    X2[0] = ~X2[0]
    f, res = tmp_path / "graph.csv", tmp_path / "res"
    write_pairs(f, X)
    args = ["--dataset", str(f), *CONVERGED, "--results", str(res)]
    assert ex.main(args) == 0
    record = res / "graph" / "converged" / "DEPM-T3-fold0-seed0-converged.json"
    folder = res / ".chains" / "graph" / "DEPM-T3-fold0-seed0-converged"
    old_fp = json.loads(record.read_text())["data"]["fingerprint"]
    before = record.read_bytes()
    write_pairs(f, X2)
    new_fp = epm_lib.datasets.fingerprint(epm_lib.datasets.load_file(f).X)
    capsys.readouterr()
    for extra in ([], ["--dry-run"]):
        assert ex.main(args + extra) == 1
        out, err = capsys.readouterr()
        assert "1 of other data: stale" in out
        assert err.startswith("error: the data changed") and "other settings" not in err
        for part in (str(record), str(f), old_fp, new_fp, "fingerprint", "--recompute-stale", str(folder.parent)):
            assert part in err
        assert record.read_bytes() == before
    assert ex.main(args + ["--recompute-stale"]) == 0
    assert "stale, recomputed" in capsys.readouterr().out
    assert json.loads(record.read_text())["data"]["fingerprint"] == new_fp
    assert ex.main(args) == 0 and "1 done, 0 to run" in capsys.readouterr().out
    # chains of the old data without a record (an interrupted run): the data changed, named
    record.unlink()
    write_pairs(f, X)
    assert ex.main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: graph/DEPM-T3-fold0-seed0-converged: the data changed") and str(folder) in err
    assert "--recompute-stale" in err and len(err.strip().splitlines()) == 1
    assert ex.main(args + ["--recompute-stale"]) == 0
    assert json.loads(record.read_text())["data"]["fingerprint"] == old_fp


def test_run_converged_on_stale_recompute_equals_a_fresh_run(tmp_path):
    X = np.random.default_rng(7).random((12, 10)) < 0.3
    f = tmp_path / "g.csv"
    write_pairs(f, ~X)
    spec = ex.DataSpec.from_file(f)
    run = ex.ConvergedRun(spec, "DEPM", T=3, segment=8, max_sweeps=8, cap_seconds=None)
    ex.run_converged(run, tmp_path / "a")
    write_pairs(f, X)
    with pytest.raises(ValueError, match="the data changed"):
        ex.run_converged(run, tmp_path / "a")
    rec = ex.run_converged(run, tmp_path / "a", on_stale="recompute")
    fresh = ex.run_converged(run, tmp_path / "b")
    assert rec["traces"] == fresh["traces"] and rec["data"] == fresh["data"]
