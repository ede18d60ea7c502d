"""BM25's two parameters, shared by the index writer (lexical.py) and the query side
(lexical_view.py, lexical_topk.py) without the query side importing the writer."""

K1 = 1.2
B = 0.75
