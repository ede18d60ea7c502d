"""JavaScript/TypeScript facts: imports (ES modules and require), default exports, class bases."""

from __future__ import annotations

from typing import Any

from .model import FileGraph
from .syntax import all_of_types, class_at, descendants, matches, query, string_value, text


def js_imports(root: Any, data: bytes, fg: FileGraph) -> None:
    for node in descendants(root, ("import_statement", "export_statement"), 1):
        source = node.child_by_field_name("source")
        if source is None:
            if node.type == "export_statement" and any(c.type == "default" for c in node.children):
                declaration = node.child_by_field_name("declaration") or node.child_by_field_name(
                    "value"
                )
                if declaration is not None:
                    named = declaration.child_by_field_name("name")
                    target = named if named is not None else declaration
                    if target.type in ("identifier", "type_identifier"):
                        fg.default = text(target, data)
            continue
        spec = string_value(source, data)
        bound = False
        for clause in node.named_children:
            if clause.type == "import_clause":
                for part in clause.named_children:
                    if part.type == "identifier":  # default import
                        fg.imports.append([spec, "default", text(part, data)])
                        bound = True
                    elif part.type == "namespace_import":
                        ident = part.named_children[-1] if part.named_children else None
                        if ident is not None:
                            fg.imports.append([spec, "", text(ident, data)])
                            bound = True
                    elif part.type == "named_imports":
                        for spec_node in part.named_children:
                            if spec_node.type != "import_specifier":
                                continue
                            name = text(spec_node.child_by_field_name("name"), data)
                            alias_node = spec_node.child_by_field_name("alias")
                            alias = text(alias_node, data) if alias_node is not None else name
                            fg.imports.append([spec, name, alias])
                            bound = True
            elif clause.type == "export_clause":  # export { x as y } from "./z"
                for spec_node in clause.named_children:
                    name = text(spec_node.child_by_field_name("name"), data)
                    alias_node = spec_node.child_by_field_name("alias")
                    alias = text(alias_node, data) if alias_node is not None else name
                    fg.imports.append([spec, name, alias])
                    bound = True
        if not bound:
            fg.imports.append([spec, "*" if node.type == "export_statement" else "", ""])
    compiled = query(
        fg.language,
        "(variable_declarator name: (_) @lhs value: (call_expression function: (identifier) @fn"
        ' arguments: (arguments . (string) @src)) (#eq? @fn "require"))',
    )
    for m in matches(compiled, root):
        spec = string_value(m["src"][0], data)
        lhs = m["lhs"][0]
        if lhs.type == "identifier":
            fg.imports.append([spec, "", text(lhs, data)])
        elif lhs.type == "object_pattern":
            for part in lhs.named_children:
                if part.type == "shorthand_property_identifier_pattern":
                    fg.imports.append([spec, text(part, data), text(part, data)])
                elif part.type == "pair_pattern":
                    key, value = part.child_by_field_name("key"), part.child_by_field_name("value")
                    if key is not None and value is not None:
                        fg.imports.append([spec, text(key, data), text(value, data)])


def js_bases(root: Any, data: bytes, fg: FileGraph, owner: list[str]) -> None:
    for node in all_of_types(
        root,
        ("class_declaration", "abstract_class_declaration", "class", "interface_declaration"),
    ):
        name = node.child_by_field_name("name")
        if name is None:
            continue
        cls = class_at(fg, owner, name, data)
        for part in node.named_children:
            if part.type not in ("class_heritage", "extends_type_clause"):
                continue
            for clause in [part, *part.named_children]:
                for base in clause.named_children:
                    if base.type in (
                        "identifier",
                        "type_identifier",
                        "member_expression",
                        "nested_type_identifier",
                    ):
                        fg.bases.append([cls, text(base, data)])
                    elif base.type == "generic_type" and base.named_children:
                        fg.bases.append([cls, text(base.named_children[0], data)])
