"""Local integrity of a snapshot: what is cheap enough to check on every load, per-chunk sums
for what is served, and one error type for every way a damaged file can fail to decode.

On load (`check_on_load`): the sha256 of every file of at most SMALL_FILE_BYTES (the manifest
lists them all) and the shape of the row arrays. Other files are not hashed on load (a streamed
build's 16k-chunk segments hold ~1.4 MB of 32-256 KB columns each: hashing them all cost a cold
search ~40 ms on the big corpus): damaged columns fail their shape and range checks or decode
to a clean error, and each chunk's metadata and text are checked against `chunk_sums.npy`
when they are read, so damaged text is never served (tests/test_integrity.py fuzzes every file
with nothing hashed on load). `indexer verify` hashes everything and
checks every chunk against git (indexer/fresh/provenance.py).
"""

from __future__ import annotations

import functools
import os
import tokenize
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..digests import blake2b, sha256
from ..errors import CorruptIndexError, IndexerError

SMALL_FILE_BYTES = 32 * 1024  # manifests, extras, ranges, a small segment's columns
CHUNK_SUMS = "chunk_sums.npy"
REBUILD = "run `indexer verify` for details or `indexer build` to rebuild"
# What damaged bytes raise while decoding JSON, .npy, FAISS or UTF-8.
DECODE_ERRORS = (
    ValueError,
    KeyError,
    IndexError,
    TypeError,
    RuntimeError,
    OSError,
    EOFError,
    OverflowError,
    AttributeError,
    MemoryError,  # a damaged .npy header can claim an absurd shape
    SyntaxError,  # numpy parses a .npy header with the tokenizer and literal_eval
    tokenize.TokenError,
    zlib.error,  # a damaged block of compressed chunk texts
)


def chunk_sum(meta: bytes, text: bytes) -> int:
    """64-bit digest of one chunk's metadata line and text (stored as int64)."""
    digest = blake2b(meta, digest_size=8)
    digest.update(b"\0")
    digest.update(text)
    return int.from_bytes(digest.digest(), "little", signed=True)


def meta_sum(meta: bytes) -> int:
    """Digest of a chunk's metadata line alone: checked when a chunk is read without its text
    (search results), so that reading does not need the (compressed) text."""
    return chunk_sum(meta, b"")


def chunk_sums(meta: Any, meta_offsets: np.ndarray, texts: Any, text_offsets: np.ndarray) -> Any:
    """Digests of the rows the (absolute) offsets delimit."""
    rows = len(meta_offsets) - 1
    out = np.empty(rows, dtype=np.int64)
    for row in range(rows):
        out[row] = chunk_sum(
            bytes(meta[int(meta_offsets[row]) : int(meta_offsets[row + 1])]),
            bytes(texts[int(text_offsets[row]) : int(text_offsets[row + 1])]),
        )
    return out


def check_on_load(snapshot: Path, manifest: dict[str, Any]) -> None:
    """The cheap checks: checksums of the small files (a few ms even on big indexes)."""
    for name, info in manifest["files"].items():
        size = info.get("bytes")
        if isinstance(size, int) and size <= SMALL_FILE_BYTES:
            data = (snapshot / name).read_bytes()
            if sha256(data).hexdigest() != info.get("sha256"):
                raise CorruptIndexError(f"index file {name} fails its checksum; {REBUILD}")


def check_rows(
    rows: int, meta: Any, texts: Any, meta_offsets: np.ndarray, text_offsets: np.ndarray
) -> None:
    """Offsets that slice the chunk store must be monotonic and end where the files end."""
    for name, offsets, store in (
        ("chunk_offsets.npy", meta_offsets, meta),
        ("text_offsets.npy", text_offsets, texts),
    ):
        if (
            offsets.ndim != 1
            or len(offsets) != rows + 1
            or offsets.dtype.kind not in "iu"
            or (rows and (offsets[0] != 0 or np.any(np.diff(offsets) < 0)))
            or int(offsets[-1]) != len(store)
        ):
            raise CorruptIndexError(f"index file {name} is damaged; {REBUILD}")


def check_column(name: str, array: np.ndarray, rows: int, upper: int | None = None) -> np.ndarray:
    """A per-row array of the right length, and values below `upper` when it indexes a table."""
    if array.ndim != 1 or len(array) != rows or array.dtype.kind not in "iu":
        raise CorruptIndexError(f"index file {name} is damaged; {REBUILD}")
    if upper is not None and rows and (int(array.min()) < 0 or int(array.max()) >= upper):
        raise CorruptIndexError(f"index file {name} is damaged; {REBUILD}")
    return array


def check_chunk(
    sums: Sequence[int] | np.ndarray | None, row: int, meta: bytes, text: bytes
) -> None:
    if sums is not None and chunk_sum(meta, text) != int(sums[row]):
        raise CorruptIndexError(f"chunk {row} of the index is damaged; {REBUILD}")


F = TypeVar("F", bound=Callable[..., Any])


def corrupt_as_error(method: F) -> F:
    """Damaged artifacts fail in many ways while decoding; each becomes one clean error. A bug
    in the reader fails the same ways, so with INDEXER_DEBUG set the error is raised as it is
    (with its traceback) instead."""

    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except IndexerError:
            raise
        except DECODE_ERRORS as exc:
            if os.environ.get("INDEXER_DEBUG"):
                raise  # damage or a bug in the reader: the error as it happened, where
            raise CorruptIndexError(
                f"the index is damaged ({type(exc).__name__}); {REBUILD} "
                "(INDEXER_DEBUG=1 shows where it failed)"
            ) from exc

    return guarded  # type: ignore[return-value]
