"""Tests of epm_lib.datasets: the paper's data sets (Sec. 5) and the generic file loader.

The MovieLens tests read the real files from EPM_DATA_DIR (CI sets it to the shared data) and
are skipped, with the reason, when they are absent. MovieLens files are only ever written to
pytest's tmp_path, never into the repository.
"""
from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from epm_lib import datasets as D
from epm_lib.datasets import (ChecksumError, DataError, DataNotFoundError, Dataset, fingerprint,
                              load, load_file, make_toy90)

# The numbers recorded in /work/shared/data/*/PROVENANCE.md (typed in here, not imported).
FP_100K = "5e13ad03a0fc1304d68bb61c926ff96f4f0364ba7b241148d47d82aad627a1ad"
FP_1M = "45b8fb9604a42bc4df091c80d20cd4a19d04c3412ca38d1ff7120c771a76a311"
SHA_RECORDS = "2d5a385b3048707c87389b06183338d732bd191d7ef75497e8889b78b0a23ff4"
SHA_VERTICES = "a2057eb8588f1c08871663bd43f5ca14dd5a2f849d1a37ff7ae799278f39b445"
URL_100K = "https://files.grouplens.org/datasets/movielens/ml-100k.zip"
URL_1M = "https://files.grouplens.org/datasets/movielens/ml-1m.zip"

DATA = Path(os.environ["EPM_DATA_DIR"]) if os.environ.get("EPM_DATA_DIR") else None
ML100K = DATA / "ml-100k" / "u.data" if DATA else None
ML1M_CSV = DATA / "ml-1m" / "ratings.csv.gz" if DATA else None
ML1M_HALF = DATA / "ml-1m" / "ratings.dat.first487650lines.gz" if DATA else None
ENRON_SHARED = DATA / "enron" / "jhu_priebe_igraphdata" if DATA else None


def _have(path):
    return path is not None and path.is_file()


needs_100k = pytest.mark.skipif(not _have(ML100K), reason=(
    "MovieLens 100K not available: set EPM_DATA_DIR to a directory holding ml-100k/u.data "
    "(CI sets it to the shared data)"))
needs_1m = pytest.mark.skipif(not _have(ML1M_CSV), reason=(
    "MovieLens 1M not available: set EPM_DATA_DIR to a directory holding ml-1m/ratings.csv.gz "
    "(CI sets it to the shared data)"))
needs_1m_half = pytest.mark.skipif(not _have(ML1M_HALF), reason=(
    "the first half of the original ratings.dat is not available: set EPM_DATA_DIR to the shared "
    "data (ml-1m/ratings.dat.first487650lines.gz)"))
needs_enron_shared = pytest.mark.skipif(
    not _have(ENRON_SHARED / "records.csv.gz" if ENRON_SHARED else None),
    reason="the shared Enron source files are not available: set EPM_DATA_DIR to the shared data")


def _canonical_binary(X):
    assert isinstance(X, sp.csr_matrix)
    assert X.dtype == np.int8
    assert X.has_sorted_indices and X.has_canonical_format
    assert np.all(X.data == 1)                    # binary, no explicit zeros
    X2 = X.copy()
    X2.eliminate_zeros()
    X2.sum_duplicates()
    assert X2.nnz == X.nnz


def _naive_fingerprint(X):
    rows, cols = X.nonzero()
    pairs = sorted(zip(rows.tolist(), cols.tolist()))
    return hashlib.sha256(np.array(pairs, dtype="<i8").tobytes()).hexdigest()


# ---------------------------------------------------------------------------------------------
# toy90
# ---------------------------------------------------------------------------------------------
def test_toy90_wraps_make_toy90():
    ds = load("toy90")
    X0, _, _ = make_toy90(seed=0)
    assert ds.name == "toy90" and ds.shape == (90, 90)
    _canonical_binary(ds.X)
    assert (ds.X != X0).nnz == 0
    assert np.array_equal(ds.row_labels, np.arange(90)) and np.array_equal(ds.col_labels, np.arange(90))
    assert "make_toy90(seed=0)" in ds.source and "ohama2017" in ds.source
    assert (load("toy90", seed=1).X != make_toy90(seed=1)[0]).nnz == 0


# ---------------------------------------------------------------------------------------------
# Enron09 (shipped in data/enron)
# ---------------------------------------------------------------------------------------------
def test_enron_shipped_files_match_provenance():
    assert D.ENRON_SHA256 == {"records.csv.gz": SHA_RECORDS, "vertices.csv": SHA_VERTICES}
    for name, sha in D.ENRON_SHA256.items():
        path = D.REPO_ROOT / "data" / "enron" / name
        assert hashlib.sha256(path.read_bytes()).hexdigest() == sha
    readme = (D.REPO_ROOT / "data" / "enron" / "README.md").read_text()
    for needle in (SHA_RECORDS, SHA_VERTICES, "CC BY-SA 4.0", "priebe2005", "klimt2004"):
        assert needle in readme


