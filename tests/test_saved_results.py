"""Issue 19, saved results: ``load_result`` names the file and what is wrong for anything that is
not a readable saved ``FitResult`` (never another exception type); a resumed chain state is
checked against the data and the model before any numba kernel sees it (a damaged one used to
crash the interpreter); ``save`` keeps the kept samples (``predict`` after loading gives the same,
bit for bit), writes through symbolic links and refuses directories and FIFOs; ``predict``
accepts empty inputs."""
import json
import os
import re
import stat
import subprocess
import sys

import numpy as np
import pytest

from epm_lib import fit
from epm_lib.fit import load_result

# the data of every test; the subprocesses rebuild it from the same code
PROBLEM = """
import numpy as np
rng = np.random.default_rng(0)
X = (rng.random((20, 15)) < 0.2).astype(np.int8)
zeros = np.argwhere(X == 0)
pick = zeros[rng.choice(len(zeros), 30, replace=False)]
test = (pick[:, 0], pick[:, 1], rng.integers(0, 2, 30))
"""
_ns = {}
exec(PROBLEM, _ns)
X, TEST = _ns["X"], _ns["test"]
T_OF = {"EPM": 4, "CEPM": 4, "DEPM": 4, "IDEPM": None}


def saved(tmp_path, model, name="good.npz", **kw):
    r = fit(X, model, T=T_OF[model], n_iter=4, n_avg=2, seed=1, **kw)
    return r, r.save(tmp_path / name)


def rewrite(src, dst, change=None, meta_change=None, drop=()):
    """Copy the saved file ``src`` to ``dst`` (a valid .npz) with arrays changed by ``change``
    (a dict of name -> new array) and the parsed __meta__ changed by ``meta_change``."""
    with np.load(src, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files if k not in drop}
    meta = json.loads(str(arrays["__meta__"]))
    if meta_change is not None:
        meta = meta_change(meta)
    arrays["__meta__"] = np.array(json.dumps(meta))
    arrays.update(change or {})
    np.savez(dst, **arrays)
    return dst


def resume_in_subprocess(model, path, in_memory_damage=None):
    """fit(..., resume=path) in a fresh interpreter (a segfault fails the test, not pytest);
    with ``in_memory_damage`` (code run on ``state``), resume from the loaded object instead."""
    code = PROBLEM + f"""
import sys
from epm_lib import fit, load_result
resume = {str(path)!r}
if {in_memory_damage!r} is not None:
    resume = load_result(resume)
    del resume._source                    # an object in memory, not a file
    state = resume.state
    exec({in_memory_damage!r})
try:
    fit(X, {model!r}, T={T_OF[model]!r}, n_iter=2, n_avg=1, resume=resume)
except ValueError as e:
    print("ValueError:", e)
    sys.exit(0)
print("no error")
"""
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("the resumed chain hung")
    assert out.returncode == 0, f"the interpreter died (return code {out.returncode}): {out.stderr[-2000:]}"
    return out.stdout.strip()


# ----------------------------------------------------------------------------------------------
# 1. a damaged IDEPM (or truncated-model) state never reaches the kernels
# ----------------------------------------------------------------------------------------------

IDEPM_DAMAGE = {
    "offsets cut to 5": (lambda a: {"state.offsets": a["state.offsets"][:5]}, "offsets", "shape"),
    "offsets too long": (lambda a: {"state.offsets": np.r_[a["state.offsets"], a["state.offsets"][-1]]},
                         "offsets", "shape"),
    "offsets not from 0": (lambda a: {"state.offsets": a["state.offsets"] + 1}, "offsets", "from 0"),
    "offsets decreasing": (lambda a: {"state.offsets": np.r_[0, a["state.offsets"][1:-1][::-1],
                                                              a["state.offsets"][-1]]}, "offsets", "decreases"),
    "a one without customers": (lambda a: {"state.offsets": np.r_[0, 0, a["state.offsets"][2:]]},
                                "offsets", "no customer"),
    "offsets float": (lambda a: {"state.offsets": a["state.offsets"].astype(float)}, "offsets", "dtype"),
    "z labels out of range": (lambda a: {"state.z": a["state.z"] + 1000}, "z", "empty"),
    "z huge label": (lambda a: {"state.z": np.r_[a["state.z"][:-1], 2 ** 62]}, "z", "empty"),
    "z negative label": (lambda a: {"state.z": np.r_[-3, a["state.z"][1:]]}, "z", "negative"),
    "z labels not contiguous": (lambda a: {"state.z": np.where(a["state.z"] == 0, a["state.z"].max() + 1,
                                                                a["state.z"])}, "z", "atom 0 empty"),
    "z int32": (lambda a: {"state.z": a["state.z"].astype(np.int32)}, "z", "dtype int32"),
    "z 2-d": (lambda a: {"state.z": a["state.z"][:, None]}, "z", "shape"),
    "h short": (lambda a: {"state.h": a["state.h"][:2]}, "h", "shape"),
    "h nan": (lambda a: {"state.h": np.r_[np.nan, a["state.h"][1:]]}, "h", "non-finite"),
    "h zero": (lambda a: {"state.h": np.r_[a["state.h"][:3], 0.0]}, "h", "non-positive"),
}


