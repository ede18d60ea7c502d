from indexer.index.tokens import code_terms, lexical_terms, path_terms, split_identifier, stem


def test_split_identifier_handles_every_case_style() -> None:
    assert split_identifier("parseHTTPResponse") == ["parse", "http", "response"]
    assert split_identifier("snake_case_name") == ["snake", "case", "name"]
    assert split_identifier("PascalCase") == ["pascal", "case"]
    assert split_identifier("sha256sum") == ["sha", "256", "sum"]


def test_code_terms_keep_whole_identifier_and_parts() -> None:
    terms = code_terms("getUserName kebab-case-word")
    assert "getusername" in terms
    assert {"get", "user", "name", "kebab", "case", "word"} <= set(terms)


def test_stopwords_dropped_and_lowercased() -> None:
    assert code_terms("The Parser of THE file") == ["parser", "file"]


def test_light_stemming_conflates_inflections() -> None:
    assert {stem(w) for w in ("parse", "parses", "parsed", "parsing")} == {"pars"}
    assert stem("queries") == stem("query")
    assert stem("class") == "class"  # not over-stripped
    assert lexical_terms("Parsing") == lexical_terms("parse")


def test_path_terms_find_oauth2_in_paths() -> None:
    terms = path_terms("fastapi/security/oauth2.py")
    assert {"fastapi", "security", "oauth2", "oauth"} <= set(terms)


def test_a_clearing_cache_makes_each_key_once_and_empties_when_full() -> None:
    from indexer.caches import ClearingCache

    made: list[str] = []
    cache = ClearingCache(lambda key: made.append(key) or key.upper(), entries=2)
    assert [cache["a"], cache["b"], cache["a"]] == ["A", "B", "A"]
    assert made == ["a", "b"]
    assert cache["c"] == "C" and list(cache) == ["c"]  # full: emptied, then the new key
    assert cache["a"] == "A" and made == ["a", "b", "c", "a"]