def test_enron09_to():
    ds = load("enron09")
    assert ds.name == "enron09" and ds.shape == (149, 149)
    _canonical_binary(ds.X)
    assert ds.n_ones == 441
    assert ds.density == pytest.approx(441 / 149**2) and round(ds.density, 4) == 0.0199
    assert ds.X.diagonal().sum() == 0
    assert np.array_equal(ds.row_labels, ds.col_labels)
    assert ds.row_labels.dtype.kind == "U" and len(set(ds.row_labels)) == 149
    assert {"Vince Kaminski", "John Hodge", "Susan Bailey", "bill.williams"} <= set(ds.row_labels)
    for needle in ("0.016", "0.0199", "0.0225", "441", "500", "149"):
        assert needle in ds.description
    for needle in ("priebe2005", "klimt2004", "CC BY-SA 4.0", "igraphdata"):
        assert needle in ds.source


def test_enron09_all_recipients_contains_to():
    to, every = load("enron09"), load("enron09", recipients="all")
    assert every.shape == (149, 149) and every.n_ones == 500
    assert round(every.density, 4) == 0.0225
    _canonical_binary(every.X)
    assert (to.X.astype(np.int16) - every.X.astype(np.int16)).max() <= 0   # "to" ones are a subset
    assert every.X.diagonal().sum() == 0


@pytest.mark.parametrize("month, ones_all, ones_to", [
    ("2000-10", 353, 321), ("2001-01", 387, 344), ("2001-08", 466, 423), ("2001-09", 500, 441),
    ("2001-10", 772, 712), ("2001-12", 387, 352)])
def test_enron_months_match_provenance(month, ones_all, ones_to):
    person_of, labels, n_merged = D._enron_persons(D.ENRON_DIR / "vertices.csv")
    assert labels.size == 149 and person_of.size == 184 and n_merged == 35
    records = D._enron_records(D.ENRON_DIR / "records.csv.gz", month)
    assert D._enron_matrix(records, person_of, 149, "all")[0].nnz == ones_all
    assert D._enron_matrix(records, person_of, 149, "to")[0].nnz == ones_to


def test_enron_september_details():
    person_of, _, _ = D._enron_persons(D.ENRON_DIR / "vertices.csv")
    records = D._enron_records(D.ENRON_DIR / "records.csv.gz", "2001-09")
    assert records["type"].size == 3762 and np.sum(records["type"] == "to") == 2732
    s, r = person_of[records["sender"]], person_of[records["recipient"]]
    assert len(set(zip(s[s == r], r[s == r]))) == 23                   # self pairs dropped
    X = load("enron09", recipients="all").X
    rows, cols = X.nonzero()
    assert np.unique(np.r_[rows, cols]).size == 128
    assert np.unique(rows).size == 95 and np.unique(cols).size == 127


@needs_enron_shared
def test_enron_independent_rederivation_from_shared_source():
    """Rebuild Enron09 with the csv module straight from the shared source files."""
    for name, sha in (("records.csv.gz", SHA_RECORDS), ("vertices.csv", SHA_VERTICES)):
        assert hashlib.sha256((ENRON_SHARED / name).read_bytes()).hexdigest() == sha
    with open(ENRON_SHARED / "vertices.csv", newline="") as f:
        vertices = list(csv.DictReader(f))
    key = [v["name"] if v["name"] != "NA" else "@" + v["email"] for v in vertices]
    persons = list(dict.fromkeys(key))
    person = [persons.index(k) for k in key]
    assert len(persons) == 149
    ones = {"to": set(), "all": set()}
    with gzip.open(ENRON_SHARED / "records.csv.gz", "rt", newline="") as f:
        for rec in csv.DictReader(f):
            if "2001-09-01 00:00:00" <= rec["time_utc"] <= "2001-09-30 23:59:59":
                i, j = person[int(rec["sender"])], person[int(rec["recipient"])]
                if i != j:
                    ones["all"].add((i, j))
                    if rec["reciptype"] == "to":
                        ones["to"].add((i, j))
    assert (len(ones["to"]), len(ones["all"])) == (441, 500)
    for variant in ("to", "all"):
        X = load("enron09", recipients=variant).X
        assert set(zip(*map(np.ndarray.tolist, X.nonzero()))) == ones[variant]


def test_enron_bad_option():
    with pytest.raises(ValueError, match="recipients must be 'to'"):
        load("enron09", recipients="cc")


def test_enron_corrupted_and_missing(tmp_path, monkeypatch):
    for name in D.ENRON_SHA256:
        shutil.copy(D.ENRON_DIR / name, tmp_path / name)
    monkeypatch.setattr(D, "ENRON_DIR", tmp_path)
    assert load("enron09").n_ones == 441                        # intact copy: fine
    with open(tmp_path / "vertices.csv", "a") as f:
        f.write("184,someone.else,NA,NA\n")
    with pytest.raises(ChecksumError) as err:
        load("enron09")
    msg = str(err.value)
    assert "vertices.csv" in msg and SHA_VERTICES in msg and "expected" in msg
    assert "git checkout -- data/enron/vertices.csv" in msg
    (tmp_path / "records.csv.gz").unlink()
    shutil.copy(D.REPO_ROOT / "data" / "enron" / "vertices.csv", tmp_path / "vertices.csv")
    with pytest.raises(DataNotFoundError) as err:
        load("enron09")
    assert isinstance(err.value, FileNotFoundError)
    assert str(tmp_path / "records.csv.gz") in str(err.value)