@pytest.fixture(scope="module")
def idepm_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("idepm")
    return saved(d, "IDEPM")[1]


@pytest.mark.slow
@pytest.mark.parametrize("case", list(IDEPM_DAMAGE))
def test_damaged_idepm_state_is_refused_before_the_kernels(case, idepm_file, tmp_path):
    change, name, what = IDEPM_DAMAGE[case]
    with np.load(idepm_file) as f:
        arrays = {k: f[k] for k in f.files}
    bad = rewrite(idepm_file, tmp_path / "bad.npz", change(arrays))
    out = resume_in_subprocess("IDEPM", bad)
    assert out.startswith(f"ValueError: {bad}: "), out
    assert f"array {name!r}" in out and what in out, out


@pytest.mark.slow
def test_damaged_state_in_memory_is_refused(idepm_file):
    out = resume_in_subprocess("IDEPM", idepm_file, "state['offsets'] = state['offsets'][:5]")
    assert out.startswith("ValueError: resume: the IDEPM chain state: array 'offsets' has shape (5,)"), out


def test_idepm_state_with_missing_entries_resumes(tmp_path):
    """A mask adds entries that may hold no customers: a valid state still passes the check."""
    from epm_lib.fit import missing_mask
    mask = missing_mask(X.shape, TEST[0], TEST[1])
    a = fit(X, "IDEPM", n_iter=4, n_avg=1, seed=2, mask=mask, test=TEST)
    a.save(tmp_path / "m.npz")
    b = fit(X, "IDEPM", n_iter=2, n_avg=1, mask=mask, test=TEST, resume=tmp_path / "m.npz")
    assert b.settings["start_iter"] == 4


TRUNCATED_DAMAGE = [
    ("EPM", {"state.U": lambda a: a[:-1]}, "U", "shape"),
    ("EPM", {"state.V": lambda a: a[:, :2]}, "V", "shape"),
    ("CEPM", {"state.lam": lambda a: a[:2]}, "lam", "shape"),
    ("EPM", {"state.U": lambda a: -a}, "U", "negative"),
    ("CEPM", {"state.V": lambda a: np.where(a > 0, np.inf, a)}, "V", "non-finite"),
    ("EPM", {"state.h": lambda a: a[:4]}, "h", "shape"),
    ("DEPM", {"state.psi": lambda a: a * 2}, "psi", "summing to 2"),
    ("DEPM", {"state.phi": lambda a: a.astype(np.float32)}, "phi", "dtype float32"),
    ("DEPM", {"state.lam": lambda a: np.full_like(a, np.nan)}, "lam", "non-finite"),
    ("DEPM", {"state.h": lambda a: np.full_like(a, np.nan)}, "h", "non-finite"),
]


@pytest.mark.slow
@pytest.mark.parametrize("model,change,name,what", TRUNCATED_DAMAGE,
                         ids=[f"{m}-{n}-{w}" for m, _, n, w in TRUNCATED_DAMAGE])
def test_damaged_truncated_state_is_refused(model, change, name, what, tmp_path):
    _, good = saved(tmp_path, model)
    with np.load(good) as f:
        new = {k: fn(f[k]) for k, fn in change.items()}
    bad = rewrite(good, tmp_path / "bad.npz", new)
    out = resume_in_subprocess(model, bad)
    assert out.startswith(f"ValueError: {bad}: the {model} chain state: array {name!r}"), out
    assert what in out, out


