"""Secrets never enter the index: files named like secrets are skipped, and high-confidence
secret values inside indexed files are replaced by `[REDACTED:<kind>]` before chunking.

Redaction happens once, on a blob's bytes, where file text enters chunking (pipeline.chunk_blob),
so stored text, BM25 terms and vectors only ever see the redacted form. A replacement keeps
every newline of what it replaces: line numbers stay those of the repository file. The same
function redacts what MCP `retrieve` reads from git and what `indexer pull` re-derives to
verify a shared index, so all three agree byte for byte.
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections import Counter
from collections.abc import Callable

# Bump when a rule changes what is redacted: stored chunks then differ (see CHUNKER_VERSION).
REDACTION_VERSION = 1

# File names (lowercased) whose whole content is a secret. Code modules named like data files
# (`credentials.py`, `secrets.ts`) are indexed, with their values redacted: libraries such as
# botocore keep real code in them.
SECRET_NAMES = (
    ".env",
    ".env.*",
    "*.env",
    "*.env.*",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.kdbx",
    "*.ppk",
    "*.tfstate",
    "*.tfstate.*",
    "*.tfvars",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    ".dockercfg",
    ".htpasswd",
    "credentials",
    "credentials.*",
    "*-credentials.*",
    "*_credentials.*",
    "service-account*.json",
    "service_account*.json",
    "secrets.*",
    "secret.*",
)
SECRET_DIRS = frozenset({".ssh", ".gnupg", ".aws", ".docker"})
CODE_SUFFIXES = frozenset(
    [
        ".py",
        ".pyi",
        ".js",
        ".jsx",
        ".mjs",
        ".cjs",
        ".ts",
        ".tsx",
        ".go",
        ".rs",
        ".java",
        ".kt",
        ".scala",
        ".swift",
        ".rb",
        ".php",
        ".cs",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".lua",
        ".zig",
        ".sh",
        ".bash",
        ".md",
        ".rst",
    ]
)
_NAME_PATTERN = re.compile("|".join(fnmatch.translate(p) for p in SECRET_NAMES))


def is_secret_path(path: str) -> bool:
    """True for files whose name or folder marks them as holding secrets (never indexed)."""
    parts = path.lower().split("/")
    if any(part in SECRET_DIRS for part in parts[:-1]):
        return True
    name = parts[-1]
    if not _NAME_PATTERN.match(name):
        return False
    suffix = name[name.rfind(".") :] if "." in name[1:] else ""
    # `secrets.py` / `credentials.go` are code; `.env.py`-style names stay secret.
    return not (suffix in CODE_SUFFIXES and name.startswith(("credentials", "secret")))


# -- values ----------------------------------------------------------------------------------

_PLACEHOLDERS = (b"${", b"{{", b"%(", b"<", b"xxxx", b"example", b"changeme", b"your_", b"dummy")


def _entropy(value: bytes) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def _credible(value: bytes) -> bool:
    """A password/token-like assignment value, not a name, a URL or a placeholder."""
    lowered = value.lower()
    if len(value) < 8 or b"://" in value or any(p in lowered for p in _PLACEHOLDERS):
        return False
    has_digit = any(48 <= b <= 57 for b in value)
    has_alpha = any(65 <= b <= 90 or 97 <= b <= 122 for b in value)
    return has_digit and has_alpha and _entropy(value) >= 3.0


def _always(_: bytes) -> bool:
    return True


# (kind, pattern, the group to replace (0 = the whole match), a check on that group)
_KEY = rb"(?i:password|passwd|pwd|secret|token|api_?key|apikey|access_?key|private_?key)"
RULES: tuple[tuple[str, re.Pattern[bytes], int, Callable[[bytes], bool]], ...] = (
    (
        "private_key",
        re.compile(
            rb"-----BEGIN[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
            rb"(?:[A-Za-z0-9+/=\s\\:,-]{0,20000}?-----END[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
            rb"|(?:(?:\r?\n|\\n)[A-Za-z0-9+/=]{16,})+)"
        ),
        0,
        _always,
    ),
    (
        "aws_access_key",
        re.compile(rb"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|AIPA)[A-Z0-9]{16}\b"),
        0,
        _always,
    ),
    (
        "aws_secret_key",
        re.compile(
            rb"(?i)(?:aws_?secret_?(?:access_?)?key|secret_?access_?key)[\"']?\s*(?:=|:|:=|=>)\s*"
            rb"[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"
        ),
        1,
        _always,
    ),
    ("gcp_api_key", re.compile(rb"\bAIza[0-9A-Za-z_-]{35}\b"), 0, _always),
    (
        "gcp_private_key_id",
        re.compile(rb"\"private_key_id\"\s*:\s*\"([0-9a-f]{40})\""),
        1,
        _always,
    ),
    ("azure_key", re.compile(rb"(?i)AccountKey=([A-Za-z0-9+/=]{40,100})"), 1, _always),
    ("azure_key", re.compile(rb"\b[A-Za-z0-9_~.-]{3}\dQ~[A-Za-z0-9_~.-]{31,34}\b"), 0, _always),
    ("github_token", re.compile(rb"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b"), 0, _always),
    ("github_token", re.compile(rb"\bgithub_pat_[A-Za-z0-9_]{22,}\b"), 0, _always),
    ("gitlab_token", re.compile(rb"\bglpat-[A-Za-z0-9_-]{20,}\b"), 0, _always),
    ("slack_token", re.compile(rb"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0, _always),
    (
        "slack_webhook",
        re.compile(rb"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}"),
        0,
        _always,
    ),
    ("stripe_key", re.compile(rb"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b"), 0, _always),
    (
        "openai_key",
        re.compile(rb"\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_-]{32,}"),
        0,
        _credible,
    ),
    (
        "jwt",
        re.compile(rb"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
        0,
        _always,
    ),
    (
        "url_password",
        re.compile(rb"\b[a-z][a-z0-9+.-]{1,20}://[^:/\s\"'@]{1,100}:([^@\s\"'/]{3,200})@"),
        1,
        _always,
    ),
    (
        "password",
        re.compile(
            _KEY + rb"[A-Za-z0-9_.-]{0,40}[\"']?\s*(?:=|:|:=|=>)\s*([\"'])([^\"'\s]{8,200})\1"
        ),
        2,
        _credible,
    ),
    (
        "password",
        re.compile(
            rb"(?m)^\s*(?:export\s+)?[A-Za-z0-9_.-]{0,40}" + _KEY + rb"[A-Za-z0-9_.-]{0,40}"
            rb"\s*[=:]\s*([^\s\"'#;,()\[\]{}]{8,200})\s*$"
        ),
        1,
        _credible,
    ),
)
# Lowercase substrings that must occur on a line for any rule but the private-key one to match
# there: plain substring search is ~100x faster than running the rules over every line.
TRIGGERS = (
    *(prefix.lower() for prefix in (b"AKIA", b"ASIA", b"AGPA", b"AIDA", b"AROA", b"ANPA", b"AIPA")),
    *(b"aws", b"aiza", b"private_key_id", b"accountkey", b"q~", b"github_pat_", b"glpat-"),
    *(b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"xox", b"hooks.slack", b"sk-", b"eyj"),
    *(b"sk_live_", b"rk_live_", b"sk_test_", b"rk_test_", b"://"),
    *(b"password", b"passwd", b"pwd", b"secret", b"token", b"api_key", b"apikey"),
    *(b"access_key", b"accesskey", b"private_key", b"privatekey"),
)

_WORDS: tuple[bytes, ...] = (b"password", b"passwd", b"pwd", b"secret", b"token", b"api_key")
_WORDS += (b"apikey", b"access_key", b"accesskey", b"private_key", b"privatekey")
RULE_TRIGGERS: dict[str, tuple[bytes, ...]] = {
    "aws_access_key": TRIGGERS[:7],
    "aws_secret_key": (b"secret",),
    "gcp_api_key": (b"aiza",),
    "gcp_private_key_id": (b"private_key_id",),
    "azure_key": (b"accountkey", b"q~"),
    "github_token": (b"ghp_", b"gho_", b"ghu_", b"ghs_", b"ghr_", b"github_pat_"),
    "gitlab_token": (b"glpat-",),
    "slack_token": (b"xox",),
    "slack_webhook": (b"hooks.slack",),
    "stripe_key": (b"sk_live_", b"rk_live_", b"sk_test_", b"rk_test_"),
    "openai_key": (b"sk-",),
    "jwt": (b"eyj",),
    "url_password": (b"://",),
    "password": _WORDS,
}


def redact(data: bytes) -> tuple[bytes, dict[str, int]]:
    """`data` with every secret value replaced by `[REDACTED:<kind>]` plus the newlines it held,
    and the number of replacements by kind. Idempotent: redacting twice changes nothing."""
    counts: dict[str, int] = {}
    if b"PRIVATE KEY" in data:
        data = _apply(RULES[0], data, counts)
    spans = _candidate_lines(data)
    if not spans:
        return data, counts
    pieces = []
    last = 0
    for start, end in spans:
        region = data[start:end]
        lower = region.lower()
        for rule in RULES[1:]:
            if any(trigger in lower for trigger in RULE_TRIGGERS[rule[0]]):
                starts = _STARTS.get(rule[1])
                region = _apply(rule, region, counts, starts(region) if starts else None)
        pieces += [data[last:start], region]
        last = end
    pieces.append(data[last:])
    return b"".join(pieces), counts


MERGE_GAP = 4096  # rules are line-local: fewer, larger regions cost less than many small ones


# Triggers sharing their first letters are found in one regex pass (a few times faster than a
# `find` per trigger); "private_key_id" lines are "private_key" lines. The same lines either way.
_GROUPED = (re.compile(rb"a(?:kia|sia|gpa|ida|roa|npa|ipa)"), re.compile(rb"gh[pousr]_"))
_SCANNED = tuple(
    t for t in TRIGGERS if t != b"private_key_id" and not any(g.fullmatch(t) for g in _GROUPED)
)


def _candidate_lines(data: bytes) -> list[tuple[int, int]]:
    """Sorted, merged (start, end) spans of whole lines, covering every line with a trigger."""
    lower = data.lower()
    spans = []

    def line_at(pos: int) -> tuple[int, int]:
        end = lower.find(b"\n", pos)
        return lower.rfind(b"\n", 0, pos) + 1, len(lower) if end == -1 else end

    for trigger in _SCANNED:
        pos = lower.find(trigger)
        while pos != -1:
            spans.append(line_at(pos))
            pos = lower.find(trigger, spans[-1][1])
    for grouped in _GROUPED:
        last = -1
        for match in grouped.finditer(lower):
            if match.start() > last:
                spans.append(line_at(match.start()))
                last = spans[-1][1]
    spans.sort()
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1] + MERGE_GAP:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _key_starts(data: bytes) -> list[int]:
    """Every position where a word of `_KEY` starts, in order (ASCII case-insensitively, as
    the rules match it)."""
    lower = data.lower()
    found = set()
    for word in _WORDS:
        pos = lower.find(word)
        while pos != -1:
            found.add(pos)
            pos = lower.find(word, pos + 1)
    return sorted(found)


def _key_line_starts(data: bytes) -> list[int]:
    """The start of every line that holds a word of `_KEY`, in order."""
    return sorted({data.rfind(b"\n", 0, at) + 1 for at in _key_starts(data)})


def _apply(
    rule: tuple[str, re.Pattern[bytes], int, Callable[[bytes], bool]],
    data: bytes,
    counts: dict[str, int],
    starts: list[int] | None = None,
) -> bytes:
    """`rule` applied to `data` as `pattern.sub` applies it; given `starts`, every position
    where one of its matches may begin, it tries those alone (the same matches, in order)."""
    kind, pattern, group, check = rule
    marker = b"[REDACTED:" + kind.encode() + b"]"

    def replace(match: re.Match[bytes]) -> bytes:
        value = match.group(group)
        if value is None or value.startswith(b"[REDACTED:") or not check(value):
            return match.group(0)
        counts[kind] = counts.get(kind, 0) + 1
        whole = match.group(0)
        start, end = match.start(group) - match.start(0), match.end(group) - match.start(0)
        return whole[:start] + marker + b"\n" * value.count(b"\n") + whole[end:]

    if starts is None:
        return pattern.sub(replace, data)
    pieces, last = [], 0
    for at in starts:
        if at < last:
            continue  # inside the previous match: sub would not look here either
        match = pattern.match(data, at)
        if match is not None:
            pieces += [data[last:at], replace(match)]
            last = match.end()
    if not pieces:
        return data
    pieces.append(data[last:])
    return b"".join(pieces)


# Where a match of the password rules may begin: the first one leads with a word of `_KEY`;
# the second with `^` (a line start), and before its word only whitespace, `export` and name
# characters. Whitespace-only lines above that line, or an `export` line, may start the match
# sub finds, but with the same end and value, so the same replacement. Trying those positions
# alone gives sub's result exactly, and a region of common words ("token" in a tokenizer's
# code) is no longer scanned position by position (~40 % of a build's secret scan).
_STARTS: dict[re.Pattern[bytes], Callable[[bytes], list[int]]] = {
    pattern: _key_starts if pattern.pattern.startswith(_KEY) else _key_line_starts
    for kind, pattern, _, _ in RULES
    if kind == "password"
}


def redact_text(text: str) -> str:
    """`redact` for text already decoded as UTF-8 (MCP `retrieve`)."""
    redacted, counts = redact(text.encode("utf-8", "surrogateescape"))
    return redacted.decode("utf-8", "surrogateescape") if counts else text
