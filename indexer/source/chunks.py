"""The chunk record: what the chunker produces and every later stage reads."""

from __future__ import annotations

from dataclasses import dataclass, fields
from json.decoder import JSONDecoder
from typing import Any

from ..digests import blake2b


@dataclass(frozen=True)
class Chunk:
    id: str
    path: str
    language: str
    kind: str  # function | method | class | module | section | text | cell | data
    symbol: str
    qualname: str
    signature: str
    docstring: str
    start_line: int  # 1-based, inclusive (within the cell for a notebook chunk)
    end_line: int
    start_byte: int
    end_byte: int
    blob: str
    text: str
    cell: int | None = None  # notebook cell (1-based, indexer/source/notebook.py); None elsewhere

    def to_dict(self) -> dict[str, Any]:
        # Every field is a scalar: a plain copy, not asdict's recursive one (a build calls this
        # once per chunk). The instance dict holds exactly the fields, in field order (the
        # dataclass's __init__ sets them in that order; frozen: nothing else is set).
        data = dict(self.__dict__)
        if data["cell"] is None:
            del data["cell"]  # records of other files stay as they were
        return data

    @classmethod
    def from_record(cls, line: bytes, text: str) -> Chunk:
        """The chunk a stored record (one `to_dict` as JSON) describes, with `text`: what
        `Chunk(**json.loads(line), text=text)` gives, in a third of the time (a search decodes
        each result's record: ~10 us of ~25 went to the keyword call and the frozen fields'
        `object.__setattr__`). A record with other fields raises TypeError, as that call would."""
        data = _decode(line.decode("utf-8"))[0]
        if type(data) is not dict:
            raise TypeError(f"a chunk record is a JSON object, not {type(data).__name__}")
        cell = data.pop("cell", None)
        data["text"] = text
        data["cell"] = cell  # the fields' order, as __init__ sets them (to_dict relies on it)
        if data.keys() != _FIELDS:
            raise TypeError(f"a chunk record's fields differ: {sorted(data.keys() ^ _FIELDS)}")
        chunk = object.__new__(cls)
        chunk.__dict__.update(data)
        return chunk


_FIELDS = frozenset(f.name for f in fields(Chunk))
_decode = JSONDecoder().raw_decode


def chunk_id(path: str, kind: str, qualname: str, ordinal: int) -> str:
    """Stable id: the same definition at the same path gets the same id in every build."""
    key = f"{path}\0{kind}\0{qualname}\0{ordinal}".encode()
    return blake2b(key, digest_size=8).hexdigest()


def materialize(records: list[dict[str, Any]], path: str, language: str, blob: str) -> list[Chunk]:
    """Chunks at `path`: ids are derived from the path, kind, qualified name and ordinal. A
    record may name its own language (a notebook's markdown cells)."""
    seen: dict[tuple[str, str], int] = {}
    chunks = []
    for r in records:
        key = (r["kind"], r["qualname"])
        ordinal = seen.get(key, 0)
        seen[key] = ordinal + 1
        fields = {"language": language, **r}
        chunks.append(
            Chunk(
                id=chunk_id(path, r["kind"], r["qualname"], ordinal),
                path=path,
                blob=blob,
                **fields,
            )
        )
    return chunks
