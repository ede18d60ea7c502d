"""Go facts: package name, imports, method receivers, embedded structs and interfaces."""

from __future__ import annotations

from typing import Any

from .model import FileGraph
from .syntax import all_of_types, class_at, matches, query, string_value, text


def go_file(
    root: Any, data: bytes, fg: FileGraph, owner: list[str], self_names: dict[str, str]
) -> None:
    for child in root.named_children:
        if child.type == "package_clause" and child.named_children:
            fg.package = text(child.named_children[0], data)
    for spec_node in all_of_types(root, ("import_spec",), 3):
        path_node = spec_node.child_by_field_name("path")
        if path_node is None:
            continue
        alias_node = spec_node.child_by_field_name("name")
        spec = string_value(path_node, data)
        alias = text(alias_node, data) if alias_node is not None else spec.rsplit("/", 1)[-1]
        fg.imports.append([spec, "", alias])
    compiled = query(
        "go",
        "(method_declaration receiver: (parameter_list (parameter_declaration"
        " name: (identifier) @rv)) name: (field_identifier) @m)",
    )
    for m in matches(compiled, root):
        line = m["m"][0].start_point[0] + 1
        if line < len(owner) and owner[line]:
            self_names[owner[line]] = text(m["rv"][0], data)
    compiled = query(
        "go",
        "(type_spec name: (type_identifier) @cls type: (struct_type (field_declaration_list"
        " (field_declaration !name type: (_) @base))))",
    )
    for m in matches(compiled, root):
        base = text(m["base"][0], data).lstrip("*")
        fg.bases.append([class_at(fg, owner, m["cls"][0], data), base])
    compiled = query(
        "go",
        "(type_spec name: (type_identifier) @cls type: (interface_type"
        " (type_elem (type_identifier) @base)))",
    )
    for m in matches(compiled, root):
        fg.bases.append([class_at(fg, owner, m["cls"][0], data), text(m["base"][0], data)])
