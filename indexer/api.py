"""The read side: open a generation of segments, search it, show chunks, report status."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from .errors import IndexerError, check_types
from .index.gitdir import git_dir as _git_dir
from .index.integrity import corrupt_as_error
from .index.store import current_generation, default_index_dir
from .index.vectors import StaticVectors
from .index.view import GenerationView, Overlay
from .search.fusion import FusionConfig
from .search.query import Query, parse_query
from .search.ranked_view import RankedView
from .search.ranking import rank
from .search.results import SearchResult
from .source.chunks import Chunk
from .threads import single_threaded_math

if TYPE_CHECKING:
    from .index.overlay import OverlayState, WorktreeOverlay
    from .index.segment_data import SegmentData
    from .search.answers import Verdict
    from .search.budget import Packed
    from .search.filters import SearchFilter
    from .search.related_types import Related

__all__ = ["Index", "Query", "SearchResult", "build_index", "parse_query"]


def build_index(*args: Any, **kwargs: Any) -> Any:
    """Build (indexer.index.build.build_index); imported lazily: searching never loads pygit2."""
    from .index.build import build_index as _build

    return _build(*args, **kwargs)


_Read = TypeVar("_Read", bound=Callable[..., Any])


def _on_current(method: _Read) -> _Read:
    """A read of an index that follows a working tree is answered by its current view."""

    @functools.wraps(method)
    def read(self: Index, *args: Any, **kwargs: Any) -> Any:
        return method(self.current(), *args, **kwargs)

    return read  # type: ignore[return-value]


class Index(RankedView):
    """A read-only view of one repository's current index generation (its live segments),
    with searching, chunk lookup, the code graph commands and status on top of the arrays
    GenerationView (indexer/index/view.py) loads.

    `overlay`: an extra in-memory segment (indexer.index.segment_data.SegmentData) and paths masked
    in every stored segment: what the working-tree overlay adds (see `with_overlay`)."""

    def __init__(
        self,
        snapshot: Path,
        fusion: FusionConfig | None = None,
        vectors: StaticVectors | None = None,
        overlay: Overlay | None = None,
        opened: GenerationView | None = None,
    ) -> None:
        super().__init__(snapshot, vectors, overlay, opened)
        self.fusion = fusion or FusionConfig.load()
        self.session: str | None = None  # savings-log session of this object's searches
        self._worktree: WorktreeOverlay | None = None  # followed by every read (Index.open)
        self.worktree: OverlayState | None = None  # what the last refresh found
        self._view: tuple[OverlayState, tuple[object, ...], Index] | None = None  # last one
        self.committed: Index = self  # for a working-tree view: its commit's (the code graph)

    def with_overlay(self, segment: SegmentData | None, masked: Iterable[str] = ()) -> Index:
        """This index with `segment` (kept in memory) added and `masked` paths hidden in the
        stored segments: the rows of the overlay's files replace theirs, exactly as if the
        generation held them (global statistics, path order, ties). The segments this index
        opened, and what they loaded, are shared."""
        overlay = (segment, list(masked))
        return Index(self.snapshot, self.fusion, self.vectors, overlay=overlay, opened=self)

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        repo: str | os.PathLike[str] | None = None,
        index_dir: str | os.PathLike[str] | None = None,
        fusion: FusionConfig | None = None,
        *,
        worktree: bool = True,
        watch: bool = True,
        one_shot: bool = False,
    ) -> Index:
        """The current index of `repo`; with `worktree` (the default) every read overlays the
        uncommitted files of the working tree holding `repo` (indexer/index/overlay.py).
        `watch` keeps a watch on the tree so that an unchanged tree costs no `git status` (for
        a process that searches more than once). `one_shot`: the process answers one command
        (the CLI): the dense side is scanned with numpy, without importing FAISS."""
        for name, value in (("repo", repo), ("index_dir", index_dir)):
            if value is not None and not isinstance(value, str | os.PathLike):
                raise IndexerError(f"{name} must be a path, not {type(value).__name__}")
        if index_dir is None:
            index_dir = default_index_dir(_git_dir(repo))
        snapshot = current_generation(Path(index_dir))
        root = None
        if worktree:
            from .index.gitdir import worktree_root

            root = worktree_root(repo)  # None in a bare repository: the commit alone
        if _reused is None or fusion is not None:
            index = cls(snapshot, fusion)
            index.one_shot = one_shot
        else:
            # A long-lived server (indexer/serve/serve.py): generations are immutable, so every
            # open of the same one shares what was loaded; an update moves CURRENT and the next
            # open follows. One Index per working tree it overlays (linked worktrees, none).
            key = (snapshot.parent.parent, root)
            index = _reused.get(key)  # type: ignore[assignment]
            if index is None or index.snapshot != snapshot:
                index = _reused[key] = cls(snapshot)
        if root is not None and index._worktree is None:
            from .index.overlay import kept_overlay

            index.follow(kept_overlay(root, watch or _reused is not None, _reused is not None))
        return index

    # -- the working tree ------------------------------------------------------------------------
    def follow(self, worktree: WorktreeOverlay) -> Index:
        """Answer every read from now on with `worktree`'s uncommitted files overlaid."""
        self._worktree = worktree  # a view made for another tree is never reused: see key
        return self

    def now(self) -> Index:
        """`current()` once, for one command: later reads do not look at the working tree
        again (an index opened again follows it anew)."""
        view = self.current()
        if view is self:
            self._worktree = None  # nothing uncommitted: this index is the view
        return view

    def current(self) -> Index:
        """The index as the working tree is now: this one when nothing is uncommitted (or the
        index follows no working tree), else a view with the uncommitted files' chunks in
        place of their committed ones. Reads of an index opened with `worktree` go here."""
        if self._worktree is None:
            return self
        state = self._worktree.refresh(self.commit, self.blob_of)
        self.worktree = state
        if not state:
            return self
        if self._view is None or (self._view[0] is not state and self._view[1] != state.key):
            from .index.overlay import overlaid

            self._view = (state, state.key, overlaid(self, state))
        return self._view[2]

    @_on_current
    @corrupt_as_error
    def show(self, chunk_id: str) -> Chunk:
        """A chunk by id, or by the `path:start-end` location compressed results print
        (`path#cell=N[:start-end]` in a notebook)."""
        if ":" in chunk_id or "#cell=" in chunk_id:
            from .search.compress import row_at_location

            return self.chunk_at(row_at_location(self, chunk_id))
        return self.chunk_at(self.row_of(chunk_id))

    # -- code graph (indexer/index/graph.py; loaded only by the commands that use it) ------------
    @corrupt_as_error
    def related(
        self, key: str, direction: str = "both", depth: int = 1, limit: int = 50
    ) -> list[Related]:
        """Callers and/or callees of a symbol name, qualname, `path::qualname` or chunk id, from
        the indexed commit's code graph (uncommitted edits are not in it)."""
        from .index.graph.related import related
        from .search.related_types import Related

        check_types(key=(key, str), direction=(direction, str), depth=(depth, int))
        check_types(limit=(limit, int))
        found = related(self.committed, key, direction, depth, limit)
        return [Related.from_record(e) for e in found]

    # -- search ----------------------------------------------------------------------------------
    @_on_current
    @corrupt_as_error
    def search(
        self,
        query: str,
        k: int = 10,
        *,
        with_text: bool = False,
        cut: bool = True,
        compress: bool = False,
        log: bool = False,
        paths: str | list[str] | None = None,
        languages: str | list[str] | None = None,
        kinds: str | list[str] | None = None,
    ) -> list[SearchResult]:
        """Ranked results; `compress` puts each chunk's compressed form (indexer/search/compress.py)
        in `text`; `paths` (globs, `!glob` excludes), `languages` and `kinds` filter
        (indexer/search/filters.py); `log=True` appends the search to the savings log."""
        if not isinstance(query, str) or not query.strip():
            raise IndexerError(
                "the query is empty"
                if isinstance(query, str)
                else f"the query must be a string, not {type(query).__name__}"
            )
        check_types(k=(k, int), with_text=(with_text, bool), cut=(cut, bool))
        check_types(compress=(compress, bool), log=(log, bool))
        if k < 1:
            raise IndexerError("k must be at least 1")
        where = None
        if paths is not None or languages is not None or kinds is not None:
            from .search.filters import SearchFilter  # (only then: its import costs ~2 ms)

            where = SearchFilter.of(paths, languages, kinds)
        if len(self) == 0:
            return []
        results = self._search(query, k, with_text or compress, cut, where)
        if compress:
            from .search.compress import compress_results

            compress_results(self, query, results)
        if log:
            self._log(results, json.dumps([r.to_dict() for r in results]))
        return results

    def _search(
        self, query: str, k: int, with_text: bool, cut: bool, where: SearchFilter | None
    ) -> list[SearchResult]:
        from .search.answers import MISSING_SYMBOL_FACTOR, fold_split_tails, missing_symbols

        single_threaded_math()  # a query's products are small (indexer/threads.py)
        allowed = self._allowed(where) if where else None
        ranked = self.rank(parse_query(query), k, cut=cut, allowed=allowed)
        scores = dict(ranked)
        factor = MISSING_SYMBOL_FACTOR if missing_symbols(self.lexical, query) else 1.0

        def make(row: int, from_row: int) -> SearchResult:
            s = dict(scores[from_row])
            s["confidence"] *= factor
            return self._result(row, s, with_text)

        results = [r for _, r in fold_split_tails(self, [row for row, _ in ranked], make)]
        if not self.one_shot:  # the symbols read are not kept (Segment.release_symbols)
            for segment in self.space.segments:
                segment.release_symbols()
        return results

    def _allowed(self, where: SearchFilter) -> np.ndarray:
        return where.allowed_rows(self.files, self._chunk_file, self.row_columns.kinds)

    @_on_current
    def verdict(self, query: str, results: Sequence[Any]) -> Verdict:
        """Whether `results` answer `query` credibly, with a one-line message when they do not
        (indexer/search/answers.py): what the CLI's exit status and MCP's first line say."""
        from .search.answers import judge, missing_symbols

        return judge(query, results, missing_symbols(self.lexical, query))

    @_on_current
    def lines(self, path: str, start_line: int, end_line: int | None = None) -> list[str]:
        """Exact lines `start_line..end_line` (1-based, inclusive) of an indexed file at the
        indexed commit, read from git (not the working tree)."""
        from .search.excerpt import file_lines

        return file_lines(self, path, start_line, end_line)

    @_on_current
    @corrupt_as_error
    def search_budget(
        self,
        query: str,
        budget: int,
        k: int = 10,
        *,
        log: bool = False,
        paths: str | list[str] | None = None,
        languages: str | list[str] | None = None,
        kinds: str | list[str] | None = None,
    ) -> Packed:
        """The best results packed into at most `budget` o200k tokens (indexer/search/budget.py),
        filtered as `search` filters."""
        from .search.budget import budget_search

        check_types(k=(k, int), log=(log, bool))
        filters = {"paths": paths, "languages": languages, "kinds": kinds}
        packed = budget_search(self, query, budget, k, **filters)
        if log:
            self._log(packed.items, packed.text)
        return packed

    def _log(self, results: Sequence[Any], sent: str) -> None:
        from .search.savings import new_session, record

        self.session = self.session or new_session()
        record(self, results, sent, "api", self.session)

    def rank(
        self,
        q: Query,
        k: int,
        cut: bool = True,
        retrievers: tuple[str, ...] = ("bm25", "dense"),
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, dict[str, float]]]:
        """Ranked (row, scores) pairs: see indexer/search/ranking.py."""
        return rank(self, q, k, cut, retrievers, allowed)

    def _result(self, row: int, s: dict[str, float], with_text: bool) -> SearchResult:
        chunk = self.chunk_at(row, with_text=with_text)
        source = "worktree" if chunk.path in self._worktree_paths else "commit"
        return SearchResult.of(chunk, s, with_text, source)

    @cached_property
    def _worktree_paths(self) -> frozenset[str]:
        """Paths whose chunks come from the working tree (a view made by `current`)."""
        return frozenset(f.path for f in self.worktree.files) if self.worktree else frozenset()

    # -- status ----------------------------------------------------------------------------------
    @_on_current
    @corrupt_as_error
    def status(self) -> dict[str, Any]:
        """What is indexed and where, and how fresh it is: the keys of `indexer status --json`."""
        from .fresh.freshness import index_freshness

        m = self.manifest
        return {
            "commit": m["commit"],
            "commit_time": m.get("commit_time"),
            "created": m.get("created"),
            "tool_version": m.get("tool_version"),
            "format_version": m.get("format_version"),
            "snapshot": str(self.snapshot),
            "segments": len(m["segments"]),
            "counts": m["counts"],
            "languages": m.get("languages", {}),
            "warnings": m.get("warnings", []),
            "artifact_bytes": sum(f["bytes"] for f in m["files"].values()),
            "files": {name: info["bytes"] for name, info in m["files"].items()},
            "freshness": index_freshness(
                self.snapshot.parent.parent, m.get("repo_root"), m["commit"]
            ),
            # None: the index follows no working tree (--no-worktree, a bare repository)
            "worktree": self.worktree.summary() if self.worktree is not None else None,
        }

    # -- lifetime ----------------------------------------------------------------------------------
    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# (index dir, working tree) -> open Index, set by reuse_open_indexes()
_reused: dict[tuple[Path, Path | None], Index] | None = None


def reuse_open_indexes() -> None:
    """From now on `Index.open` returns the already open Index of an unchanged snapshot (for a
    long-lived process whose requests each call Index.open; see indexer/serve/serve.py)."""
    global _reused
    if _reused is None:
        _reused = {}
