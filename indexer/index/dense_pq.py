"""Compact dense codes: 4-bit product quantization of the 8-bit codes, corpus-independent.

A chunk's 256 dimensions are cut into 64 groups of 4 (interleaved, `subspace_order`: the table's
dimensions come in PCA order, so each group takes two leading and two trailing ones and the
groups carry similar variance); each group is replaced by the nearest of 16 centroids, so a
row is 32 bytes (two 4-bit codes a byte, the low nibble for the even group: FAISS's
`ProductQuantizer` layout). The centroids ship beside the static vectors
(`artifacts/static_vectors/pq_centroids.npy`, trained offline on the distillation corpus by
scripts/train_dense_codebook.py, never on an evaluated project), so a row's compact code is a
function of its own 8-bit code alone, like the 8-bit code is of its vector: an update stays
byte-identical to a full build.

Encoding is exact integer arithmetic in float64 (weights scaled to 40-bit integers, codes
0..255), so the result does not depend on BLAS's summation order or on how rows are batched,
and it is the true nearest centroid of the decoded vector except for ties closer than ~1e-12.
Scoring a query against compact codes (`tables`) quantizes its inner products with the
centroids to integer levels exactly as FAISS's fast scan quantizes its lookup tables (0..255 a
group, one scale for all: `round_uint8_per_column`), and a row's score is the sum of its
groups' levels: an integer, the same in any order, in a numpy scan (`scores`, a table of 256
entries per byte) and in FAISS's SIMD scan of the long-lived process, which then needs no
rescoring (indexer/index/dense_view.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import numpy as np

SUB_DIMS = 4  # dimensions per group
CENTROIDS = 16  # 4-bit codes
CENTROIDS_FILE = "pq_centroids.npy"  # in the table's directory (indexer/index/vectors.py)
_WEIGHT_BITS = 40  # |weight| <= 2^40, code <= 255, 4 terms: every partial sum < 2^53 (exact)
_ROWS = 2048  # rows encoded at a time
_COUNTED_MIN = 1 << 14  # top(): scores of this many rows or more are counted (a histogram)


@cache  # asked once per query: read only, shared
def subspace_order(dim: int) -> np.ndarray:
    """The dimension order of the groups: group m holds dimensions m, D/2-1-m, D/2+m, D-1-m."""
    if dim % (2 * SUB_DIMS) or dim <= 0:
        raise ValueError(f"compact codes need a dimension divisible by 8, not {dim}")
    half = dim // 2
    order = np.array(
        [d for m in range(dim // SUB_DIMS) for d in (m, half - 1 - m, half + m, dim - 1 - m)],
        dtype=np.int64,
    )
    order.flags.writeable = False
    return order


def codebook_shape(dim: int) -> tuple[int, int, int]:
    return dim // SUB_DIMS, CENTROIDS, SUB_DIMS


def valid_codebook(centroids: np.ndarray, dim: int) -> bool:
    return (
        centroids.dtype == np.float32
        and centroids.shape == codebook_shape(dim)
        and bool(np.isfinite(centroids).all())
    )


def encode(codes: np.ndarray, ranges: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Compact codes, (dim / 8, rows) uint8 (one column per row: a scan reads each byte position
    contiguously), of 8-bit codes made with `ranges` (indexer/index/dense.py)."""
    codes = np.asarray(codes, dtype=np.uint8)
    n, dim = codes.shape
    groups = dim // SUB_DIMS
    order = subspace_order(dim)
    # A decoded value is vmin + (code + 0.5) * delta; the nearest centroid minimises
    # |c|^2 - 2 x.c = bias - sum(weight * code) per group (|x|^2 is the same for every c).
    half = np.asarray(ranges, dtype=np.float64)[order].reshape(groups, 1, SUB_DIMS)
    delta = 2 * half / 255.0
    cents = np.asarray(centroids, dtype=np.float64)
    weight = 2 * delta * cents  # (groups, 16, 4)
    bias = (cents**2).sum(axis=2) - 2 * ((-half + 0.5 * delta) * cents).sum(axis=2)
    largest = np.abs(weight).max(axis=(1, 2))
    scale = np.exp2(np.floor(np.log2(2.0**_WEIGHT_BITS / np.where(largest > 0, largest, 1.0))))
    weight_t = np.ascontiguousarray(np.round(weight * scale[:, None, None]).transpose(0, 2, 1))
    bias = np.round(bias * scale[:, None])
    nearest = np.empty((groups, n), dtype=np.uint8)
    for start in range(0, n, _ROWS):
        block = codes[start : start + _ROWS][:, order].astype(np.float64)
        for m in range(groups):
            dot = block[:, SUB_DIMS * m : SUB_DIMS * (m + 1)] @ weight_t[m]  # exact integers
            nearest[m, start : start + len(block)] = (bias[m] - dot).argmin(axis=1)
    packed: np.ndarray = nearest[0::2] | (nearest[1::2] << 4)
    return packed


