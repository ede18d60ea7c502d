"""Code graph: imports, calls and inheritance resolved on small real multi-file projects."""

from __future__ import annotations

import itertools
import json
import zlib
from pathlib import Path

import numpy as np
import pytest

from indexer import Index, build_index
from indexer.errors import IndexerError
from indexer.index.graph import CodeGraph, extract_file

from .conftest import MakeRepo, run_cli

PY_FILES: dict[str, str | bytes] = {
    "shop/__init__.py": "from .pricing import apply_discount as discount\n",
    "shop/pricing.py": '''"""Prices."""
from . import tax
from .util import helpers as h


def apply_discount(amount, rate):
    """Lower a price by a rate."""
    return h.clamp(amount * (1 - rate)) + tax.vat(amount)
''',
    "shop/tax.py": "def vat(amount):\n    return amount * 0.2\n",
    "shop/util/__init__.py": "",
    "shop/util/helpers.py": "def clamp(x):\n    return max(0, x)\n",
    "shop/cart.py": """import shop.pricing
from shop import discount
from .models import Item as ItemModel


class BaseCart:
    def total(self):
        return sum(self.prices())

    def prices(self):
        return []


class Cart(BaseCart):
    def checkout(self, rate):
        item = ItemModel()
        self.validate()
        return discount(self.total(), rate) + shop.pricing.apply_discount(1, rate)

    def validate(self):
        return True
""",
    "shop/models.py": "class Item:\n    pass\n",
}

JS_FILES: dict[str, str | bytes] = {
    "web/src/format.ts": """export function formatPrice(value: number): string {
  return value.toFixed(2);
}
export default function slug(s: string): string { return s.toLowerCase(); }
""",
    "web/src/index.ts": 'export { formatPrice as fmt } from "./format";\n',
    "web/src/widget.ts": """import makeSlug from "./format";
import { fmt } from "./index";
import * as ns from "./format";
const legacy = require("./legacy");

export class Base {
  render(): string { return ""; }
}

export class PriceWidget extends Base {
  show(v: number): string {
    this.render();
    legacy.oldPrice(v);
    return fmt(v) + makeSlug("x") + ns.formatPrice(v);
  }
}
""",
    "web/src/legacy.js": "function oldPrice(v) { return v; }\nmodule.exports = { oldPrice };\n",
}

GO_FILES: dict[str, str | bytes] = {
    "go.mod": "module example.com/app\n",
    "util/strings.go": "package util\n\nfunc Reverse(s string) string { return s }\n",
    "server/server.go": """package server

import (
\tu "example.com/app/util"
)

type Base struct{}

func (b *Base) Log(msg string) {}

type Server struct {
\tBase
\tname string
}

func (s *Server) Handle() string {
\ts.Log("x")
\treturn helper(u.Reverse(s.name))
}
""",
    "server/helper.go": "package server\n\nfunc helper(s string) string { return s }\n",
}

JAVA_FILES: dict[str, str | bytes] = {
    "src/main/java/com/acme/util/Strings.java": """package com.acme.util;

public class Strings {
    public static String trim(String s) { return s.trim(); }
}
""",
    "src/main/java/com/acme/app/Animal.java": """package com.acme.app;

public class Animal {
    public String sound() { return ""; }
}
""",
    "src/main/java/com/acme/app/Dog.java": """package com.acme.app;

import com.acme.util.Strings;

public class Dog extends Animal {
    public String bark() {
        String s = this.sound();
        return Strings.trim(describe(s));
    }
    private String describe(String s) { return s; }
}
""",
}

RUBY_FILES: dict[str, str | bytes] = {
    "lib/greeter.rb": """class Greeter
  def greet(name)
    format_name(name)
  end

  def format_name(name)
    name.capitalize
  end
end
""",
}


@pytest.fixture
def poly_repo(make_repo: MakeRepo) -> Path:
    root = make_repo({**PY_FILES, **JS_FILES, **GO_FILES, **JAVA_FILES, **RUBY_FILES})
    build_index(root, progress=False)
    return root


def callees(index: Index, symbol: str) -> dict[str, str]:
    """qualname (or name:X for unresolved) -> how it was resolved, for depth-1 callees."""
    out = {}
    for r in index.related(symbol, direction="callees")[0].callees or []:
        out[r.qualname if r.resolved else f"name:{r.name}"] = r.how or ""
    return out


