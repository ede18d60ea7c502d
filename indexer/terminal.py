"""Human-readable output never lets repository content drive the terminal.

A file named `src/\\e[31mRED\\e[0m\\e]0;pwned\\a.py` could recolor or retitle a terminal, a
newline in a name would split a result line, and bidirectional overrides can make code read
differently from what it is. Every field printed for humans goes through `clean`, which shows
such characters as visible escapes (`\\x1b`); --json output is JSON-escaped already.
"""

from __future__ import annotations

import functools
import re

# C0 and C1 controls, DEL, and the bidirectional embedding/override/isolate characters.
_BIDI = "\u202a-\u202e\u2066-\u2069"


@functools.cache
def _controls(multiline: bool) -> re.Pattern[str]:
    """Compiled on first use (~1 ms at import otherwise): --json output never needs them."""
    if multiline:
        return re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")  # keeps \t and \n
    return re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def clean(text: object, multiline: bool = False) -> str:
    """`text` safe to print: control characters escaped (newlines and tabs kept if
    `multiline`)."""
    return _controls(multiline).sub(_visible, str(text))
