"""Code-aware reranking of fused candidates: definitions, paths, coherence, demotion, saturation."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import numpy as np

from ..index.dense_pq import top
from ..index.row_columns import part_bits, symbol_key
from ..index.tokens import split_identifier
from ..source.languages import PLAIN_TEXT, detect_language
from ..source.pathclass import (
    FLAG_DATA,
    FLAG_DOCS,
    FLAG_EXAMPLE,
    FLAG_GENERATED,
    FLAG_TEST,
    FLAG_VENDORED,
    directory_flags,
)
from .arrays import member, stable_order, unique_inverse
from .path_names import (
    PathWords,
    compound_key,
    named_exactly,
    names_module,
    names_path,
    written_stems,
)
from .query import Query

if TYPE_CHECKING:
    from ..api import Index
    from .ranked_view import RankedView

# Data and configuration files (indexer/source/datafiles.py) are asked for by these words or
# by name.
_DATA_WORDS = (
    "config configuration configure configured settings setting yaml yml json toml ini cfg csv "
    "tsv ci workflow workflows pipeline github tox docker dataset data fixture fixtures "
    "parameters params manifest dependencies dependency"
)
_ASKS_FOR = {
    FLAG_TEST: {
        "test",
        "tests",
        "testing",
        "pytest",
        "unittest",
        "spec",
        "fixture",
        "fixtures",
        "mock",
    },
    FLAG_EXAMPLE: {"example", "examples", "demo", "sample", "tutorial", "benchmark", "bench"},
    FLAG_DOCS: {"doc", "docs", "documentation", "readme", "guide", "changelog", "rst", "markdown"},
    FLAG_VENDORED: {"compat", "compatibility", "vendor", "vendored", "legacy", "deprecated"},
    FLAG_GENERATED: {"dist", "build", "generated", "bundle"},
    FLAG_DATA: set(_DATA_WORDS.split()),
}


PROSE_KINDS = frozenset({"text", "section"})


def asked_flags(terms: set[str]) -> int:
    """Path classes the query asks for by name (their demotion is then switched off)."""
    asked = 0
    for flag, words in _ASKS_FOR.items():
        if terms & words:
            asked |= flag
    return asked


def compound_words(index: Index, q: Query, files: np.ndarray, flags: np.ndarray) -> set[str]:
    """Query words that spell a candidate's file name in two ("the test client" names
    `testclient.py`, "data class" `data_class.py`): they name that file of the project's own
    code (no path class), they do not ask for tests or data."""
    if q.issue_sized or not q.compounds:
        return set()
    out: set[str] = set()
    paths = index.space.paths
    own = files[flags == 0]
    # Files whose key's hash is one of the query's compounds: few or none.
    hit = member(index.compound_keys.values(own), [hash(k) for k in q.compounds])
    for f in sorted(set(own[hit].tolist())):
        words = q.compounds.get(compound_key(paths[f]))
        if words:
            out.update(words)
    return out


def file_evidence(index: Index, rows: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """A file's other good chunks add to its best one: each chunk is multiplied by
    1 + share * min(cap, sum of its file's next `depth` chunk scores / the file's best)."""
    w = index.fusion["rerank"]
    share = float(w["file_evidence"])
    if share <= 0 or len(rows) == 0:
        return scores
    files = index._chunk_file[rows].tolist()
    best: dict[int, float] = {}
    others: dict[int, list[float]] = {}
    for i in np.argsort(-scores, kind="stable").tolist():
        f = files[i]
        if f not in best:
            best[f] = float(scores[i])
        elif len(others.setdefault(f, [])) < _EVIDENCE_DEPTH:
            others[f].append(float(scores[i]))
    mult = {
        f: 1.0 + share * min(_EVIDENCE_CAP, sum(others.get(f, ())) / b) if b > 0 else 1.0
        for f, b in best.items()
    }
    return scores * np.fromiter((mult[f] for f in files), dtype=np.float64, count=len(files))


_EVIDENCE_DEPTH = 3
_EVIDENCE_CAP = 1.5


# Formats no bundled grammar reads that hold code: Cython, templates, Windows scripts, `.in`
# sources. Other text of no known format (prose, translations, licences) stays documentation.
_CODE_LIKE_TEXT = frozenset(
    [
        "pyx",
        "pxd",
        "pxi",
        "j2",
        "jinja",
        "jinja2",
        "tmpl",
        "tpl",
        "mako",
        "hbs",
        "handlebars",
        "mustache",
        "njk",
        "liquid",
        "bat",
        "cmd",
        "in",
    ]
)
_DOC_LANGUAGES = frozenset({PLAIN_TEXT, "markdown", "rst", "org"})


def corrected_flags(index: Index, files: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """The build's path classes, corrected where a name misleads them (`doc_correction`), plus
    the classes a path's shape gives (`shape_flags`)."""
    fixes = index.flag_fixes.values(files)  # per file: flags to drop | flags to add << 8
    drops, adds = (fixes & 0xFF).astype(np.uint8), (fixes >> 8).astype(np.uint8)
    return np.asarray((flags & ~drops) | adds, dtype=flags.dtype)