# ---------------------------------------------------------------------------------------------
# MovieLens: the real files (from EPM_DATA_DIR)
# ---------------------------------------------------------------------------------------------
@needs_100k
def test_movielens100k():
    ds = load("movielens100k")                         # found through EPM_DATA_DIR
    assert ds.shape == (943, 1682)
    _canonical_binary(ds.X)
    assert ds.n_ones == 55_375
    assert ds.density == pytest.approx(55_375 / (943 * 1682)) and round(ds.density, 3) == 0.035
    assert fingerprint(ds.X) == FP_100K == _naive_fingerprint(ds.X)
    assert np.array_equal(ds.row_labels, np.arange(1, 944))
    assert np.array_equal(ds.col_labels, np.arange(1, 1683))
    assert "harper2015movielens" in ds.source and "ml-100k/u.data" in ds.source
    assert "0.035" in ds.description and "rating" in ds.description
    # independently: plain Python over the lines of u.data
    liked = set()
    for line in ML100K.read_text().splitlines():
        user, item, rating, _ = line.split("\t")
        if int(rating) > 3:
            liked.add((int(user) - 1, int(item) - 1))
    assert set(zip(*map(np.ndarray.tolist, ds.X.nonzero()))) == liked


@pytest.mark.slow
@needs_1m
def test_movielens1m_fast_and_verified():
    t0 = time.perf_counter()
    ds = load("movielens1m")
    seconds = time.perf_counter() - t0
    assert seconds < 5.0, f"loading MovieLens 1M took {seconds:.1f} s"
    assert ds.shape == (6040, 3706)
    _canonical_binary(ds.X)
    assert ds.n_ones == 575_281
    assert ds.density == pytest.approx(575_281 / (6040 * 3706)) and round(ds.density, 3) == 0.026
    assert fingerprint(ds.X) == FP_1M
    assert np.array_equal(ds.row_labels, np.arange(1, 6041))
    assert np.array_equal(ds.col_labels, np.arange(1, 3707))
    assert "ratings.csv.gz" in ds.source and "harper2015movielens" in ds.source


@pytest.mark.slow
@needs_1m
def test_movielens1m_from_ratings_dat_format(tmp_path):
    """A ratings.dat in the GroupLens format (UserID::MovieID::Rating::Timestamp) is read, is
    preferred over ratings.csv.gz, and gives the identical matrix."""
    body = gzip.decompress(ML1M_CSV.read_bytes()).split(b"\n", 1)[1]
    table = np.fromstring(body.replace(b",", b" "), dtype=np.int64, sep=" ").reshape(-1, 3)
    lines = [f"{u}::{i}::{r}::978300760" for u, i, r in table.tolist()]
    (tmp_path / "ml-1m").mkdir()
    (tmp_path / "ml-1m" / "ratings.dat").write_text("\n".join(lines) + "\n")
    shutil.copy(ML1M_CSV, tmp_path / "ml-1m" / "ratings.csv.gz")
    t0 = time.perf_counter()
    ds = load("movielens1m", data_dir=tmp_path)
    assert time.perf_counter() - t0 < 5.0
    assert "ratings.dat" in ds.source and "ratings.csv.gz" not in ds.source
    assert ds.shape == (6040, 3706) and ds.n_ones == 575_281 and fingerprint(ds.X) == FP_1M


@pytest.mark.slow
@needs_1m
@needs_1m_half
def test_movielens1m_original_first_half(tmp_path):
    """The first 487,650 original lines (users 1-2999): the loader rejects them as incomplete,
    and their matrix equals the CSV copy's rows 1-2999 on the movies those users rated."""
    (tmp_path / "ml-1m").mkdir()
    half = tmp_path / "ml-1m" / "ratings.dat"
    half.write_bytes(gzip.decompress(ML1M_HALF.read_bytes()))
    with pytest.raises(ChecksumError) as err:
        load("movielens1m", data_dir=tmp_path)
    msg = str(err.value)
    assert "expected 6040 x 3706 with 575,281 ones" in msg and FP_1M in msg
    assert "got 2999 x" in msg and URL_1M in msg and str(half) in msg
    t_half = D._movielens_triples(half, "::", 4, None)
    assert t_half.shape == (487_650, 3)
    full = load("movielens1m").X
    users, r = np.unique(t_half[:, 0], return_inverse=True)
    movies, c = np.unique(t_half[:, 1], return_inverse=True)
    like = t_half[:, 2] > 3
    X_half = D._binary_csr(r[like], c[like], (users.size, movies.size))
    t_csv = D._movielens_triples(ML1M_CSV, ",", 3, "user_id,item_index,rating")
    rated = np.unique(t_csv[t_csv[:, 0] <= 2999, 1])        # item_index of movies rated by 1-2999
    assert users.size == 2999 and rated.size == movies.size == 3615
    assert (full[:2999][:, rated - 1] != X_half).nnz == 0


