"""Java facts: package, imports (static and on demand), superclasses and interfaces."""

from __future__ import annotations

import re
from typing import Any

from .model import FileGraph
from .syntax import all_of_types, class_at, text


def java_file(root: Any, data: bytes, fg: FileGraph, owner: list[str]) -> None:
    for child in root.named_children:
        if child.type == "package_declaration" and child.named_children:
            fg.package = text(child.named_children[0], data)
        elif child.type == "import_declaration":
            written = " ".join(text(child, data).split())
            m = re.match(r"import\s+(static\s+)?([\w.]+)(\.\*)?\s*;", written)
            if not m:
                continue
            target = m.group(2)
            if m.group(3):
                fg.imports.append([target, "*", ""])
            else:
                module, _, name = target.rpartition(".")
                fg.imports.append([module, name, name])
    for node in all_of_types(
        root, ("class_declaration", "interface_declaration", "enum_declaration")
    ):
        name = node.child_by_field_name("name")
        if name is None:
            continue
        cls = class_at(fg, owner, name, data)
        for part in node.named_children:
            if part.type in ("superclass", "super_interfaces", "extends_interfaces"):
                for base in all_of_types(part, ("type_identifier", "scoped_type_identifier"), 2):
                    fg.bases.append([cls, text(base, data)])