def test_python_relative_aliased_and_self_calls(poly_repo: Path) -> None:
    index = Index.open(poly_repo)
    got = callees(index, "Cart.checkout")
    assert got["Item"] == "import"  # from .models import Item as ItemModel
    assert got["Cart.validate"] == "self"
    assert got["BaseCart.total"] == "self"  # inherited through self
    assert got["apply_discount"] == "import"  # re-exported by shop/__init__ under an alias
    got = callees(index, "apply_discount")
    assert got["clamp"] == "import"  # from .util import helpers as h; h.clamp
    assert got["vat"] == "import"  # from . import tax; tax.vat
    graph = index.graph
    cart = graph.find("shop/cart.py::Cart")[0]
    bases = [graph.node(d)["qualname"] for d, t, _ in graph.out_edges(cart) if t == "INHERITS"]
    assert bases == ["BaseCart"]
    imports = {d for d, t, _ in graph.out_edges("file:shop/cart.py") if t == "IMPORTS"}
    assert {"file:shop/pricing.py", "file:shop/__init__.py", "file:shop/models.py"} <= imports


def test_typescript_imports_reexports_require_and_this(poly_repo: Path) -> None:
    index = Index.open(poly_repo)
    got = callees(index, "PriceWidget.show")
    assert got["formatPrice"] == "import"  # both `fmt` (via index.ts) and ns.formatPrice
    assert got["slug"] == "import"  # default import under another name
    assert got["oldPrice"] == "import"  # require()
    assert got["Base.render"] == "self"  # this.render() inherited from Base
    graph = index.graph
    widget = graph.find("PriceWidget")[0]
    assert [
        graph.node(d)["qualname"] for d, t, _ in graph.out_edges(widget) if t == "INHERITS"
    ] == ["Base"]


def test_go_packages_receivers_and_embedding(poly_repo: Path) -> None:
    index = Index.open(poly_repo)
    got = callees(index, "Server.Handle")
    assert got["Reverse"] == "import"  # aliased import of example.com/app/util
    assert got["helper"] == "package"  # same package, other file
    assert got["Base.Log"] == "self"  # s.Log() through the embedded Base


def test_java_imports_inheritance_and_this(poly_repo: Path) -> None:
    index = Index.open(poly_repo)
    got = callees(index, "Dog.bark")
    assert got["Animal.sound"] == "self"  # this.sound() inherited from Animal (same package)
    assert got["Strings.trim"] == "import"
    assert got["Dog.describe"] == "class"


def test_other_languages_get_definitions_and_name_references(poly_repo: Path) -> None:
    index = Index.open(poly_repo)
    got = callees(index, "Greeter.greet")
    assert "Greeter.format_name" in got or "name:format_name" in got
    callers = index.related("Greeter.format_name", direction="callers")[0].callers or []
    assert [c.qualname for c in callers] == ["Greeter.greet"]


def test_callers_and_depth(poly_repo: Path) -> None:
    index = Index.open(poly_repo)
    one = index.related("clamp", direction="callers", depth=1)[0].callers or []
    assert [c.qualname for c in one] == ["apply_discount"]
    two = index.related("clamp", direction="callers", depth=2)[0].callers or []
    assert {c.qualname for c in two} >= {"apply_discount", "Cart.checkout"}
    assert all(c.depth in (1, 2) for c in two)
    # A chunk id works as well as a name, and every symbol result is a chunk `show` can print.
    chunk_id = index.search("clamp", k=1)[0].id
    by_id = index.related(chunk_id, direction="callers")[0].callers
    assert by_id == one
    assert index.show(one[0].id).qualname == "apply_discount"
    # Typed records; their dicts are the CLI's JSON.
    proc = run_cli("related", "clamp", "--callers", "--json", cwd=poly_repo)
    assert json.loads(proc.stdout) == [e.to_dict() for e in index.related("clamp", "callers")]


def test_unknown_symbol_is_a_clear_error(poly_repo: Path) -> None:
    index = Index.open(poly_repo)
    with pytest.raises(IndexerError, match="no symbol"):
        index.related("no_such_function_anywhere")


