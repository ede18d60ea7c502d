"""Chunks -> BM25, vectors and code-graph facts -> segments on disk."""
