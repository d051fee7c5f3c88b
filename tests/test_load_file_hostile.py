"""load_file on bad input (issue 19): a clear DataError naming the file and the problem, never a
silent wrong answer or a raw traceback. Bad options (threshold, sep, shape, one_based, header,
square, name), header-only files, binary files, control characters and carriage returns inside
a line; and that the good variants of each still load."""
from __future__ import annotations

import gzip
import zipfile
from fractions import Fraction

import numpy as np
import pytest
import scipy.io

from epm_lib.datasets import DataError, load_file

MTX = "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 5\n3 1 1\n"


def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


def _refused(path, needles, **kwargs):
    """load_file(path, **kwargs) raises a DataError whose message names the file and holds
    every needle; returns the message."""
    with pytest.raises(DataError) as err:
        load_file(path, **kwargs)
    message = str(err.value)
    assert str(path) in message, message
    for needle in needles:
        assert needle in message, message
    return message


# ---------------------------------------------------------------------------------------------
# 1. threshold: a finite real number (or None)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("suffix, content", [(".csv", "1,2,5\n3,1,1\n"), (".mtx", MTX)])
@pytest.mark.parametrize("threshold", [float("nan"), np.nan, float("inf"), -float("inf"),
                                       np.float32("nan"), True, False, np.True_, "3", b"3", [3],
                                       np.array([3.0]), 10**400])
def test_threshold_must_be_a_finite_real_number(tmp_path, suffix, content, threshold):
    path = _write(tmp_path, "ratings" + suffix, content)
    _refused(path, ["threshold=", repr(threshold)[:10], "finite real number"], threshold=threshold)


@pytest.mark.parametrize("threshold, ones, shown", [
    (2, 1, "value > 2;"), (np.int64(2), 1, "value > 2;"), (np.float32(2.5), 1, "value > 2.5;"),
    (Fraction(1, 2), 2, "value > 0.5;"), (-1e300, 2, "value > -1e+300;"), (0.5, 2, "value > 0.5;")])
def test_threshold_accepts_real_numbers(tmp_path, threshold, ones, shown):
    for suffix, content in ((".csv", "1,2,5\n3,1,1\n"), (".mtx", MTX)):
        ds = load_file(_write(tmp_path, "ratings" + suffix, content), threshold=threshold)
        assert ds.n_ones == ones
    assert shown in ds.description


def test_threshold_without_values_is_a_data_error(tmp_path):
    _refused(_write(tmp_path, "edges.csv", "1,2\n3,4\n"), ["no value column"], threshold=0)
    pattern = _write(tmp_path, "p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n")
    _refused(pattern, ["pattern"], threshold=0)


# ---------------------------------------------------------------------------------------------
# 2. a header and no data rows
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, kwargs", [
    ("src,dst,weight\n", {}),
    ("src,dst,weight\n# nothing yet\n\n", {}),
    ("src\tdst\n", {"header": True}),
    ("1,2\n", {"header": True}),
    ("\ufeffuser,item,rating\r\n", {}),
])
def test_header_only_file_has_no_data_rows(tmp_path, text, kwargs):
    path = _write(tmp_path, "empty.csv", text)
    _refused(path, ["has no data rows", "line 1", "header"], **kwargs)


def test_lone_two_field_line_asks_for_header_option(tmp_path):
    path = _write(tmp_path, "one.csv", "src,dst\n")
    _refused(path, ["pass header=True or header=False", "no data rows"])
    assert load_file(path, header=False).n_ones == 1                     # one edge src -> dst


# ---------------------------------------------------------------------------------------------
# 3. binary files are not text files of edges
# ---------------------------------------------------------------------------------------------
_RNG_BYTES = np.random.default_rng(19).bytes(4000)
_PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x02\x00\x00\x00" \
    + _RNG_BYTES[:600]


def _zip_bytes(tmp_path):
    archive = tmp_path / "edges.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("edges.csv", "1,2\n3,4\n" * 50)
    return archive.read_bytes()


@pytest.mark.parametrize("name, make, needle", [
    ("random.csv", lambda tmp: _RNG_BYTES, "binary data"),
    ("random.txt", lambda tmp: _RNG_BYTES[:300], "binary data"),
    ("random.bin", lambda tmp: _RNG_BYTES, "binary data"),
    ("random.csv.gz", lambda tmp: gzip.compress(_RNG_BYTES), "binary data"),
    ("picture.csv", lambda tmp: _PNG, "PNG image"),
    ("edges.csv", lambda tmp: gzip.compress(b"1,2\n3,4\n"), "gzip-compressed"),
    ("edges.tsv", lambda tmp: _zip_bytes(tmp), "ZIP archive"),
    ("utf16.csv", lambda tmp: "1,2\n3,4\n".encode("utf-16-le") * 20, "UTF-16"),
    ("random.mtx", lambda tmp: _RNG_BYTES, "binary data"),
    ("m.mtx", lambda tmp: gzip.compress(MTX.encode()), "gzip-compressed"),
])
def test_binary_file_is_not_a_text_file_of_edges(tmp_path, name, make, needle):
    path = _write(tmp_path, name, make(tmp_path))
    _refused(path, ["not a text file of edges", needle])