def test_damaged_random_stream_is_named(tmp_path):
    a, good = saved(tmp_path, "DEPM")

    def meta_change(m):
        m["state_extra"]["rng"] = {"bit_generator": "PCG64", "state": 7}
        return m
    bad = rewrite(good, tmp_path / "bad.npz", meta_change=meta_change)
    with pytest.raises(ValueError, match=re.escape(f"{bad}: the random-stream state 'rng'")):
        fit(X, "DEPM", T=4, n_iter=2, n_avg=1, resume=bad)


# ----------------------------------------------------------------------------------------------
# 3. a damaged phi is reported as phi, not as a hyperprior problem
# ----------------------------------------------------------------------------------------------

def test_damaged_phi_is_named(tmp_path):
    a = fit(X, "DEPM", T=4, n_iter=3, n_avg=1, seed=1)
    a.state["phi"][0] = np.inf
    with pytest.raises(ValueError, match=r"resume: the DEPM chain state: array 'phi' holds a non-finite") as e:
        fit(X, "DEPM", T=4, n_iter=3, n_avg=1, resume=a)
    assert "hyperprior" not in str(e.value)
    a.save(tmp_path / "a.npz")
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'a.npz'}: the DEPM chain state: array 'phi'")):
        fit(X, "DEPM", T=4, n_iter=3, n_avg=1, resume=tmp_path / "a.npz")


# ----------------------------------------------------------------------------------------------
# 2. every unreadable file: ValueError "PATH: not a saved FitResult (...)"
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def good_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("good")
    return saved(d, "DEPM", test=TEST)[1]


def refused(path, what=""):
    with pytest.raises(ValueError, match=re.escape(f"{path}: not a saved FitResult (") + ".*" + what) as e:
        load_result(path)
    return str(e.value)


