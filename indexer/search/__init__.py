"""The read side: query reading, fusion, reranking, filters, compression, token budgets."""
