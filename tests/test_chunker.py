from indexer.source.chunker import MAX_CHUNK_LINES, chunk_file

from .conftest import GO_SERVER, JS_CART, PYTHON_BILLING, README, RUST_LIB


def by_qualname(chunks):  # type: ignore[no-untyped-def]
    return {c.qualname: c for c in chunks}


def test_python_functions_methods_and_class_summary() -> None:
    chunks = chunk_file("billing/invoice.py", "python", "b1", PYTHON_BILLING.encode())
    named = by_qualname(chunks)
    assert named["format_money"].kind == "function"
    assert named["InvoiceCalculator.subtotal"].kind == "method"
    assert named["InvoiceCalculator.subtotal"].docstring == "Sum of all line amounts before tax."
    cls = named["InvoiceCalculator"]
    assert cls.kind == "class"
    assert cls.docstring == "Adds up invoice lines and applies tax."
    # Header, docstring and member signatures, not a copy of every method body.
    assert "def total_with_tax(self) -> decimal.Decimal:" in cls.text
    assert "quantize" not in cls.text
    assert "rounding = decimal.ROUND_HALF_UP" in cls.text
    assert cls.signature == "class InvoiceCalculator"


def test_module_level_code_is_kept() -> None:
    chunks = chunk_file("billing/invoice.py", "python", "b1", PYTHON_BILLING.encode())
    module = [c for c in chunks if c.kind == "module"]
    assert module, "imports and constants must be chunked"
    assert any("TAX_RATE = decimal.Decimal" in c.text for c in module)
    assert any("import decimal" in c.text for c in module)


def test_chunk_records_have_positions_and_ids() -> None:
    data = PYTHON_BILLING.encode()
    chunks = chunk_file("billing/invoice.py", "python", "blob9", data)
    fm = by_qualname(chunks)["format_money"]
    lines = PYTHON_BILLING.splitlines()
    assert lines[fm.start_line - 1].startswith("def format_money")
    assert fm.end_line == len(lines)
    assert data[fm.start_byte : fm.end_byte].decode().startswith("def format_money")
    assert fm.blob == "blob9" and fm.language == "python" and len(fm.id) == 16
    assert len({c.id for c in chunks}) == len(chunks)


def test_ids_are_stable_and_independent_of_line_shifts() -> None:
    first = by_qualname(chunk_file("a.py", "python", "x", PYTHON_BILLING.encode()))
    shifted = by_qualname(chunk_file("a.py", "python", "y", ("\n\n" + PYTHON_BILLING).encode()))
    assert first["format_money"].id == shifted["format_money"].id
    assert first["format_money"].start_line + 2 == shifted["format_money"].start_line


def test_javascript_arrow_functions_classes_methods() -> None:
    named = by_qualname(chunk_file("web/cart.js", "javascript", "b", JS_CART.encode()))
    assert named["ShoppingCart"].kind == "class"
    assert named["ShoppingCart.addItem"].kind == "method"
    assert named["emptyCart"].kind == "function"
    assert named["parseQueryString"].docstring == ""
    modules = [
        c
        for c in chunk_file("web/cart.js", "javascript", "b", JS_CART.encode())
        if c.kind == "module"
    ]
    assert any("Shopping cart for the storefront" in c.text for c in modules)
    assert any("module.exports" in c.text for c in modules)


def test_go_method_is_qualified_by_receiver_and_keeps_doc_comment() -> None:
    named = by_qualname(chunk_file("server/health.go", "go", "b", GO_SERVER.encode()))
    method = named["HealthChecker.ServeHTTP"]
    assert method.kind == "method"
    assert method.docstring == "ServeHTTP reports whether the service is ready."
    assert method.text.startswith("// ServeHTTP")
    assert named["HealthChecker"].kind == "class"


def test_rust_impl_methods() -> None:
    named = by_qualname(chunk_file("src/ring.rs", "rust", "b", RUST_LIB.encode()))
    assert named["RingBuffer.push_overwrite"].kind == "method"
    assert named["RingBuffer"].kind == "class"


