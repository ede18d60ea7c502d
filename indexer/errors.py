"""User-facing errors: one clear line, a non-zero exit, never a traceback."""

from __future__ import annotations

import os


class IndexerError(Exception):
    """An error caused by bad input or state; the CLI prints it as one line and exits 2."""

    exit_code = 2


class NotARepositoryError(IndexerError):
    pass


class NoIndexError(IndexerError):
    pass


class CorruptIndexError(IndexerError):
    pass


def check_types(**values: tuple[object, type]) -> None:
    """IndexerError (not a raw TypeError) for an argument of the wrong type: name=(value, type)."""
    for name, (value, kind) in values.items():
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise IndexerError(f"{name} must be {kind.__name__}, not {type(value).__name__}")


def env_whole_number(name: str, default: int, minimum: int = 0) -> int:
    """The whole number environment variable `name` holds, `default` when unset or empty."""
    value = _env_value(name, int, "a whole number", minimum)
    return default if value is None else int(value)


def env_number(name: str, minimum: float = 0) -> float | None:
    """The number environment variable `name` holds, None when unset or empty."""
    return _env_value(name, float, "a number", minimum)


def _env_value(name: str, kind: type[int] | type[float], what: str, minimum: float) -> float | None:
    # An IndexerError naming the variable for anything that is not such a number: a typo in a
    # setting never passes unnoticed, and never ends in a traceback.
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = kind(raw)
    except ValueError:
        raise IndexerError(f"{name} must be {what}, not {raw!r}") from None
    if not value >= minimum:  # also rejects nan
        raise IndexerError(f"{name} must be at least {minimum:g}, not {raw!r}")
    return value
