"""User-facing errors: one clear line, a non-zero exit, never a traceback."""

from __future__ import annotations


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