def test_many_languages_produce_definitions() -> None:
    samples = {
        "java": ("A.java", "class A { void run() { int x = 1; } }\n", "A.run"),
        "c": ("a.c", "int add(int a, int b) { return a + b; }\n", "add"),
        "cpp": ("a.cpp", "namespace n { class C { void m() {} }; }\n", "n.C.m"),
        "csharp": ("a.cs", "class C { public void M() {} }\n", "C.M"),
        "ruby": ("a.rb", "class C\n  def m\n  end\nend\n", "C.m"),
        "php": ("a.php", "<?php\nclass C { public function m() {} }\n", "C.m"),
        "kotlin": ("a.kt", "class C {\n    fun m() {\n    }\n}\n", "C.m"),
        "swift": ("a.swift", "class C { func m() {} }\n", "C.m"),
        "scala": ("a.scala", "object O { def m(): Int = 1 }\n", "O.m"),
        "bash": ("a.sh", "deploy() {\n  echo hi\n}\n", "deploy"),
        "typescript": (
            "a.ts",
            "export interface I { a: number }\nexport function f(): void {}\n",
            "f",
        ),
        "tsx": ("a.tsx", "export const App = () => <div/>;\n", "App"),
        "lua": ("a.lua", "function greet(name)\n  print(name)\nend\n", "greet"),
        "zig": ("a.zig", "pub fn main() void {}\n", "main"),
    }
    for language, (path, source, qualname) in samples.items():
        names = {c.qualname for c in chunk_file(path, language, "b", source.encode())}
        assert qualname in names, (language, names)


def test_oversized_function_is_split_at_statements_with_signature() -> None:
    body = "\n".join(f"    value_{i} = compute({i})" for i in range(MAX_CHUNK_LINES * 2))
    source = f"def huge_function(a, b):\n{body}\n"
    parts = [
        c
        for c in chunk_file("h.py", "python", "b", source.encode())
        if c.qualname == "huge_function"
    ]
    assert len(parts) >= 2
    assert all(p.end_line - p.start_line < MAX_CHUNK_LINES for p in parts)
    assert parts[1].text.startswith("def huge_function(a, b):")
    assert parts[0].start_line == 1 and parts[-1].end_line == MAX_CHUNK_LINES * 2 + 1
    assert len({p.id for p in parts}) == len(parts)


def test_syntax_errors_still_chunk() -> None:
    source = b"def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass Fine:\n    pass\n"
    names = {c.qualname for c in chunk_file("bad.py", "python", "b", source)}
    assert "ok" in names and "Fine" in names


def test_markdown_split_by_heading() -> None:
    chunks = chunk_file("README.md", "markdown", "b", README.encode())
    assert [c.symbol for c in chunks] == ["Storefront", "Installing"]
    assert all(c.kind == "section" for c in chunks)


def test_text_windows_overlap_and_are_bounded() -> None:
    text = "\n".join(f"line {i}" for i in range(200)).encode()
    chunks = chunk_file("notes.txt", "text", "b", text)
    assert len(chunks) >= 3
    assert all(c.end_line - c.start_line < 60 for c in chunks)
    assert chunks[1].start_line <= chunks[0].end_line  # overlap


def test_empty_file_gives_no_chunks() -> None:
    assert chunk_file("empty.py", "python", "b", b"") == []


def test_a_chunk_record_holds_its_fields_in_field_order() -> None:
    """Metadata lines (and so the stored bytes and their sums) follow the field order; `cell`
    appears only for notebook chunks."""
    from dataclasses import fields, replace

    from indexer.source.chunks import Chunk

    chunk = chunk_file("billing/invoice.py", "python", "b" * 40, PYTHON_BILLING.encode())[0]
    names = [f.name for f in fields(Chunk)]
    assert list(chunk.to_dict()) == [n for n in names if n != "cell"]
    assert chunk.to_dict() == {n: getattr(chunk, n) for n in names if n != "cell"}
    in_cell = replace(chunk, cell=3)
    assert list(in_cell.to_dict()) == names and in_cell.to_dict()["cell"] == 3