def test_gzip_file_without_its_suffix_says_how_to_name_it(tmp_path):
    path = _write(tmp_path, "edges.csv", gzip.compress(b"1,2\n3,4\n"))
    _refused(path, ["edges.csv.gz"])
    renamed = _write(tmp_path, "edges.csv.gz", gzip.compress(b"1,2\n3,4\n"))
    assert load_file(renamed).n_ones == 2


# ---------------------------------------------------------------------------------------------
# 4. control characters (a NUL byte in an id, ...) are refused with their line
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, text, kwargs, line", [
    ("nul.csv", b"1,2\na\x00b,4\n", {}, 2),
    ("nul.csv", b"a,b\nc\x00,d\n", {"header": False}, 2),
    ("nul.txt", b"1 2\n3\x00 4\n", {}, 2),
    ("nul.csv", b"1,2,1\n3,4,1\x00\n", {}, 2),
    ("nul.csv", b"# exported\n1,2\n3,4\n5\x00,6\n", {}, 4),
    ("nul.csv", b"1,2\n3,4\n" + b"\x00" * 3, {}, 3),
    ("unit.txt", b"1 2\n3\x1f4\n", {}, 2),                    # str.split() took it for a space
    ("esc.csv", b"1,2\n\x1b[0m3,4\n", {}, 2),
    ("nul.mtx", b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\x00\n", {}, 3),
])
def test_control_character_in_a_line_is_refused_with_its_line(tmp_path, monkeypatch, name, text,
                                                              kwargs, line):
    def never(*args, **kw):                 # scipy's Matrix Market reader crashes on a NUL byte
        raise AssertionError("a file with control characters reached scipy.io")

    monkeypatch.setattr(scipy.io, "mmread", never)
    monkeypatch.setattr(scipy.io, "mminfo", never)
    path = _write(tmp_path, name, text)
    _refused(path, [f"{path}, line {line}: control character", "printable"], **kwargs)


def test_nul_byte_is_named(tmp_path):
    path = _write(tmp_path, "nul.csv", b"1,2\na\x00b,4\n")
    _refused(path, ["line 2", "NUL byte", "'a\\x00b,4'"])


def test_control_character_as_the_separator_is_not_inside_an_id(tmp_path):
    path = _write(tmp_path, "edges.dat", b"1\x002\n3\x004\n")
    ds = load_file(path, sep="\x00")
    assert ds.row_labels.tolist() == [1, 3] and ds.col_labels.tolist() == [2, 4]


# ---------------------------------------------------------------------------------------------
# carriage returns inside a line (classic Mac line ends): not one line of 3 fields
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, text, line", [
    ("mac.csv", "1,2\r3,4\r", 1),                  # was read as one line: ids 1, '2\r3', value 4
    ("mac.txt", "1 2\r3 4\r5 6\r", 1),
    ("cr.csv", "1,2\na\rb,4\n", 2),
    ("mac.mtx", MTX.replace("\n", "\r"), 1),
])
def test_carriage_return_inside_a_line_is_refused(tmp_path, name, text, line):
    path = _write(tmp_path, name, text)
    _refused(path, [f"{path}, line {line}: a carriage return", "\\r\\n"])


@pytest.mark.parametrize("text", ["1,2\r\n3,4\r\n", "1,2\r\r\n3,4\r\n", "1,2\n3,4\r", "1,2\r\n3,4"])
def test_crlf_line_ends_still_load(tmp_path, text):
    ds = load_file(_write(tmp_path, "edges.csv", text))
    assert ds.row_labels.tolist() == [1, 3] and ds.col_labels.tolist() == [2, 4]


# ---------------------------------------------------------------------------------------------
# 5. sep: a non-empty string without line breaks, or None
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sep", ["", "\n", "\r\n", ",\n", b",", 1, [","]])
def test_sep_must_be_a_non_empty_string(tmp_path, sep):
    path = _write(tmp_path, "edges.csv", "1,2\n3,4\n")
    _refused(path, ["sep=", repr(sep), "non-empty string"], sep=sep)


@pytest.mark.parametrize("sep, text", [(None, "1,2\n3,4\n"), (",", "1,2\n3,4\n"), (" ", "1  2\n3 4\n"),
                                       ("\t", "1\t2\n3\t4\n"), ("::", "1::2\n3::4\n"),
                                       (", ", "1, 2\n3, 4\n")])
