"""Chunks -> BM25 postings, vectors and graph facts -> immutable segments on disk."""
