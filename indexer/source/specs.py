"""Hand-written tree-sitter specs: which node types are definitions in each language.

Languages without a spec here are chunked by the generic extractor (indexer/source/generic.py)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    grammar: str  # name in tree-sitter-language-pack
    functions: frozenset[str]
    containers: frozenset[str]
    # Nodes that wrap a definition and extend its range (decorators, export, template<>).
    wrappers: frozenset[str] = frozenset()
    # Non-definition nodes whose children are searched for definitions (namespaces in disguise).
    transparent: frozenset[str] = frozenset()
    # Variable declarations whose value is a function (`const f = () => {}`) are functions.
    function_values: frozenset[str] = frozenset()
    comment_types: frozenset[str] = field(default_factory=lambda: frozenset({"comment"}))
    python_docstrings: bool = False


def _fs(*names: str) -> frozenset[str]:
    return frozenset(names)


_JS_FUNCS = _fs(
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
    "function_signature",
    "abstract_method_signature",
)
_JS_CONTAINERS = _fs(
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "enum_declaration",
    "internal_module",
    "module",
    "type_alias_declaration",
)
_JS_COMMON = dict(
    wrappers=_fs("export_statement"),
    transparent=_fs("expression_statement", "ambient_declaration"),
    function_values=_fs("arrow_function", "function_expression", "function", "generator_function"),
)

SPECS: dict[str, LanguageSpec] = {
    spec.name: spec
    for spec in [
        LanguageSpec(
            "python",
            "python",
            _fs("function_definition"),
            _fs("class_definition"),
            wrappers=_fs("decorated_definition"),
            python_docstrings=True,
        ),
        LanguageSpec("javascript", "javascript", _JS_FUNCS, _JS_CONTAINERS, **_JS_COMMON),  # type: ignore[arg-type]
        LanguageSpec("typescript", "typescript", _JS_FUNCS, _JS_CONTAINERS, **_JS_COMMON),  # type: ignore[arg-type]
        LanguageSpec("tsx", "tsx", _JS_FUNCS, _JS_CONTAINERS, **_JS_COMMON),  # type: ignore[arg-type]
        LanguageSpec(
            "go",
            "go",
            _fs("function_declaration", "method_declaration"),
            _fs("type_declaration"),
        ),
        LanguageSpec(
            "rust",
            "rust",
            _fs("function_item", "function_signature_item", "macro_definition"),
            _fs("impl_item", "struct_item", "enum_item", "trait_item", "mod_item", "union_item"),
            comment_types=_fs("line_comment", "block_comment"),
        ),
        LanguageSpec(
            "java",
            "java",
            _fs("method_declaration", "constructor_declaration"),
            _fs(
                "class_declaration",
                "interface_declaration",
                "enum_declaration",
                "record_declaration",
                "annotation_type_declaration",
            ),
            comment_types=_fs("line_comment", "block_comment"),
        ),
        LanguageSpec(
            "c",
            "c",
            _fs("function_definition"),
            _fs("struct_specifier", "union_specifier", "enum_specifier"),
            wrappers=_fs("type_definition"),
            transparent=_fs("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif"),
        ),
        LanguageSpec(
            "cpp",
            "cpp",
            _fs("function_definition"),
            _fs(
                "class_specifier",
                "struct_specifier",
                "union_specifier",
                "enum_specifier",
                "namespace_definition",
            ),
            wrappers=_fs("template_declaration", "type_definition"),
            transparent=_fs(
                "preproc_if",
                "preproc_ifdef",
                "preproc_else",
                "preproc_elif",
                "linkage_specification",
                "declaration_list",
            ),
        ),
        LanguageSpec(
            "csharp",
            "csharp",
            _fs(
                "method_declaration",
                "constructor_declaration",
                "destructor_declaration",
                "operator_declaration",
                "local_function_statement",
            ),
            _fs(
                "class_declaration",
                "interface_declaration",
                "struct_declaration",
                "enum_declaration",
                "record_declaration",
                "namespace_declaration",
            ),
            transparent=_fs("file_scoped_namespace_declaration", "declaration_list"),
        ),
        LanguageSpec(
            "ruby",
            "ruby",
            _fs("method", "singleton_method"),
            _fs("class", "module", "singleton_class"),
        ),
        LanguageSpec(
            "php",
            "php",
            _fs("function_definition", "method_declaration"),
            _fs(
                "class_declaration",
                "interface_declaration",
                "trait_declaration",
                "enum_declaration",
            ),
        ),
        LanguageSpec(
            "kotlin",
            "kotlin",
            _fs("function_declaration", "secondary_constructor"),
            _fs("class_declaration", "object_declaration", "companion_object"),
            comment_types=_fs("line_comment", "multiline_comment", "comment"),
        ),
        LanguageSpec(
            "swift",
            "swift",
            _fs(
                "function_declaration",
                "init_declaration",
                "deinit_declaration",
                "protocol_function_declaration",
                "subscript_declaration",
            ),
            _fs("class_declaration", "protocol_declaration"),
            comment_types=_fs("comment", "multiline_comment"),
        ),
        LanguageSpec(
            "scala",
            "scala",
            _fs("function_definition", "function_declaration"),
            _fs("class_definition", "object_definition", "trait_definition", "enum_definition"),
            comment_types=_fs("comment", "block_comment"),
        ),
        LanguageSpec("bash", "bash", _fs("function_definition"), _fs()),
        LanguageSpec("lua", "lua", _fs("function_declaration"), _fs()),
        # Zig: `Decl` holds either a function (FnProto + Block) or a variable; containers are
        # recognised in the chunker by their `ContainerDecl` value.
        LanguageSpec(
            "zig",
            "zig",
            _fs("Decl", "TestDecl"),
            _fs(),
            comment_types=_fs("comment", "doc_comment", "container_doc_comment"),
        ),
    ]
}
