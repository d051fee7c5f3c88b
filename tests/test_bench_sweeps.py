"""benchmarks/bench_sweeps.py: the floor of a sweep (its rates at the speed of light, plus the draws it
must make, each timed alone) is made of the right parts and leaves the sampler's state alone. Times
are not compared with anything (they vary by machine); only what is timed and what it returns."""
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).parents[1]
os.environ.setdefault("NUMBA_NUM_THREADS", "1")      # as the script sets it before numba's import
spec = importlib.util.spec_from_file_location("bench_sweeps", ROOT / "benchmarks" / "bench_sweeps.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

import epm_lib  # noqa: E402


@pytest.fixture(scope="module")
def X():
    return bench.random_binary((30, 40), 200, seed=1)


@pytest.mark.parametrize("model", ["EPM", "CEPM", "DEPM"])
def test_factor_draws_leave_the_state_alone(X, model):
    st = epm_lib.fit(X, model, T=8, n_iter=3, n_avg=1, seed=0, init="paper").state
    before = {k: np.array(v, copy=True) for k, v in st.items() if isinstance(v, np.ndarray)}
    t = bench.factor_draw_seconds(model, st, repeats=2)
    assert t > 0.0
    for k, v in before.items():
        assert np.array_equal(st[k], v), k


@pytest.mark.parametrize("model", ["EPM", "DEPM"])
def test_truncated_run_has_its_floor(X, model):
    r = bench.bench_truncated(X, model, 8, repeats=2, warmup=3, seed=0)
    assert r["n_uniforms"] == X.nnz + r["M"]            # a ZTP draw per one, a seating draw per customer
    assert r["uniforms_cpu"] > 0.0 and r["factors_cpu"] > 0.0
    assert bench.draw_floor(r) == r["kernel_cpu_min"] + r["uniforms_cpu"] + r["factors_cpu"]


def test_idepm_floor_has_no_factor_draws(X):
    r = bench.bench_idepm(X, repeats=2, settle=4, seed=0, K_init=3)
    assert r["n_uniforms"] == X.nnz + r["M"]            # a z-step draw per customer, a move's per one
    assert r["factors_cpu"] == 0.0                       # the collapsed sweep draws no phi, psi, lambda
    assert bench.draw_floor(r) == r["kernel_cpu_min"] + r["uniforms_cpu"]


def test_main_prints_and_stores_the_floor(tmp_path, capsys):
    out = tmp_path / "s.json"
    bench.main(["--datasets", "ml100k", "--data-dir", str(tmp_path / "none"), "--T", "4", "--models", "EPM",
                "--repeats", "2", "--warmup", "2", "--json", str(out)])
    text = capsys.readouterr().out
    assert "floor x ref" in text and "not available" in text     # random stand-in, said so
    import json
    r = json.loads(out.read_text())["results"][0]
    assert r["x_floor"] == pytest.approx(r["floor_cpu"] / r["ref_kernel_cpu"])
