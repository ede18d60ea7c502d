"""Large structured data (JSON, YAML, CSV, TSV) indexed by its shape, not by every window.

A fixture, a dump of tuned parameters or a dataset cut into 60-line windows matches many query
words and crowds out code. Above a size threshold such a file becomes one `data` chunk: its
top-level keys, a schema-like summary of the values, and its first records. Smaller files are
configuration (CI workflows, package manifests, tool settings) and stay as they are.

Thresholds: the largest CI workflow among the dev-set projects is 16.5 KB (pylint's
`.github/workflows/ci.yaml`), and configuration files are rarely bigger, so JSON and YAML are
summarised from 24 KB up. Tabular files are data by nature: CSV/TSV from 4 KB (about 60 rows).
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

DATA_LANGUAGES = frozenset({"json", "yaml", "csv", "tsv"})
SUMMARY_BYTES = {"json": 24_000, "yaml": 24_000, "csv": 4_000, "tsv": 4_000}
MAX_KEYS = 60  # top-level keys listed
MAX_RECORDS = 3  # first records shown
MAX_RECORD_CHARS = 240
MAX_DEPTH = 3  # nesting shown in the schema
MAX_FIELDS = 25  # fields of an object shown in the schema


def summarise(language: str, data: bytes) -> str | None:
    """The shape of a large data file as text, or None when it is small (configuration: kept
    as is) or does not parse (the caller falls back to windows)."""
    if language not in DATA_LANGUAGES or len(data) < SUMMARY_BYTES[language]:
        return None
    text = data.decode("utf-8", errors="replace")
    if language == "json":
        return _json_summary(text, len(data))
    if language == "yaml":
        return _yaml_summary(text, len(data))
    return _table_summary(text, "\t" if language == "tsv" else ",", len(data))


def data_records(stem: str, language: str, data: bytes) -> list[dict[str, Any]] | None:
    """One `data` chunk record spanning the file, or None to chunk it as text."""
    summary = summarise(language, data)
    if summary is None:
        return None
    lines = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    return [
        {
            "kind": "data",
            "symbol": stem,
            "qualname": "<data>",
            "signature": summary.split("\n", 1)[0],
            "docstring": "",
            "start_line": 1,
            "end_line": max(1, lines),
            "start_byte": 0,
            "end_byte": len(data),
            "text": summary,
        }
    ]


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e6 else f"{n / 1e3:.0f} KB"


def _clip(text: str, limit: int = MAX_RECORD_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shape(value: Any, depth: int = 0) -> str:
    """A schema-like type: `int`, `list[120] of {id: int, name: str}`."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return type(value).__name__
    if isinstance(value, str):
        return "str"
    if value is None:
        return "null"
    if isinstance(value, list):
        if not value:
            return "list[0]"
        return f"list[{len(value)}] of {_shape(value[0], depth + 1)}"
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return f"object({len(value)} keys)"
        fields = [f"{k}: {_shape(v, depth + 1)}" for k, v in list(value.items())[:MAX_FIELDS]]
        more = f", ...+{len(value) - MAX_FIELDS}" if len(value) > MAX_FIELDS else ""
        return "{" + ", ".join(fields) + more + "}"
    return type(value).__name__


def _json_summary(text: str, n_bytes: int) -> str | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    out = []
    if isinstance(value, dict):
        keys = list(value)
        out.append(f"JSON object, {len(keys)} keys, {_size(n_bytes)}")
        out.append("keys: " + ", ".join(str(k) for k in keys[:MAX_KEYS]))
        if len(keys) > MAX_KEYS:
            out[-1] += f", ...+{len(keys) - MAX_KEYS}"
        out.append("schema:")
        for key in keys[:MAX_FIELDS]:
            out.append(f"  {key}: {_clip(_shape(value[key], 1))}")
        records = [{k: value[k]} for k in keys[:MAX_RECORDS]]
    elif isinstance(value, list):
        out.append(f"JSON list of {len(value)} items, {_size(n_bytes)}")
        out.append(f"schema: {_clip(_shape(value))}")
        records = value[:MAX_RECORDS]
    else:
        return None
    out.append("first records:")
    for record in records:
        out.append("  " + _clip(json.dumps(record, ensure_ascii=False)))
    return "\n".join(out)


_YAML_KEY = re.compile(r"^(\s*)(?:- )?([\w.$/-][\w .$/-]*?)\s*:(?:\s|$)")


def _yaml_summary(text: str, n_bytes: int) -> str:
    """Top-level keys with their second-level keys, and the first lines (no YAML parser:
    the runtime stays light, and a shape is all that is needed)."""
    lines = text.splitlines()
    top: dict[str, list[str]] = {}
    current = ""
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _YAML_KEY.match(line)
        if match is None:
            continue
        indent, key = len(match.group(1)), match.group(2)
        if indent == 0 and not line.startswith("- "):
            current = key
            top.setdefault(key, [])
        elif current and 0 < indent <= 4:
            children = top[current]
            if key not in children and len(children) < MAX_FIELDS:
                children.append(key)
    out = [f"YAML, {len(lines)} lines, {len(top)} top-level keys, {_size(n_bytes)}"]
    out.append("keys: " + ", ".join(list(top)[:MAX_KEYS]))
    out.append("schema:")
    for key, children in list(top.items())[:MAX_FIELDS]:
        out.append(f"  {key}: " + (", ".join(children) if children else "value"))
    out.append("first lines:")
    out.extend("  " + _clip(line) for line in lines[:12])
    return "\n".join(out)


def _table_summary(text: str, delimiter: str, n_bytes: int) -> str | None:
    try:
        rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    except csv.Error:
        return None
    rows = [r for r in rows if r]
    if not rows:
        return None
    header, body = rows[0], rows[1:]
    kind = "TSV" if delimiter == "\t" else "CSV"
    out = [f"{kind} table, {len(body)} rows, {len(header)} columns, {_size(n_bytes)}"]
    columns = []
    for i, name in enumerate(header[:MAX_KEYS]):
        values = [r[i] for r in body[:200] if i < len(r)]
        columns.append(f"{name}: {_column_type(values)}")
    out.append("columns: " + ", ".join(columns))
    out.append("first records:")
    for row in body[:MAX_RECORDS]:
        out.append("  " + _clip(delimiter.join(row)))
    return "\n".join(out)


def _column_type(values: list[str]) -> str:
    present = [v for v in values if v.strip()]
    if not present:
        return "empty"
    for name, cast in (("int", int), ("float", float)):
        try:
            for v in present:
                cast(v)
        except ValueError:
            continue
        return name
    return "str"
