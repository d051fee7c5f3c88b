"""epm_lib.book.start_benchmarks.parse_start_key: the keys of benchmarks/starts_chapter30.json read
back into named parts (chapter 29b), the inverse of start_tag; on hand-written keys and on every
stored key."""
import json
from pathlib import Path

import pytest

from epm_lib.book.start_benchmarks import (START_SEED, START_SWEEPS, StartKey, parse_start_key, start_differences,
                                           start_tag)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("key, parts", [
    ("Davis/zeros/0/EPM/default", ("Davis", "zeros", 0, "EPM", "default", START_SEED, START_SWEEPS)),
    ("Les Mis/missing/4/IDEPM/paper@2018", ("Les Mis", "missing", 4, "IDEPM", "paper", 2018, START_SWEEPS)),
    ("Davis/zeros/3/DEPM/paper~5000", ("Davis", "zeros", 3, "DEPM", "paper", START_SEED, 5000)),
    ("karate/zeros/12/EPM/default@2020~5000", ("karate", "zeros", 12, "EPM", "default", 2020, 5000)),
    ("karate/missing/1/SVD", ("karate", "missing", 1, "SVD", None, None, None)),
])
def test_parse_start_key_names_the_parts(key, parts):
    p = parse_start_key(key)
    assert isinstance(p, StartKey) and tuple(p) == parts
    assert (p.network, p.protocol, p.fold, p.model, p.start, p.seed, p.sweeps) == parts
    if p.start is not None:                       # the inverse of the key bench_starts.py writes
        assert f"{p.network}/{p.protocol}/{p.fold}/{p.model}/" + start_tag(p.start, p.seed, p.sweeps) == key


@pytest.mark.parametrize("key", ["Davis/info", "Davis/zeros/0/EPM", "Davis/zeros/x/EPM/default",
                                 "Davis/zeros/0/EPM/default@x", "Davis/zeros/0/EPM/default~", "Davis/zeros/0/EPM/@2018",
                                 "Davis/zeros/0/SVD/default", "a/b/c/d/e/f"])
def test_parse_start_key_refuses_other_keys(key):
    with pytest.raises(ValueError, match="is not a key of starts_chapter30.json"):
        parse_start_key(key)


def test_every_stored_key_parses_and_round_trips():
    ch30 = json.loads((ROOT / "benchmarks" / "starts_chapter30.json").read_text())
    keys = [parse_start_key(k) for k in ch30]
    chains = [p for p in keys if p.start is not None]
    assert len(keys) - len(chains) == sum(k.endswith("/SVD") for k in ch30)
    assert {p.start for p in chains} == {"default", "paper"} and {p.sweeps for p in chains} == {500, 5000}
    assert sorted({p.seed for p in chains if p.sweeps == START_SWEEPS}) == list(range(2017, 2029))  # chapter 29b's 12
    # start_differences reads the same keys: one cell per network, protocol and model
    assert set(start_differences(ch30, [START_SEED])) == {(p.network, p.protocol, p.model) for p in chains}