def test_sep_accepts_strings(tmp_path, sep, text):
    ds = load_file(_write(tmp_path, "edges.txt", text), sep=sep)
    assert ds.row_labels.tolist() == [1, 3] and ds.col_labels.tolist() == [2, 4]


# ---------------------------------------------------------------------------------------------
# 6. shape: two non-negative integers
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape, needle", [
    ((5.9, 5.9), "5.9"),
    ((5.0, 5.0), "5.0"),
    ((np.float64(5), 5), "5.0"),
    (np.array([5.0, 5.0]), "5.0"),
    ((True, 5), "True"),
    ((5, np.True_), "True"),
    (("5", "5"), "'5'"),
    ((float("nan"), 5), "nan"),
    ((-1, 5), "-1"),
    ((5, np.int64(-2)), "-2"),
    ((5,), "(5,)"),
    ((5, 5, 5), "(5, 5, 5)"),
    ("55", "'55'"),
    (5, "5"),
    ({5, 6}, "{5, 6}"),
])
def test_shape_must_be_two_non_negative_integers(tmp_path, shape, needle):
    path = _write(tmp_path, "edges.csv", "1,2\n3,4\n")
    _refused(path, ["shape=", needle, "two non-negative integers"], shape=shape, one_based=True)


@pytest.mark.parametrize("shape", [(5, 5), [5, 5], (np.int64(5), np.int32(5)), np.array([5, 5]),
                                   (np.uint8(5), 5)])
def test_shape_accepts_integers(tmp_path, shape):
    ds = load_file(_write(tmp_path, "edges.csv", "1,2\n3,4\n"), shape=shape, one_based=True)
    assert ds.shape == (5, 5) and type(ds.shape[0]) is int
    assert ds.X[0, 1] == 1 and ds.X[2, 3] == 1
    assert "shape (5, 5)" in ds.description


def test_square_needs_a_square_shape_data_error(tmp_path):
    path = _write(tmp_path, "edges.csv", "1,2\n3,4\n")
    _refused(path, ["square=True needs a square shape"], shape=(5, 6), square=True)


# ---------------------------------------------------------------------------------------------
# near relatives: the flags one_based, header, square and the name
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("option", ["one_based", "header", "square"])
@pytest.mark.parametrize("value", ["yes", "false", "no", 0, 1, 2, 1.0, [True]])
def test_flags_must_be_booleans(tmp_path, option, value):
    path = _write(tmp_path, "edges.csv", "1,2\n3,4\n")
    kwargs = {option: value, "shape": (5, 5)} if option == "one_based" else {option: value}
    _refused(path, [f"{option}={value!r}", "True or False"], **kwargs)


def test_square_none_is_refused(tmp_path):
    _refused(_write(tmp_path, "edges.csv", "1,2\n3,4\n"), ["square=None", "True or False"],
             square=None)


def test_flags_accept_numpy_booleans(tmp_path):
    path = _write(tmp_path, "edges.csv", "1,2\n3,4\n")
    assert load_file(path, shape=(5, 5), one_based=np.True_).X[0, 1] == 1
    assert load_file(path, shape=(5, 5), one_based=np.False_).X[1, 2] == 1
    assert load_file(path, header=np.True_).shape == (1, 1)
    assert load_file(path, header=np.False_, square=np.True_).shape == (4, 4)


def test_matrix_market_one_based_false_as_numpy_bool(tmp_path):
    path = _write(tmp_path, "m.mtx", MTX)
    for flag in (False, np.False_):
        _refused(path, ["1-based"], one_based=flag)
    assert load_file(path, one_based=np.True_).n_ones == 2


@pytest.mark.parametrize("name", ["", b"edges", 1, ["edges"]])
def test_name_must_be_a_non_empty_string(tmp_path, name):
    path = _write(tmp_path, "edges.csv", "1,2\n3,4\n")
    _refused(path, [f"name={name!r}", "non-empty string"], name=name)


# ---------------------------------------------------------------------------------------------
# a quoted field longer than Python's csv field limit
# ---------------------------------------------------------------------------------------------
def test_overlong_quoted_field_names_its_line(tmp_path):
    path = _write(tmp_path, "long.csv", "\"" + "a" * 200_000 + "\",1\n2,3\n")
    _refused(path, [f"{path}, line 1:", "field larger than field limit"])


@pytest.mark.parametrize("sep", [";", "\t", '"'])
def test_separator_absent_from_the_file_is_a_field_count_error(tmp_path, sep):
    """A separator that does not occur in the file leaves one field per line: said so, not
    asked about as a header."""
    path = _write(tmp_path, "edges.csv", "1,2\n3,4\n")
    _refused(path, [f"line 1: expected 2 or 3 fields", f"separated by {sep!r}, found 1"], sep=sep)
