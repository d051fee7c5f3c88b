"""epm_lib.book.source_archive: the archive of the book's sources that the website offers."""
import tarfile
from pathlib import Path

import pytest

from epm_lib.book.source_archive import source_files, write_archive

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_archive_holds_the_sources_and_is_reproducible(tmp_path):
    a, b = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    n = write_archive(ROOT, a)
    write_archive(ROOT, b)
    assert a.read_bytes() == b.read_bytes()                  # same sources, same bytes
    with tarfile.open(a, "r:gz") as tar:
        names = tar.getnames()
        assert len(names) == n and all(x.startswith("epm-book/") for x in names)
        assert {"epm-book/requirements.txt", "epm-book/epm_lib/__init__.py", "epm-book/intro.ipynb",
                "epm-book/chapters/26b_verdict_converged.ipynb"} <= set(names)
        assert all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers())
    # never the environment, the build, caches or MovieLens
    bad = {"_build", ".venv", "__pycache__", "ml-100k", "ml-1m", ".chains"}
    assert not any(set(Path(x).parts) & bad for x in names)


def test_outside_a_checkout_the_listed_folders_are_archived(tmp_path):
    (tmp_path / "epm_lib").mkdir()
    (tmp_path / "epm_lib" / "__init__.py").write_text("")
    (tmp_path / "epm_lib" / "__pycache__").mkdir()
    (tmp_path / "epm_lib" / "__pycache__" / "x.pyc").write_text("")
    (tmp_path / "data" / "ml-100k").mkdir(parents=True)
    (tmp_path / "data" / "ml-100k" / "u.data").write_text("1\t2\t3\t4\n")
    (tmp_path / "requirements.txt").write_text("numpy\n")
    (tmp_path / "notes.txt").write_text("not part of the book\n")
    got = [p.relative_to(tmp_path).as_posix() for p in source_files(tmp_path)]
    assert got == ["epm_lib/__init__.py", "requirements.txt"]