# ---------------------------------------------------------------------------------------------
# MovieLens: error paths on small files written to tmp_path
# ---------------------------------------------------------------------------------------------
def test_missing_movielens_names_file_url_and_env(tmp_path, monkeypatch):
    monkeypatch.delenv("EPM_DATA_DIR", raising=False)
    with pytest.raises(DataNotFoundError) as err:
        load("movielens100k", data_dir=tmp_path)
    e = err.value
    assert isinstance(e, FileNotFoundError) and isinstance(e, ValueError)
    msg = str(e)
    assert str(tmp_path / "ml-100k" / "u.data") in msg and URL_100K in msg
    assert "EPM_DATA_DIR" in msg and "given as data_dir" in msg
    with pytest.raises(DataNotFoundError) as err:
        load("movielens1m", data_dir=tmp_path)
    msg = str(err.value)
    assert str(tmp_path / "ml-1m" / "ratings.dat") in msg
    assert str(tmp_path / "ml-1m" / "ratings.csv.gz") in msg and URL_1M in msg


def test_data_dir_resolution(tmp_path, monkeypatch):
    env_dir, arg_dir = tmp_path / "env", tmp_path / "arg"
    monkeypatch.setenv("EPM_DATA_DIR", str(env_dir))
    with pytest.raises(DataNotFoundError, match="EPM_DATA_DIR environment variable") as err:
        load("movielens100k")
    assert str(env_dir / "ml-100k" / "u.data") in str(err.value)
    with pytest.raises(DataNotFoundError) as err:                # the argument wins
        load("movielens100k", data_dir=arg_dir)
    assert str(arg_dir / "ml-100k" / "u.data") in str(err.value)
    monkeypatch.delenv("EPM_DATA_DIR")
    assert D._data_dir(None)[0] == D.REPO_ROOT / "data"


def _write_u_data(tmp_path, text):
    (tmp_path / "ml-100k").mkdir(exist_ok=True)
    path = tmp_path / "ml-100k" / "u.data"
    path.write_text(text)
    return path


def test_corrupted_movielens_checksum_message(tmp_path):
    path = _write_u_data(tmp_path, "1\t1\t5\t881250949\n1\t2\t3\t881250949\n2\t1\t4\t881250950\n")
    with pytest.raises(ChecksumError) as err:
        load("movielens100k", data_dir=tmp_path)
    msg = str(err.value)
    assert str(path) in msg and FP_100K in msg and URL_100K in msg
    assert "expected 943 x 1682 with 55,375 ones" in msg and "got 2 x 2 with 2 ones" in msg
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize("text, line, needle", [
    ("1\t1\t5\t8\n1\t2\t3\n", 2, "expected 4 fields separated by '\\t', found 3"),
    ("1\t1\t5\t8\n1\tx\t3\t8\n", 2, "movie id 'x' is not an integer"),
    ("1\t1\t5\t8\n\n1\t2\t4.5\t8\n", 3, "rating '4.5' is not an integer"),
    ("1\t1\t5\t8\n2\t2\t\t8\n", 2, "empty field 3"),
    ("1\t1\t5\t8\t9\n", 1, "expected 4 fields"),
    ("1\t1\t5\t8\n1\t2\t3\t\n", 2, "empty field 4"),
])
def test_malformed_movielens_rows(tmp_path, text, line, needle):
    path = _write_u_data(tmp_path, text)
    with pytest.raises(DataError) as err:
        load("movielens100k", data_dir=tmp_path)
    assert f"{path}, line {line}:" in str(err.value) and needle in str(err.value)


def test_malformed_movielens_csv_and_gzip(tmp_path):
    (tmp_path / "ml-1m").mkdir()
    path = tmp_path / "ml-1m" / "ratings.csv.gz"
    path.write_bytes(gzip.compress(b"user,item,rating\n1,1,5\n"))
    with pytest.raises(DataError, match="line 1: expected the header 'user_id,item_index,rating'"):
        load("movielens1m", data_dir=tmp_path)
    path.write_bytes(gzip.compress(b"user_id,item_index,rating\n1,1,5\n1,2\n"))
    with pytest.raises(DataError, match=r"line 3: expected 3 fields separated by ','"):
        load("movielens1m", data_dir=tmp_path)
    path.write_bytes(b"not gzip at all")
    with pytest.raises(DataError, match="cannot decompress"):
        load("movielens1m", data_dir=tmp_path)


def test_unknown_name_and_option():
    with pytest.raises(DataError) as err:
        load("movielens10m")
    for name in ("toy90", "enron09", "movielens100k", "movielens1m", "load_file"):
        assert name in str(err.value)
    assert isinstance(err.value, ValueError)
    with pytest.raises(TypeError, match="unexpected option"):
        load("movielens100k", threshold=4)
    assert load("ENRON09").name == "enron09"


# ---------------------------------------------------------------------------------------------
# load_file
# ---------------------------------------------------------------------------------------------
def _random_binary(rng, shape, p, empty_row=None):
    dense = (rng.random(shape) < p).astype(np.int8)
    if empty_row is not None:
        dense[empty_row] = 0
    return sp.csr_matrix(dense)


@pytest.mark.parametrize("sep, suffix", [(",", ".csv"), ("\t", ".tsv"), (" ", ".txt"), (";", ".txt"),
                                         ("::", ".dat")])