def test_truncated_file(good_file, tmp_path):
    for n in (10, len(good_file.read_bytes()) // 2, len(good_file.read_bytes()) - 1):
        p = tmp_path / f"cut{n}.npz"
        p.write_bytes(good_file.read_bytes()[:n])
        refused(p, "unreadable")


def test_empty_file(tmp_path):
    (tmp_path / "empty.npz").write_bytes(b"")
    refused(tmp_path / "empty.npz", "unreadable")


def test_missing_file_and_directory(tmp_path):
    refused(tmp_path / "nothing.npz", "unreadable")
    refused(tmp_path, "unreadable")


def test_flipped_byte_in_array_data(good_file, tmp_path):
    data = bytearray(good_file.read_bytes())
    i = data.index(b"\x93NUMPY", data.index(b"state.phi")) + 200     # inside phi's numbers
    data[i] ^= 0x10
    (tmp_path / "flip.npz").write_bytes(bytes(data))
    refused(tmp_path / "flip.npz", "unreadable")


@pytest.mark.slow
def test_any_flipped_byte_is_refused_or_harmless(good_file, tmp_path):
    """Flip one byte at many places: the load either succeeds or raises the file's ValueError."""
    data = good_file.read_bytes()
    p = tmp_path / "flip.npz"
    kinds = set()
    for i in range(0, len(data), 37):
        b = bytearray(data)
        b[i] ^= 0xFF
        p.write_bytes(bytes(b))
        try:
            load_result(p)
            kinds.add("loaded")
        except ValueError as e:
            assert str(e).startswith(f"{p}: not a saved FitResult ("), str(e)
            kinds.add("refused")
    assert "refused" in kinds


def test_npy_file(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(5))
    assert "an .npy array" in refused(tmp_path / "a.npy")


def test_text_file(tmp_path):
    (tmp_path / "a.npz").write_text("hello\n")
    refused(tmp_path / "a.npz", "unreadable")


@pytest.mark.parametrize("drop,what", [("__meta__", "no '__meta__'"), ("M", "no 'M'"),
                                       ("move_stats", "no 'move_stats'")])
def test_older_layout_missing_arrays(good_file, tmp_path, drop, what):
    with np.load(good_file) as f:
        arrays = {k: f[k] for k in f.files if k != drop}
    np.savez(tmp_path / "old.npz", **arrays)
    refused(tmp_path / "old.npz", re.escape(what))


@pytest.mark.parametrize("key", ["state_extra", "settings", "model", "T"])
def test_older_layout_missing_meta_keys(good_file, tmp_path, key):
    p = rewrite(good_file, tmp_path / "old.npz", meta_change=lambda m: {k: v for k, v in m.items() if k != key})
    refused(p, f"another layout: no '{key}'")


@pytest.mark.parametrize("meta", [[1, 2], "text", 3, None])
def test_meta_not_a_dict(good_file, tmp_path, meta):
    p = rewrite(good_file, tmp_path / "m.npz", meta_change=lambda m: meta)
    refused(p, "not an object")


def test_meta_not_json_or_not_text(good_file, tmp_path):
    p = rewrite(good_file, tmp_path / "m.npz", {"__meta__": np.array("{not json")})
    refused(p, "not valid JSON")
    p = rewrite(good_file, tmp_path / "n.npz", {"__meta__": np.arange(3)})
    refused(p, "not a JSON text")


@pytest.mark.parametrize("change,what", [
    (lambda m: {**m, "settings": "x"}, "must be JSON objects"),
    (lambda m: {**m, "settings": {**m["settings"], "n_iter": -1}}, "n_iter"),
    (lambda m: {**m, "settings": {**m["settings"], "shape": [3]}}, "shape"),
    (lambda m: {**m, "model": "XYZ"}, "unknown model"),
    (lambda m: {**m, "T": "four"}, "T = 'four'"),
    (lambda m: {**m, "n_samples": 5}, "sample.2.R"),
])
def test_damaged_meta_fields(good_file, tmp_path, change, what):
    refused(rewrite(good_file, tmp_path / "m.npz", meta_change=change), re.escape(what))


def test_damaged_trace_and_sample_shapes(good_file, tmp_path):
    refused(rewrite(good_file, tmp_path / "a.npz", {"K": np.arange(3)}), "'K' has shape")
    refused(rewrite(good_file, tmp_path / "b.npz", {"sample.0.R": np.ones((3, 4))}), "'sample.0.R'")
    refused(rewrite(good_file, tmp_path / "c.npz", {"sample.1.lam": -np.ones(4)}), "'sample.1.lam' holds negative")


def test_resume_from_unreadable_file_names_it(tmp_path):
    (tmp_path / "e.npz").write_bytes(b"")
    with pytest.raises(ValueError, match=re.escape(f"{tmp_path / 'e.npz'}: not a saved FitResult")):
        fit(X, "DEPM", T=4, n_iter=2, n_avg=1, resume=tmp_path / "e.npz")


# ----------------------------------------------------------------------------------------------
# 4. the kept samples are saved: predict after load equals predict before, bit for bit
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["EPM", "CEPM", "DEPM", "IDEPM"])
@pytest.mark.parametrize("with_test", [False, True])
def test_predict_after_save_and_load_is_identical(model, with_test, tmp_path):
    r = fit(X, model, T=T_OF[model], n_iter=6, n_avg=4, seed=3, test=TEST if with_test else None)
    back = load_result(r.save(tmp_path / "r.npz"))
    assert len(back.samples) == len(r.samples) >= 1
    rows, cols = np.nonzero(np.ones_like(X))
    if model == "IDEPM":                  # only the rows and columns that carry parameters
        keep = np.isin(rows, r.state["row_ids"]) & np.isin(cols, r.state["col_ids"])
        rows, cols = rows[keep], cols[keep]
    assert np.array_equal(back.predict(rows, cols), r.predict(rows, cols))
    if with_test:
        assert np.array_equal(back.predict(TEST[0], TEST[1]), r.predict(TEST[0], TEST[1]))
    # and saved again, the same file contents (samples included)
    again = load_result(back.save(tmp_path / "r2.npz"))
    assert all(np.array_equal(x, y) for s, t in zip(again.samples, r.samples) for x, y in zip(s, t))


def test_file_without_samples_says_so(good_file, tmp_path):
    """A file of the older layout (no samples) loads; predict says it was saved without them."""
    with np.load(good_file) as f:
        drop = [k for k in f.files if k.startswith("sample.")]
    assert drop
    p = rewrite(good_file, tmp_path / "old.npz", drop=drop,
                meta_change=lambda m: {k: v for k, v in m.items() if k != "n_samples"})
    old = load_result(p)
    assert np.array_equal(old.test_prob, load_result(good_file).test_prob)
    with pytest.raises(ValueError, match=re.escape(f"{p}: this result was saved without its samples")):
        old.predict([0], [0])
    # the advice works: resume it with keep_samples
    more = fit(X, "DEPM", T=4, n_iter=2, n_avg=2, test=TEST, resume=p, keep_samples=2)
    assert more.predict([0], [0]).shape == (1,)


