"""Keys of the name index: a stable signed 64-bit hash of "tag\0name" (graph/facts.py)."""

from __future__ import annotations

from ...caches import ClearingCache
from ...digests import blake2b

# chunk ids and qualified names: one file each, never looked up twice by a build
_UNIQUE_TAGS = frozenset("kq")


def name_key(tag: str, name: str) -> int:
    """Stable signed 64-bit key of a tagged name (collisions only widen a lookup)."""
    tagged = f"{tag}\0{name}"
    return _key_of(tagged) if tag in _UNIQUE_TAGS else _keys[tagged]


def _key_of(tagged: str) -> int:
    digest = blake2b(tagged.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


# Files call, import and define the same names (`c\0append`) over and over.
_keys = ClearingCache(_key_of)
