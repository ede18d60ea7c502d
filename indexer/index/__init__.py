"""chunks -> BM25, static vectors, FAISS, code graph -> the index on disk."""
