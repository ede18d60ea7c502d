"""Typed records of `Index.related` (the CLI's and MCP's JSON is their `to_dict()`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class GraphNode:
    """A symbol of the code graph (a chunk), a file, or an unresolved name (`resolved` False)."""

    id: str
    kind: str
    name: str  # qualname of a symbol, path of a file, the bare name otherwise
    path: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    signature: str | None = None
    resolved: bool = True
    depth: int | None = None  # hops from the symbol asked about (neighbours only)
    how: str | None = None  # how the edge was resolved (neighbours only)
    cell: int | None = None  # notebook cell: start_line/end_line count within it

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> GraphNode:
        return cls(
            id=record["id"],
            kind=record["kind"],
            name=record.get("qualname") or record.get("name") or "",
            path=record.get("path"),
            start_line=record.get("start_line"),
            end_line=record.get("end_line"),
            signature=record.get("signature"),
            resolved=record.get("resolved", True),
            depth=record.get("depth"),
            how=record.get("how"),
            cell=record.get("cell"),
        )

    @property
    def qualname(self) -> str:
        return self.name

    def to_dict(self) -> dict[str, Any]:
        if not self.resolved:
            out: dict[str, Any] = {"id": self.id, "kind": self.kind, "name": self.name}
            out["resolved"] = False
        elif self.kind == "file":
            out = {"id": self.id, "kind": "file", "path": self.path, "name": self.name}
        else:
            out = {"id": self.id, "kind": self.kind, "path": self.path, "qualname": self.name}
            out.update(start_line=self.start_line, end_line=self.end_line)
            out["signature"] = self.signature or ""
            if self.cell is not None:
                out["cell"] = self.cell
        if self.depth is not None:
            out.update(depth=self.depth, how=self.how)
        return out


@dataclass
class Related:
    """One symbol the target named, with its callers and/or callees."""

    symbol: GraphNode
    callers: list[GraphNode] | None = None  # None: not asked for
    callees: list[GraphNode] | None = None
    omitted: dict[str, int] = field(default_factory=dict)  # per direction, over the limit

    @classmethod
    def from_record(cls, entry: dict[str, Any]) -> Related:
        def nodes(way: str) -> list[GraphNode] | None:
            return [GraphNode.from_record(r) for r in entry[way]] if way in entry else None

        omitted = {
            way: entry[f"{way}_omitted"]
            for way in ("callers", "callees")
            if entry.get(f"{way}_omitted")
        }
        return cls(
            GraphNode.from_record(entry["symbol"]), nodes("callers"), nodes("callees"), omitted
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"symbol": self.symbol.to_dict()}
        for way, found in (("callers", self.callers), ("callees", self.callees)):
            if found is not None:
                out[way] = [n.to_dict() for n in found]
                if self.omitted.get(way):
                    out[f"{way}_omitted"] = self.omitted[way]
        return out
