"""blake2b and sha256 from CPython's own modules: `import hashlib` loads OpenSSL, a few
milliseconds of every cold `indexer search` that reads no more than a few digests."""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # an interpreter without the builtin module
    from hashlib import blake2b
try:
    from _sha256 import sha256  # CPython <= 3.11
except ImportError:
    try:
        from _sha2 import sha256  # CPython >= 3.12
    except ImportError:
        from hashlib import sha256

__all__ = ["blake2b", "sha256"]