def test_result_without_samples_keeps_its_message():
    r = fit(X, "DEPM", T=4, n_iter=2, n_avg=1)
    r.samples = None
    with pytest.raises(ValueError, match="kept no samples: fit with keep_samples"):
        r.predict([0], [0])


# ----------------------------------------------------------------------------------------------
# 5. save writes through symbolic links, refuses directories and FIFOs, discards into /dev/null
# ----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_result():
    return fit(X, "DEPM", T=4, n_iter=3, n_avg=2, seed=4)


def test_save_writes_through_a_symlink(small_result, tmp_path):
    target = tmp_path / "store" / "real.npz"
    target.parent.mkdir()
    target.write_bytes(b"old")
    link = tmp_path / "link.npz"
    link.symlink_to(target)
    assert small_result.save(link) == link
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert np.array_equal(load_result(target).K, small_result.K)
    assert np.array_equal(load_result(link).K, small_result.K)
    # a relative link, and one whose target does not exist yet
    rel = tmp_path / "store" / "rel.npz"
    rel.symlink_to("new.npz")
    small_result.save(rel)
    assert rel.is_symlink() and (tmp_path / "store" / "new.npz").is_file()
    assert not [p for p in (tmp_path / "store").iterdir() if p.name.startswith(".")]   # no temp left


def test_save_keeps_the_permissions_of_the_file_it_replaces(small_result, tmp_path):
    p = tmp_path / "r.npz"
    small_result.save(p)
    os.chmod(p, 0o644)
    small_result.save(p)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_save_refuses_a_directory(small_result, tmp_path):
    d = tmp_path / "dir.npz"
    d.mkdir()
    (d / "inside").write_text("keep")
    with pytest.raises(ValueError, match=re.escape(f"{d}: is a directory")):
        small_result.save(d)
    assert d.is_dir() and (d / "inside").read_text() == "keep"
    link = tmp_path / "to_dir"
    link.symlink_to(d)
    with pytest.raises(ValueError, match=re.escape(f"{link}: is a directory")):
        small_result.save(link)
    assert link.is_symlink()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_save_refuses_a_fifo(small_result, tmp_path):
    f = tmp_path / "pipe"
    os.mkfifo(f)
    with pytest.raises(ValueError, match=re.escape(f"{f}: is a FIFO")):
        small_result.save(f)
    assert stat.S_ISFIFO(f.stat().st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["pipe"]


@pytest.mark.skipif(not os.path.exists(os.devnull), reason="no null device")
def test_save_to_dev_null_writes_through(small_result, monkeypatch):
    """/dev/null stays the null device (the old save replaced it by a regular file when it
    could write to /dev): the result is written into it and discarded."""
    real_replace = os.replace

    def replace(src, dst):
        assert os.path.realpath(dst) != os.path.realpath(os.devnull), "save replaced the null device"
        return real_replace(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    assert str(small_result.save(os.devnull)) == os.devnull
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


# ----------------------------------------------------------------------------------------------
# 6. predict of no entries
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("model", ["DEPM", "IDEPM"])
def test_predict_empty_inputs(model):
    r = fit(X, model, T=T_OF[model], n_iter=3, n_avg=1, seed=0)
    for rows, cols in (([], []), (np.array([], dtype=float), np.array([], dtype=np.int64)), ((), ())):
        out = r.predict(rows, cols)
        assert out.shape == (0,) and out.dtype == np.float64
    for rows, cols in (([0.5], [1]), ([0.0], [1.0]), (["a"], ["b"]), (np.array([], dtype=str), [])):
        with pytest.raises(ValueError, match="1-d integer arrays"):
            r.predict(rows, cols)
    with pytest.raises(ValueError, match="same length"):
        r.predict([], [1])


def test_predict_checks_sample_shapes():
    r = fit(X, "DEPM", T=4, n_iter=3, n_avg=1, seed=0)
    R, C, lam = r.samples[0]
    r.samples = [(R[:3], C, lam)]
    with pytest.raises(ValueError, match=r"'sample\.0\.R' is float64 of shape \(3, 4\), expected"):
        r.predict([0], [0])