def decode(packed: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """(rows, dim) float32 reconstruction of compact codes, in the table's dimension order."""
    groups = centroids.shape[0]
    nearest = np.empty((groups, packed.shape[1]), dtype=np.int64)
    nearest[0::2], nearest[1::2] = packed & 15, packed >> 4
    parts = centroids[np.arange(groups)[:, None], nearest]  # (groups, rows, 4)
    out = np.empty((packed.shape[1], groups * SUB_DIMS), dtype=np.float32)
    out[:, subspace_order(groups * SUB_DIMS)] = parts.transpose(1, 0, 2).reshape(len(out), -1)
    return out


@dataclass(frozen=True)
class QueryTables:
    """One query's tables over the compact codes: its inner products with each group's
    centroids and their scale; the levels and the byte table made when read (a long-lived
    process's FAISS scan quantizes the products itself)."""

    groups: np.ndarray  # (dim / 4, 16) float32: inner product with each group's centroids
    least: np.ndarray  # (dim / 4,) float32: each group's least product
    scale: float  # a level is (product - its group's least) * scale, rounded half up

    @cached_property
    def levels(self) -> np.ndarray:
        """(dim / 4, 16) uint16: the products quantized, 0..255 (FAISS's arithmetic)."""
        shifted = self.groups - self.least[:, None]
        shifted *= np.float32(self.scale)
        levels: np.ndarray = np.floor(shifted.astype(np.float64) + 0.5).astype(np.uint16)
        return levels

    @cached_property
    def lut(self) -> np.ndarray:
        """(dim / 8, 256) uint16: entry [b, v] sums the levels byte value v of byte position b
        stands for (its groups 2b and 2b + 1)."""
        levels = self.levels
        # value v = low + 16 * high: entry [b, high, low] sums group 2b's level `low` and group
        # 2b+1's level `high` (one broadcast add instead of two gathers by v & 15, v >> 4)
        both: np.ndarray = levels[1::2][:, :, None] + levels[0::2][:, None, :]
        return both.reshape(-1, 256)


def tables(query: np.ndarray, centroids: np.ndarray) -> QueryTables:
    """The query's inner products with the centroids, quantized as FAISS's fast scan
    quantizes them (`IndexFastScan::compute_quantized_LUT`, `round_uint8_per_column`: each
    group's least value subtracted, one scale for every group so that the widest spans 255
    levels, float32, rounded half up in double precision); tests/test_dense.py checks the
    levels against FAISS's own."""
    groups = centroids.shape[0]
    q = np.asarray(query, dtype=np.float32)[subspace_order(groups * SUB_DIMS)]
    per_group = np.einsum("mjd,md->mj", centroids, q.reshape(groups, SUB_DIMS))
    per_group = np.ascontiguousarray(per_group, dtype=np.float32)
    least = per_group.min(axis=1)
    span = (per_group.max(axis=1) - least).max()  # (x - least: rounding keeps the order)
    # (a query with no spread scores every row alike: level 0)
    scale = float(np.float32(255) / span) if span > 0 else 0.0
    return QueryTables(per_group, least, scale)


def scores(packed: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Each row's score, the sum of its groups' levels (uint16: at most 255 a group), for
    compact codes (dim / 8, rows) and a query's `QueryTables.lut`."""
    total: np.ndarray = lut[0].take(np.asarray(packed[0], dtype=np.intp))
    for b in range(1, len(lut)):
        total += lut[b].take(np.asarray(packed[b], dtype=np.intp))
    return total


def top(values: np.ndarray, rows: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The `count` best (value, row) pairs by value, ties by lower row (in no order)."""
    if len(values) <= count:
        return values, rows
    at_least = np.flatnonzero(values >= _count_th_largest(values, count))
    found = values[at_least]
    cut = found.min()
    above, tied = at_least[found > cut], at_least[found == cut]
    tied = tied[np.argsort(rows[tied], kind="stable")[: count - len(above)]]
    keep = np.concatenate([above, tied])
    return values[keep], rows[keep]


def _count_th_largest(values: np.ndarray, count: int) -> Any:
    """The `count`-th largest of `values`. Compact-code scores of many rows (uint16, at most
    255 a group) are counted, not partitioned: 0.30 against 1.16 ms at 163k rows, a cold
    search's scan of every row."""
    if values.dtype == np.uint16 and len(values) >= _COUNTED_MIN:
        at_or_above = np.cumsum(np.bincount(values)[::-1])  # [i]: how many are >= max - i
        return len(at_or_above) - 1 - int(np.searchsorted(at_or_above, count))
    return np.partition(values, len(values) - count)[len(values) - count]