def flag_fix(index: RankedView, f: int) -> int:
    """The path-class flags to drop from file f's chunks, and (<< 8) to add."""
    path = index.space.paths[f]
    # FLAG_DOCS comes from the path: the file's first chunk has it when any has.
    drop = FLAG_DOCS if index._chunk_flags[int(index.space.file_starts[f])] & FLAG_DOCS else 0
    return drop | ((doc_correction(path) if drop else 0) | shape_flags(path)) << 8


def doc_correction(path: str) -> int:
    """For a file the build flags as docs by its name (`.txt`) or for want of a grammar:
    FLAG_DOCS where it stays docs; 0 outside a docs directory for a file a grammar reads
    (`CMakeLists.txt`); FLAG_DATA for code of a format no grammar reads (Cython, templates)."""
    directory, _, name = path.rpartition("/")
    if directory_flags(directory + "/") & FLAG_DOCS:
        return FLAG_DOCS
    language = detect_language(path)
    if language not in _DOC_LANGUAGES:
        return 0
    ext = name.rsplit(".", 1)[1].lower() if "." in name.lstrip(".") else ""
    if language == PLAIN_TEXT and ext in _CODE_LIKE_TEXT:
        return FLAG_DATA
    return FLAG_DOCS


# gettext catalogs (`locale/de/LC_MESSAGES/app.js`): translations, ranked like data.
_CATALOG = re.compile(r"(^|/)LC_MESSAGES/")
# A third-party asset copied in with its version or minified (`jquery-3.5.1.js`, `x.min.js`).
_VENDORED_ASSET = re.compile(r"[-.]v?\d+\.\d+(\.\d+)?(\.min)?\.(js|css)$|\.min\.(js|css)$")


def shape_flags(path: str) -> int:
    """Classes the build's path patterns miss: translation catalogs, versioned assets."""
    flags = FLAG_DATA if _CATALOG.search(path) else 0
    if _VENDORED_ASSET.search(path.lower()):
        flags |= FLAG_VENDORED
    return flags


def named_files(index: Index, q: Query, files: np.ndarray, dotted: bool) -> np.ndarray:
    """Positions in `files` that a written path, a dotted name or an exact name may name: a
    long-lived process keeps each file's stem and module keys hashed (few files hold the
    query's, and only those are tested); one answering a single command tests every file."""
    if index.one_shot:
        return np.arange(len(files))
    stems = written_stems(q.paths)
    if q.symbol_like:
        stems |= q.identifiers
    hit = member(index.stem_keys.values(files), [hash(s) for s in stems])
    if dotted:
        words = {word for name in q.dotted for word in name}
        hit |= member(index.module_keys.values(files), [hash(w) for w in words])
    return np.flatnonzero(hit)