def test_load_file_round_trip_with_shape(tmp_path, sep, suffix):
    rng = np.random.default_rng(1)
    X = _random_binary(rng, (30, 20), 0.1, empty_row=3)   # empty rows are kept with shape=
    rows, cols = X.nonzero()
    path = tmp_path / f"edges{suffix}"
    path.write_text("".join(f"{i + 1}{sep}{j + 1}\n" for i, j in zip(rows, cols)))
    ds = load_file(path, shape=(30, 20), one_based=True)
    _canonical_binary(ds.X)
    assert (ds.X != X).nnz == 0
    assert np.array_equal(ds.row_labels, np.arange(1, 31))
    ds0 = load_file(path)                          # without shape: distinct ids, relabelled
    assert ds0.shape == (np.unique(rows).size, np.unique(cols).size)
    assert np.array_equal(ds0.row_labels, np.unique(rows) + 1)
    assert (ds0.X != X[np.unique(rows)][:, np.unique(cols)]).nnz == 0


def test_load_file_threshold_header_strings(tmp_path):
    path = tmp_path / "ratings.csv"
    path.write_text("user,movie,stars\nbob,Up,4\nalice,Up,2\nalice,Heat,5\ncarol,Heat,3\n"
                    "bob,Up,1\n")
    ds = load_file(path, threshold=3)
    assert list(ds.row_labels) == ["alice", "bob", "carol"] and list(ds.col_labels) == ["Heat", "Up"]
    assert ds.X.toarray().tolist() == [[1, 0], [0, 1], [0, 0]]    # bob/Up: 4 > 3 on one line
    assert "value > 3" in ds.description and "header skipped" in ds.description
    assert "1 repeated pairs merged" in ds.description
    assert load_file(path).X.toarray().tolist() == [[1, 1], [0, 1], [1, 0]]   # value != 0
    assert load_file(path, threshold=4.5).n_ones == 1
    assert hashlib.sha256(path.read_bytes()).hexdigest() in load_file(path).source


def test_load_file_integer_ids_sorted_numerically_and_square(tmp_path):
    path = tmp_path / "graph.tsv"
    path.write_text("# a directed graph\n10\t2\n2\t10\n10\t7\n")
    ds = load_file(path)
    assert list(ds.row_labels) == [2, 10] and list(ds.col_labels) == [2, 7, 10]
    sq = load_file(path, square=True)
    assert list(sq.row_labels) == [2, 7, 10] == list(sq.col_labels)
    assert sq.X.toarray().tolist() == [[0, 0, 1], [0, 0, 0], [1, 1, 0]]
    assert load_file(path, shape=(11, 11), square=True).X[10, 7] == 1


def test_load_file_gzip_and_whitespace(tmp_path):
    path = tmp_path / "pairs.txt.gz"
    path.write_bytes(gzip.compress(b"% comment\n1   2  0.5\n\n2 1 -1\r\n3 3 0\n"))
    ds = load_file(path, threshold=0)
    assert ds.shape == (3, 3) and ds.X.toarray().tolist() == [[0, 1, 0], [0, 0, 0], [0, 0, 0]]
    assert load_file(path).n_ones == 2


@pytest.mark.parametrize("field", ["pattern", "integer", "real"])
def test_load_file_matrix_market_round_trip(tmp_path, field):
    rng = np.random.default_rng(2)
    X = _random_binary(rng, (12, 17), 0.2)
    M = sp.coo_matrix(X.multiply(1.0 + rng.integers(0, 5, X.shape)))   # values 1..5 at the ones
    path = tmp_path / "m.mtx"
    scipy.io.mmwrite(path, M, field=field)
    ds = load_file(path)
    _canonical_binary(ds.X)
    assert ds.shape == (12, 17) and (ds.X != X).nnz == 0
    assert np.array_equal(ds.col_labels, np.arange(1, 18))
    if field != "pattern":
        assert (load_file(path, threshold=2).X != sp.csr_matrix((M.toarray() > 2).astype(np.int8))).nnz == 0
    else:
        with pytest.raises(ValueError, match="pattern"):
            load_file(path, threshold=2)