def test_graph_facts_are_plain_data_one_block_per_file(poly_repo: Path) -> None:
    from indexer.index.graph import read_facts

    index = Index.open(poly_repo)
    ((segment, deleted),) = index.graph_segments()  # a full build: one segment
    assert isinstance(segment, Path) and not deleted
    meta = json.loads((segment / "graph_facts.json").read_text(encoding="utf-8"))
    assert meta["paths"] == sorted(f["path"] for f in index.files)
    blocks = (segment / "graph_facts_z.bin").read_bytes()
    offsets = np.load(segment / "graph_facts_offsets.npy", allow_pickle=False).tolist()
    assert len(offsets) == len(meta["paths"]) + 1 and offsets[-1] == len(blocks)
    lines = [zlib.decompress(blocks[a:b]) for a, b in itertools.pairwise(offsets)]
    assert all(line.endswith(b"\n") and json.loads(line.partition(b"\t")[0]) for line in lines)
    keys = np.load(segment / "graph_facts_keys.npy", allow_pickle=False)
    assert keys.dtype == np.int64 and np.all(np.diff(keys) >= 0)
    facts = read_facts(segment)
    files = {p: facts.file(i) for i, p in enumerate(facts.paths)}
    assert files["shop/tax.py"].symbols[0][1] == "vat"
    # The whole graph is the stored facts resolved: nothing else is stored.
    graph = CodeGraph.from_files(files)
    assert graph.ids == index.graph.ids and np.array_equal(graph.edges, index.graph.edges)
    assert not [n for n in index.manifest["files"] if "graph" in n and "graph_facts" not in n]


def test_replacing_one_file_updates_its_edges(poly_repo: Path) -> None:
    from indexer.index.graph import read_facts

    index = Index.open(poly_repo)
    facts = read_facts(index.graph_segments()[0][0])  # type: ignore[arg-type]
    files = {p: facts.file(i) for i, p in enumerate(facts.paths)}
    chunks = [
        index.chunk_at(i)
        for i in range(len(index))
        if index.chunk_at(i, with_text=False).path == "shop/tax.py"
    ]
    new_text = b"def vat(amount):\n    return round_cents(amount * 0.2)\n"
    files["shop/tax.py"] = extract_file("shop/tax.py", "python", new_text, chunks)
    updated = CodeGraph.from_files(files)
    vat = updated.find("shop/tax.py::vat")[0]
    assert ("name:round_cents", "CALLS", "unresolved") in updated.out_edges(vat)
    del files["shop/util/helpers.py"]
    gone = CodeGraph.from_files(files)
    apply = gone.find("apply_discount")[0]
    assert ("name:clamp", "CALLS", "unresolved") in gone.out_edges(apply)


def test_extraction_takes_an_already_parsed_tree(poly_repo: Path) -> None:
    from indexer.source.treenodes import parser

    index = Index.open(poly_repo)
    path = "shop/pricing.py"
    rows = [i for i in range(len(index)) if index.chunk_at(i, with_text=False).path == path]
    chunks = [index.chunk_at(i) for i in rows]
    data = (poly_repo / path).read_bytes()
    tree = parser("python").parse(data)
    parsed = extract_file(path, "python", data, chunks, tree=tree)
    assert parsed == extract_file(path, "python", data, chunks)
    assert ["apply_discount", "clamp", "h", 8] in parsed.calls
    broken = extract_file(path, "python", b"def (((", chunks)
    assert [s[1] for s in broken.symbols] == ["apply_discount"] and not broken.calls


def test_related_cli_json(poly_repo: Path) -> None:
    proc = run_cli("related", "Cart.checkout", "--callees", "--json", cwd=poly_repo)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data[0]["symbol"]["qualname"] == "Cart.checkout"
    assert "Cart.validate" in {c.get("qualname") for c in data[0]["callees"]}
    proc = run_cli("related", "nothing_like_this", cwd=poly_repo)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_graph_signals_in_ranking_are_switchable(poly_repo: Path, tmp_path: Path) -> None:
    from indexer.search.fusion import FusionConfig

    plain = Index.open(poly_repo)
    off = [r.id for r in plain.search("apply discount to the cart total", k=10, log=False)]
    for signal in ("expand", "ppr", "file_boost"):
        fusion = FusionConfig.from_dict({"graph": {signal: 1.0}})
        index = Index.open(poly_repo, fusion=fusion)
        ids = [r.id for r in index.search("apply discount to the cart total", k=10, log=False)]
        assert ids and set(ids) <= {
            index.chunk_at(i, with_text=False).id for i in range(len(index))
        }
        assert len(ids) == len(set(ids))
    assert off
    # The PageRank prior maps every row to its node (its symbol, else its file).
    from indexer.index.graph.rank import GraphRanker

    prior = Index.open(poly_repo, fusion=FusionConfig.from_dict({"graph": {"ppr": 0.5}}))
    assert prior.search("apply discount to the cart total", k=10, log=False)
    rows = GraphRanker(plain).row_node
    assert len(rows) == len(plain)
    graph = plain.graph
    for row, node in enumerate(rows.tolist()):
        chunk = plain.chunk_at(row, with_text=False)
        expected = graph.chunk_node.get(chunk.id, chunk.id)
        if graph.columns["kind"][node] == "file":
            assert graph.ids[node] == f"file:{chunk.path}"
        else:
            assert graph.ids[node] == expected
    with pytest.raises(IndexerError, match=r"graph\.ppr"):
        FusionConfig.from_dict({"graph": {"ppr": -1}})