def data_demotion(index: Index, q: Query, files: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """Data and configuration files rank below code for a question about behaviour; a query
    that names the file (`fusion.json`, `ci.yml`) keeps it where it is."""
    out = np.ones(len(files), dtype=np.float64)
    text = q.text.lower()
    for i in np.nonzero(flags & FLAG_DATA)[0].tolist():
        name = index.space.paths[int(files[i])].rsplit("/", 1)[-1].lower()
        if name not in text:
            out[i] = index.fusion["rerank"]["demote_data"]
    return out


_COHERENCE_TOP = 50  # the fused list's best rows that count for file coherence
_LOG1P = np.asarray([math.log1p(n) for n in range(_COHERENCE_TOP)], dtype=np.float64)


def best_positions(scores: np.ndarray, n: int) -> np.ndarray:
    """Positions of the n best scores (a set, in no order), ties at the n-th best taken by
    lower position: a partition (dense_pq.top), not a sort of every candidate (~700: 35
    against ~10 us)."""
    return top(scores, np.arange(len(scores)), n)[1]


def rerank(index: Index, q: Query, rows: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Code-aware multipliers: definitions named by the query, path matches, file coherence,
    and demotion of tests/examples/docs/vendored/generated code unless the query asks."""
    w = index.fusion["rerank"]
    columns = index.row_columns
    kind_codes = columns.kind_codes(rows)
    files = index._chunk_file[rows]
    flags = index._chunk_flags[rows]
    asked = asked_flags(q.ask_terms - index.project_terms - compound_words(index, q, files, flags))
    out = scores.copy()
    # File coherence: how many candidates share the file (top of the fused list only).
    top = best_positions(scores, _COHERENCE_TOP)
    # Per-file factors once per file, not once per candidate.
    unique, inverse = unique_inverse(files)
    unique_files = unique.tolist()
    factor = np.ones(len(unique_files), dtype=np.float64)
    if w["path"]:
        named = PathWords(q)
        matched = np.zeros(len(unique_files), dtype=np.float64)
        # A process answering one command fills the path table for paths that may be named
        # only (indexer/search/path_table.py); a long-lived one fills in every candidate's.
        if index.one_shot:
            paths = index.space.paths
            may = [j for j, f in enumerate(unique_files) if named.may_name(paths[f])]
            if may:
                matched[may] = index.path_table.scores(named, unique[may])
        else:
            matched = index.path_table.scores(named, unique)
        factor *= 1.0 + w["path"] * matched
        # A report's dotted names are mostly its imports (context, not the fault).
        dotted = bool(q.dotted) and not q.issue_sized
        if q.paths or dotted or q.symbol_like:
            for j in named_files(index, q, unique, dotted).tolist():
                path = index.space.paths[unique_files[j]]
                if (q.paths and names_path(path, q.paths)) or (
                    dotted and names_module(path, q.dotted)
                ):
                    factor[j] *= 1.0 + w["path"]
                if q.symbol_like and named_exactly(path, q.identifiers):
                    factor[j] *= 1.0 + 0.5 * w["path"]
    if w["coherence"]:
        # How many candidates share the file (top of the fused list only).
        shared = np.bincount(inverse[top], minlength=len(unique_files))
        factor *= 1.0 + w["coherence"] * _LOG1P[np.maximum(shared - 1, 0)]
    flags = corrected_flags(index, files, flags)
    bad_rows = (flags & ~np.uint8((asked | FLAG_DATA) & 0xFF)) != 0
    out *= factor[inverse]
    out[bad_rows] *= w["demote"]
    if not asked & FLAG_DATA:
        out *= data_demotion(index, q, files, flags)
    if q.issue_sized and not asked & FLAG_DOCS and w["prose"] < 1.0:
        # A bug report is fixed in code: changelogs, docs pages and config rank below it.
        out[columns.is_kind(kind_codes, PROSE_KINDS)] *= w["prose"]
    if not w["definition"] or not (q.identifiers or q.symbol_like):
        return out
    named_by = q.identifiers
    full, half = 1.0 + w["definition"], 1.0 + 0.5 * w["definition"]
    # Only the candidates of a module or definition kind have their names read.
    modules = np.flatnonzero(columns.is_kind(kind_codes, _MODULE_KINDS))
    # Read only the names of the rows the defined-names table keys (a superset): a one-shot
    # process opens the table for a symbol query only.
    if not index.one_shot or "_definitions" in index.__dict__:
        modules = modules[member(rows[modules], index._definitions.rows_keyed(named_by))]
    for i, names in zip(modules.tolist(), columns.defines.take(rows[modules]), strict=True):
        if names and not named_by.isdisjoint(names.lower().split()):
            out[i] *= full
    definitions = np.flatnonzero(columns.is_kind(kind_codes, _DEFINITION_KINDS))
    terms, symbol_like = q.terms, q.symbol_like
    keys = columns.symbol_keys(rows[definitions])
    if keys is not None:  # read the symbols of the rows that may count only: the key hits
        may_count = member(keys, [symbol_key(n) for n in named_by])
        if symbol_like:  # and those whose parts may all be query terms
            may_spell = columns.spelled_by(rows[definitions], part_bits(terms))
            assert may_spell is not None  # kept where the keys are
            may_count |= may_spell
        definitions = definitions[may_count]
    spelled: dict[str, bool] = {}  # symbol -> every part of it is a query term (many repeat)
    for i, symbol in zip(
        definitions.tolist(), columns.symbols.take(rows[definitions]), strict=True
    ):
        if not symbol:
            continue
        low = symbol.lower()
        if low in named_by:
            out[i] *= full
        elif symbol_like and len(low) > 3:
            known = spelled.get(symbol)
            if known is None:
                parts = split_identifier(symbol)
                known = spelled[symbol] = bool(parts) and terms.issuperset(parts)
            if known:
                out[i] *= half
    return out


_MODULE_KINDS = frozenset({"module", "cell"})
_DEFINITION_KINDS = frozenset({"function", "method", "class"})


_POWERS: dict[float, np.ndarray] = {}


def _powers(factor: float, count: int) -> np.ndarray:
    """factor**j for j < count (Python's own powers, as a list of them gave), kept per factor."""
    table = _POWERS.get(factor)
    if table is None or len(table) < count:
        table = np.asarray([factor**j for j in range(max(count, 64))], dtype=np.float64)
        _POWERS[factor] = table
    return table[:count]


def saturate(
    index: Index,
    rows: np.ndarray,
    scores: np.ndarray,
    similarity: np.ndarray,
    head: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The j-th chunk of a file in the ranking is multiplied by saturation**j; `head`: only the
    first `head` rows of the new order are returned (what a stable sort's first rows are)."""
    factor = float(index.fusion["rerank"]["saturation"])
    if factor >= 1.0:
        return rows, scores, similarity
    files = index._chunk_file[rows]
    # n: how many earlier candidates share the candidate's file.
    by_file = stable_order(files)
    grouped = files[by_file]
    first = np.ones(len(rows), dtype=bool)  # where each file's run starts in `grouped`
    np.not_equal(grouped[1:], grouped[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    n = np.empty(len(rows), dtype=np.int64)
    n[by_file] = np.arange(len(rows)) - np.repeat(starts, np.diff(starts, append=len(rows)))
    powers = _powers(factor, int(n.max(initial=0)) + 1)
    adjusted = np.asarray(scores * powers[n], dtype=scores.dtype)
    if head is not None and head < len(rows):  # a partition, then a sort of the head alone
        best = best_positions(adjusted, head)
        order = best[np.lexsort((best, -adjusted[best]))]
    else:
        order = np.argsort(-adjusted, kind="stable")
    return rows[order], adjusted[order], similarity[order]
