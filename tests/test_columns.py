"""Text columns: looking values up in a sorted column (the BM25 vocabulary) one by one and in
batches gives what a bisection of the decoded list gives."""

from __future__ import annotations

import bisect
import random
from pathlib import Path

import pytest

from indexer.index.columns import BATCH_MIN, SAMPLE, Lines
from indexer.index.segment_format import write_lines


def column(tmp_path: Path, values: list[str]) -> Lines:
    path = tmp_path / "terms.txt"
    write_lines(path, values)
    return Lines(path, len(values), keep=False)


def reference(values: list[str], wanted: list[str]) -> list[int | None]:
    out: list[int | None] = []
    for value in wanted:
        j = bisect.bisect_left(values, value)
        out.append(j if j < len(values) and values[j] == value else None)
    return out


def vocabulary(rng: random.Random, n: int) -> list[str]:
    """Terms that share long prefixes, short ones, non-ASCII ones and 8-byte boundaries."""
    stems = ["function", "functional", "fun", "a", "zz", "é", "naïve", "日本", "x" * 8, "x" * 9]
    words = set(stems)
    while len(words) < n:
        words.add(rng.choice(stems) + "".join(rng.choices("abcxyz_09é", k=rng.randrange(6))))
    return sorted(words)


def probes(rng: random.Random, values: list[str], n: int) -> list[str]:
    """Values of the column, and near misses: one character less, more, or changed."""
    out = ["", "\x00", "a\x00", "\uffff", "function", "functiona", "x" * 8, "x" * 7 + "y"]
    for _ in range(n):
        value = rng.choice(values)
        edit = rng.randrange(4)
        if edit == 0:
            value = value[:-1]
        elif edit == 1:
            value += rng.choice("a_é")
        elif edit == 2:
            value = value[: rng.randrange(len(value) + 1)] + "zz"
        out.append(value)
    return out


@pytest.mark.parametrize("n", [1, 5, SAMPLE - 1, SAMPLE, SAMPLE + 1, 3000])
def test_batches_find_what_bisection_finds(tmp_path: Path, n: int) -> None:
    rng = random.Random(n)
    values = vocabulary(rng, n)
    lines = column(tmp_path, values)
    wanted = probes(rng, values, 400) + values
    assert len(wanted) >= BATCH_MIN  # the sampled search
    assert lines.find_many(wanted) == reference(values, wanted)
    assert "_samples" in vars(lines)
    # every line, the first and the last (the file's last bytes) included
    assert lines.find_many(values) == list(range(len(values)))


def test_a_few_values_are_bisected_until_the_column_is_sampled(tmp_path: Path) -> None:
    rng = random.Random(7)
    values = vocabulary(rng, 500)
    lines = column(tmp_path, values)
    few = probes(rng, values, BATCH_MIN - 10)[: BATCH_MIN - 1]
    assert lines.find_many(few) == reference(values, few)
    assert "_samples" not in vars(lines)  # a one-shot search's few terms fault in nothing more
    assert [lines.find(v) for v in few] == reference(values, few)
    many = probes(rng, values, 300)
    assert lines.find_many(many) == reference(values, many)  # samples made now
    assert lines.find_many(few) == reference(values, few)  # and used from then on


def test_an_empty_column_finds_nothing(tmp_path: Path) -> None:
    lines = column(tmp_path, [])
    assert lines.find_many(["a"] * BATCH_MIN) == [None] * BATCH_MIN
    assert lines.find("") is None


@pytest.mark.parametrize("values", [["a"], ["ab", "b"], ["é"], ["abcdefgh"]])
def test_a_file_shorter_than_one_word(tmp_path: Path, values: list[str]) -> None:
    lines = column(tmp_path, values)
    wanted = [*values, "a", "b", "", "abcdefghi", "abcdefg"] * BATCH_MIN
    assert lines.find_many(wanted) == reference(values, wanted)
