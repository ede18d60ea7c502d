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