def test_a_view_over_segments_hides_deleted_paths(poly_repo: Path, tmp_path: Path) -> None:
    """Two segments, the newer serving tax.py again: the view equals one merged segment."""
    from indexer.index.graph import FactsView, write_facts

    index = Index.open(poly_repo)
    files = FactsView(index.graph_segments()).files()
    old_dir, new_dir, merged_dir = (tmp_path / n for n in ("old", "new", "merged"))
    for d in (old_dir, new_dir, merged_dir):
        d.mkdir()
    write_facts(old_dir, files.values())
    tax = files["shop/tax.py"]
    tax.calls.append(["vat", "clamp", "", 2])
    write_facts(new_dir, [tax])
    view = FactsView([(old_dir, {"shop/tax.py", "shop/models.py"}), (new_dir, ())])
    assert "shop/models.py" not in view.paths and view.file("shop/tax.py").calls[-1][1] == "clamp"
    del files["shop/models.py"]
    write_facts(merged_dir, files.values())
    merged = CodeGraph.from_source(FactsView([(merged_dir, ())]))
    split = CodeGraph.from_source(view)
    assert split.ids == merged.ids and np.array_equal(split.edges, merged.edges)
    # The newer segment in memory (the working-tree overlay): the same view.
    overlay = FactsView([(old_dir, {"shop/tax.py", "shop/models.py"}), ([tax], ())])
    in_memory = CodeGraph.from_source(overlay)
    assert in_memory.ids == merged.ids and np.array_equal(in_memory.edges, merged.edges)
    assert view.definitions("Item") == [] and view.definitions("vat") == [
        ("shop/tax.py", "function")
    ]


def test_incremental_updates_answer_related_exactly_as_full_builds(
    poly_repo: Path, tmp_path: Path
) -> None:
    """Commit changes that move definitions, aliases and imports between files; after each
    update, every symbol's callers and callees (depth 2) equal those of a full build and of the
    whole resolved graph."""
    from indexer.index.build import update_index
    from indexer.index.graph import FactsView
    from indexer.index.graph.related import GraphQuery, facts_view

    from .conftest import commit_all, write_files

    steps: list[dict[str, str | None]] = [
        {
            "shop/tax.py": "def vat(amount):\n    return round_cents(amount)\n\n\n"
            "def round_cents(x):\n    return round(x, 2)\n"
        },
        {  # clamp moves: helpers re-exports it, the old callers resolve through the alias
            "shop/util/helpers.py": "from .bounds import clamp as clamp\n",
            "shop/util/bounds.py": "def clamp(x):\n    return max(0, round_cents(x))\n",
            "shop/models.py": "class Item:\n    def price(self):\n        return clamp(1)\n",
        },
        {  # a second definition makes round_cents ambiguous by name; a file disappears
            "shop/extra.py": "def round_cents(x):\n    return x\n",
            "shop/cart.py": None,
            "web/src/format.ts": "export default function slug(s: string): string {\n"
            "  return s;\n}\n",
        },
    ]
    for number, step in enumerate(steps):
        write_files(poly_repo, {p: t for p, t in step.items() if t is not None})
        for path in [p for p, t in step.items() if t is None]:
            (poly_repo / path).unlink()
        commit_all(poly_repo, f"step {number}")
        assert update_index(poly_repo, progress=False).mode == "incremental"
        updated = Index.open(poly_repo)
        full_dir = tmp_path / f"full{number}"
        build_index(poly_repo, index_dir=full_dir, progress=False)
        full = Index.open(poly_repo, index_dir=full_dir)
        # The update's new segment holds the changed files' facts: the live facts are a full
        # build's.
        assert (
            FactsView(updated.graph_segments()).files() == FactsView(full.graph_segments()).files()
        )
        graph = full.graph
        query = GraphQuery(facts_view(updated))
        nodes = [n for n in graph.ids if not n.startswith(("name:", "module:"))]
        assert len(nodes) > 20
        for node in nodes:
            for way in ("callers", "callees"):
                expected = graph.neighbours(node, way, depth=2)
                assert query.neighbours(node, way, depth=2) == expected, (node, way)
            key = node[5:] if node.startswith("file:") else node
            assert updated.related(key, depth=2) == full.related(key, depth=2)
        for name in ("clamp", "round_cents", "slug", "vat", "Item.price", "shop/tax.py"):
            assert query.find(name) == graph.find(name)