def test_load_file_matrix_market_dense_and_symmetric(tmp_path):
    dense = np.array([[0.0, 2.5], [-1.0, 0.0]])
    scipy.io.mmwrite(tmp_path / "d.mtx", dense)
    assert load_file(tmp_path / "d.mtx").X.toarray().tolist() == [[0, 1], [1, 0]]
    assert load_file(tmp_path / "d.mtx", threshold=-2).n_ones == 4      # zeros are listed too
    sym = sp.coo_matrix(np.array([[0, 3, 0], [3, 0, 0], [0, 0, 1]]))
    scipy.io.mmwrite(tmp_path / "s.mtx", sym, symmetry="symmetric")
    assert load_file(tmp_path / "s.mtx").X.toarray().tolist() == [[0, 1, 0], [1, 0, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match="1-based"):
        load_file(tmp_path / "s.mtx", one_based=False)


@pytest.mark.parametrize("text, kwargs, exc, needle", [
    ("1,2\n3\n", {}, DataError, "line 2: expected 2 fields separated by ','"),
    ("1,2,3\n1,2,a\n", {}, DataError, "line 2: value 'a' is not a number"),
    ("1,2,3\n1,,3\n", {}, DataError, "line 2: empty field 2"),
    ("1,2,3,4\n", {}, DataError, "line 1: expected 2 or 3 fields"),
    ("1,2\n2,1\n", {"threshold": 0}, ValueError, "no value column"),
    ("a,b\nc,d\n", {}, DataError, "pass header=True or header=False"),
    ("1,2\n5,1\n", {"shape": (3, 3), "one_based": True}, DataError, "row id 5 is outside 1..3"),
    ("x,2\n", {"shape": (3, 3), "header": False}, DataError, "ids must be integers"),
    ("# only a comment\n", {}, DataError, "no data lines"),
    ("1,2,3\n1,2,\n", {}, DataError, "line 2: empty field 3"),
    ("1,2,3\n1,2\n", {}, DataError, "line 2: expected 3 fields separated by ','"),
])
def test_load_file_errors(tmp_path, text, kwargs, exc, needle):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(exc) as err:
        load_file(path, **kwargs)
    assert needle in str(err.value)


def test_load_file_string_ids_with_explicit_header(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("a,b\nc,d\n")
    assert load_file(path, header=False).shape == (2, 2)
    assert load_file(path, header=True).shape == (1, 1)


def test_load_file_missing_and_bad_mtx(tmp_path):
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_file(tmp_path / "nothing.csv")
    (tmp_path / "bad.mtx").write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 x 3\n")
    with pytest.raises(DataError, match="not a valid Matrix Market file"):
        load_file(tmp_path / "bad.mtx")


# ---------------------------------------------------------------------------------------------
# load_file: hostile input (byte-order marks, comments, stray tokens, NaN and infinite values)
# ---------------------------------------------------------------------------------------------
def _ones(ds):
    """The ones of a Dataset as a set of (row label, column label) pairs."""
    rows, cols = ds.X.nonzero()
    return {(ds.row_labels[i].item(), ds.col_labels[j].item()) for i, j in zip(rows, cols)}


@pytest.mark.parametrize("suffix, text", [
    (".csv", "1,2\n3,4\n"),
    (".csv", "1,2,1\n3,4,1\n"),
    (".txt", "1 2\n3 4\n"),
    (".tsv", "# exported by a spreadsheet\n1\t2\n3\t4\n"),
    (".csv", "source,target\n1,2\n3,4\n"),
])
def test_load_file_byte_order_mark_is_stripped(tmp_path, suffix, text):
    """A UTF-8 byte-order mark (as spreadsheets write) is not part of the first line: the
    edge on it is kept, its id stays an integer, a comment after it stays a comment."""
    plain, bom = tmp_path / f"plain{suffix}", tmp_path / f"bom{suffix}"
    plain.write_text(text)
    bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    ds, ref = load_file(bom), load_file(plain)
    assert _ones(ds) == _ones(ref) == {(1, 2), (3, 4)}
    assert ds.row_labels.dtype.kind == "i" and ds.col_labels.dtype.kind == "i"
    assert ds.description.replace("bom", "plain") == ref.description
    assert hashlib.sha256(bom.read_bytes()).hexdigest() in ds.source     # the file as stored
    gz = tmp_path / f"bom{suffix}.gz"
    gz.write_bytes(gzip.compress(bom.read_bytes()))
    assert _ones(load_file(gz)) == {(1, 2), (3, 4)}
    utf16 = tmp_path / f"utf16{suffix}"
    utf16.write_text(text, encoding="utf-16")                            # UTF-16 with its BOM
    assert _ones(load_file(utf16)) == {(1, 2), (3, 4)}


@pytest.mark.parametrize("text, line, needle", [
    ("1,2,x\n3,4,1\n", 1, "value 'x' is not a number"),
    ("1,2,NA\n3,4,1\n", 1, "value 'NA' is not a number"),
    ("1,2,1 # the first edge\n3,4,1\n", 1, "value '1 # the first edge' is not a number"),
    ("1 2 # the first edge\n3 4\n", 1,
     "expected 2 or 3 fields (row, column[, value]) separated by whitespace, found 6"),
    ("1,2x\n3,4\n", 1, "'2x'"),
    ("1,x\n3,4\n", 1, "'x'"),
])
def test_load_file_first_data_line_with_a_stray_token_is_not_a_header(tmp_path, text, line, needle):
    """A first line holding numbers and a stray token (a word, a trailing comment) is not
    silently skipped as a header: it is an error naming the file, the line and the token."""
    path = tmp_path / "edges.txt"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        load_file(path)
    assert f"{path}, line {line}:" in str(err.value) and needle in str(err.value)


def test_load_file_stray_token_on_line_one_header_option_decides(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("1,2x\n3,4\n")
    with pytest.raises(DataError, match="pass header=True or header=False"):
        load_file(path)
    assert _ones(load_file(path, header=False)) == {(1, "2x"), (3, "4")}   # ids read as strings
    assert _ones(load_file(path, header=True)) == {(3, 4)}


def test_load_file_comment_lines_anywhere_and_real_headers(tmp_path):
    path = tmp_path / "edges.csv"
    path.write_text("% exported\n1,2\n# a comment\n  # indented comment\n\n3,4\n%% end\n")
    ds = load_file(path)
    assert _ones(ds) == {(1, 2), (3, 4)} and "header" not in ds.description
    for text in ("src,dst\n1,2\n3,4\n", "src,dst,weight\n1,2,1\n3,4,5\n", "# c\nsrc,dst\n1,2\n3,4\n"):
        path.write_text(text)
        ds = load_file(path)
        assert _ones(ds) == {(1, 2), (3, 4)} and "header skipped" in ds.description


@pytest.mark.parametrize("text, kwargs, line, needle", [
    ("1,2,1\n3,4,nan\n", {}, 2, "value 'nan' is not a number (NaN)"),
    ("1,2,NaN\n3,4,1\n", {}, 1, "value 'NaN' is not a number (NaN)"),
    ("1,2,1\n3,4,NaN\n", {"threshold": 0}, 2, "value 'NaN' is not a number (NaN)"),
    ("1,2,1\n3,4,inf\n", {}, 2, "value 'inf' is infinite"),
    ("1 2 1\n3 4 -Infinity\n", {"threshold": 0}, 2, "value '-Infinity' is infinite"),
    ("1;2;1\n3;4;1e999\n", {}, 2, "value '1e999' is infinite"),
    ("1,2\n3,nan\n", {}, 2, "column id 'nan' is not a number (NaN)"),
    ("1,2\n-inf,4\n", {}, 2, "row id '-inf' is infinite"),
])
def test_load_file_nan_and_infinite_values_are_errors(tmp_path, text, kwargs, line, needle):
    """NaN is not a one (nor, with a threshold, a zero), nor a label; infinite values neither."""
    path = tmp_path / "data.txt"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        load_file(path, **kwargs)
    assert f"{path}, line {line}: {needle}" in str(err.value)


def test_load_file_nan_deep_in_a_large_file_names_its_line(tmp_path):
    rng = np.random.default_rng(5)
    n = 50_000
    lines = [f"{i},{j},{v}" for i, j, v in zip(rng.integers(0, 500, n).tolist(),
                                                rng.integers(0, 300, n).tolist(),
                                                rng.integers(0, 2, n).tolist())]
    lines[31_415] = "7,8,nan"
    path = tmp_path / "big.csv.gz"
    path.write_bytes(gzip.compress(("src,dst,x\n" + "\n".join(lines) + "\n").encode()))
    with pytest.raises(DataError) as err:
        load_file(path)
    assert f"{path}, line 31417: value 'nan' is not a number (NaN)" in str(err.value)


@pytest.mark.parametrize("text, line, needle", [
    ("%%MatrixMarket matrix coordinate real general\n% c\n2 2 2\n1 1 1.0\n2 2 nan\n", 5,
     "value 'nan' is not a number (NaN)"),
    ("%%MatrixMarket matrix array real general\n2 1\n1\n-inf\n", 4, "value '-inf' is infinite"),
])
def test_load_file_matrix_market_nan_is_an_error(tmp_path, text, line, needle):
    path = tmp_path / "m.mtx"
    path.write_text(text)
    with pytest.raises(DataError) as err:
        load_file(path)
    assert f"{path}, line {line}: {needle}" in str(err.value)


@pytest.mark.parametrize("body, kwargs", [
    (b'"alice","Up",4\r\nbob,"Heat, the film",5\r\n\r\ncarol,Up,1\r\n \t\r\n# c#\nal#ce,Up,2\n', {}),
    (b"10 -3 1.5\n  7\t2 0\n\n% c\n-3 10 2\n", {}),
    (b"1.0,2,1\n1e1,3,0\n2,+4,1\n007,2,1\n", {"threshold": 0}),
    (b"caf\xe9,1,1\nna\xefve,2,1\n", {}),
    (b"1::2::5\n3::4::1\n", {"square": True}),
    (b"99999999999999999999,1\n2,1\n", {}),
    (b"a,1\nb,2.5\n", {"header": False}),
    (b"1,2,1\n3,4,0\n", {"shape": (5, 5), "one_based": True}),
])
def test_load_file_table_parser_agrees_with_line_parser(tmp_path, monkeypatch, body, kwargs):
    """The table parser (pandas) and the line-by-line parser give the same Dataset."""
    path = tmp_path / "edges.dat"
    path.write_bytes(body)
    fast = load_file(path, **kwargs)
    monkeypatch.setattr("epm_lib.edge_files._table_parse", lambda *args: None)  # load_file looks it up there
    slow = load_file(path, **kwargs)
    assert (fast.X != slow.X).nnz == 0 and fast.description == slow.description
    assert fast.row_labels.tolist() == slow.row_labels.tolist()
    assert fast.col_labels.tolist() == slow.col_labels.tolist()
    assert fast.row_labels.dtype.kind == slow.row_labels.dtype.kind


@pytest.mark.slow
def test_load_file_large_triplet_file_is_fast(tmp_path):
    rng = np.random.default_rng(6)
    n = 400_000
    table = np.column_stack([rng.integers(1, 20_001, n), rng.integers(1, 5_001, n),
                             rng.integers(1, 6, n)])
    path = tmp_path / "ratings.csv"
    path.write_text("user,item,rating\n" + "\n".join(f"{u},{i},{r}" for u, i, r in table.tolist())
                    + "\n")
    t0 = time.perf_counter()
    ds = load_file(path, threshold=3)
    seconds = time.perf_counter() - t0
    assert seconds < 4.0, f"loading {n} lines took {seconds:.1f} s"
    users, r = np.unique(table[:, 0], return_inverse=True)
    items, c = np.unique(table[:, 1], return_inverse=True)
    like = table[:, 2] > 3
    assert fingerprint(ds.X) == fingerprint(D._binary_csr(r[like], c[like], (users.size, items.size)))


# ---------------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, sep, ncols", [
    (b"1 2,3\n4,5\n", ",", 2),            # a field holding two numbers
    (b"1 2,3,4\n5,,6\n", ",", 3),         # one extra, one missing: totals balance
    (b"1,2\n\n3,4\n", ",", 2),            # blank line
    (b"1,2x\n", ",", 2),                  # not a number
    (b"1 2 3\n4 5\n", None, 3),
    (b"1::2:3\n", "::", 2),
])
def test_fast_parser_refuses_irregular_input(text, sep, ncols):
    assert D._fast_numeric(text, sep, ncols, np.float64) is None


def test_fast_parser_agrees_with_line_parser():
    rng = np.random.default_rng(3)
    table = rng.integers(-50, 10**9, size=(500, 4))
    for sep in (",", "\t", "::", None):
        s = " " if sep is None else sep
        text = "\n".join(s.join(map(str, row)) for row in table) + "\r\n\n"
        fast = D._fast_numeric(text.encode(), sep, 4, np.int64)
        assert np.array_equal(fast, table)
        rows, _ = D._split_lines(text, sep, "x", 1, (4,))
        assert np.array_equal(np.array(rows, dtype=np.int64), table)


def test_fingerprint_and_binary_csr():
    rng = np.random.default_rng(4)
    r, c = rng.integers(0, 40, 300), rng.integers(0, 25, 300)            # with duplicates
    X = D._binary_csr(r, c, (40, 25))
    _canonical_binary(X)
    dense = np.zeros((40, 25), dtype=np.int8)
    dense[r, c] = 1
    assert np.array_equal(X.toarray(), dense)
    assert fingerprint(X) == _naive_fingerprint(X) == fingerprint(sp.coo_matrix(dense))
    labels, index = D._unique_inverse(np.array([7, 3, 7, 10**12]))
    assert labels.tolist() == [3, 7, 10**12] and index.tolist() == [1, 0, 1, 2]


def test_dataset_invariants():
    ds = load("toy90")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ds.name = "other"
    with pytest.raises(ValueError):
        ds.row_labels[0] = 5                                            # read-only labels
    assert repr(ds) == f"Dataset(name='toy90', shape=90x90, ones={ds.n_ones}, density={ds.density:.4f})"
    bad = sp.csr_matrix(np.array([[0, 2]], dtype=np.int8))
    with pytest.raises(ValueError, match="only ones"):
        Dataset("x", bad, np.arange(1), np.arange(2), "", "")
    with pytest.raises(ValueError, match="int8"):
        Dataset("x", sp.csr_matrix(np.eye(2)), np.arange(2), np.arange(2), "", "")
    with pytest.raises(ValueError, match="length 2"):
        Dataset("x", sp.csr_matrix(np.eye(2, dtype=np.int8)), np.arange(3), np.arange(2), "", "")
    with pytest.raises(TypeError):
        Dataset("x", np.eye(2, dtype=np.int8), np.arange(2), np.arange(2), "", "")


def test_networkx_examples_are_the_graphs_as_binary_matrices():
    """The three networks of chapters 30 and 30b: shapes, links, symmetry, int8 ones."""
    import networkx as nx
    from epm_lib.example_networks import binary, networkx_examples

    nets = networkx_examples()
    assert list(nets) == ["Davis", "karate", "Les Mis"]
    expect = {"Davis": ((18, 14), 89, False), "karate": ((34, 34), 78, True), "Les Mis": ((77, 77), 254, True)}
    for name, (X, undirected) in nets.items():
        shape, links, und = expect[name]
        assert X.shape == shape and undirected is und and X.dtype == np.int8 and set(X.data) == {1}
        assert (X.nnz // 2 if undirected else X.nnz) == links
        if undirected:
            assert (X != X.T).nnz == 0 and X.diagonal().sum() == 0
    karate = nx.karate_club_graph()
    assert all(nets["karate"][0][i, j] == 1 for i, j in karate.edges())        # row i is node i
    assert (binary(np.array([[0.0, 2.5], [-1.0, 0.0]])).toarray() == [[0, 1], [0, 0]]).all()


def test_planted_partition_is_chapter_29s_network():
    """The planted partition of chapters 29/29b and bench_starts: 120 nodes, 562 links, 12 groups of 10,
    symmetric, no self-loops, shuffled (no group a block of consecutive rows)."""
    from epm_lib.example_networks import planted_partition

    A, blocks = planted_partition()
    assert A.shape == (120, 120) and A.nnz // 2 == 562 and A.dtype == np.int8
    assert (A != A.T).nnz == 0 and A.diagonal().sum() == 0
    assert np.bincount(blocks).tolist() == [10] * 12
    assert np.any(np.diff(blocks[:10]) != 0)
    A2, b2 = planted_partition()
    assert (A != A2).nnz == 0 and (blocks == b2).all()                  # deterministic
