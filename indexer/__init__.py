"""Git-integrated code index for AI coding agents."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Index", "SearchResult", "__version__", "build_index"]

if TYPE_CHECKING:
    from .api import Index, SearchResult, build_index


def __getattr__(name: str) -> Any:
    # Lazy: `import indexer` stays cheap (hooks and the CLI start fast).
    if name in ("Index", "SearchResult", "build_index"):
        from . import api

        return getattr(api, name)
    raise AttributeError(name)
