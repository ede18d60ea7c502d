"""Code graph: imports, calls and inheritance resolved on small real multi-file projects."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from indexer import Index, build_index
from indexer.errors import IndexerError
from indexer.index.graph import CodeGraph, GraphRanker, extract_file

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


def test_graph_is_plain_data_and_rebuilds_from_its_files(poly_repo: Path) -> None:
    index = Index.open(poly_repo)
    # Each segment stores its files' facts as gzipped JSON; the graph is resolved from them.
    (facts,) = [n for n in index.manifest["files"] if n.endswith("/graph_facts.json.gz")]
    segments = index.snapshot.parent.parent / "segments"
    stored = json.loads(gzip.decompress((segments / facts).read_bytes()))
    assert set(stored) == {f["path"] for f in index.files}
    graph = index.graph
    assert graph.ids and graph.edges.dtype == np.int32 and graph.edges.shape[1] == 4
    again = CodeGraph.from_files(graph.files)
    assert again.ids == graph.ids and np.array_equal(again.edges, graph.edges)
    assert set(graph.files) == {f["path"] for f in index.files}
    assert index.status()["files"][facts] > 0


def test_replacing_one_file_updates_its_edges(poly_repo: Path) -> None:
    graph = Index.open(poly_repo).graph
    index = Index.open(poly_repo)
    chunks = [
        index.chunk_at(i)
        for i in range(len(index))
        if index.chunk_at(i, with_text=False).path == "shop/tax.py"
    ]
    new_text = b"def vat(amount):\n    return round_cents(amount * 0.2)\n"
    updated = graph.replace_files(
        {"shop/tax.py": extract_file("shop/tax.py", "python", new_text, chunks)}
    )
    vat = updated.find("shop/tax.py::vat")[0]
    assert ("name:round_cents", "CALLS", "unresolved") in updated.out_edges(vat)
    gone = graph.replace_files({"shop/util/helpers.py": None})
    apply = gone.find("apply_discount")[0]
    assert ("name:clamp", "CALLS", "unresolved") in gone.out_edges(apply)


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
    # The PageRank prior maps every row to its graph node.
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


def test_write_graph_reuses_unchanged_files_from_a_base_snapshot(
    poly_repo: Path, tmp_path: Path
) -> None:
    from indexer.index.graph import write_graph

    index = Index.open(poly_repo)
    chunks = [index.chunk_at(i) for i in range(len(index))]
    files = [f["path"] for f in index.files]
    blob_of = {f["path"]: f["blob"] for f in index.files}
    repo_path = index.manifest["repo_root"]
    out = tmp_path / "g"
    out.mkdir()
    # A base whose stored contribution for tax.py is recognisably different: it is reused
    # because the blob matches, and every other file is reused too.
    base = CodeGraph.from_files(dict(index.graph.files))
    base.files["shop/tax.py"].calls.append(["vat", "marker_call", "", 1])
    base_dir = tmp_path / "base"
    base_dir.mkdir()
    base.save(base_dir)
    graph = write_graph(out, repo_path, files, blob_of, chunks, jobs=1, base=base_dir)
    vat = graph.find("shop/tax.py::vat")[0]
    assert ("name:marker_call", "CALLS", "unresolved") in graph.out_edges(vat)
    blob_of["shop/tax.py"] = blob_of["shop/models.py"]  # a changed blob is parsed again
    graph = write_graph(out, repo_path, files, blob_of, chunks, jobs=1, base=base_dir)
    assert ("name:marker_call", "CALLS", "unresolved") not in graph.out_edges(vat)


def test_incremental_update_replaces_only_the_changed_files_graph(poly_repo: Path) -> None:
    from indexer.index.build import update_index

    from .conftest import commit_all, write_files

    write_files(
        poly_repo,
        {
            "shop/tax.py": "def vat(amount):\n    return round_cents(amount)\n\n\n"
            "def round_cents(x):\n    return round(x, 2)\n"
        },
    )
    commit_all(poly_repo, "tax rounds")
    report = update_index(poly_repo, progress=False)
    assert report.mode == "incremental"
    updated_index = Index.open(poly_repo)
    updated = updated_index.graph
    vat = updated.find("shop/tax.py::vat")[0]
    assert [updated.node(d)["qualname"] for d, t, _ in updated.out_edges(vat) if t == "CALLS"] == [
        "round_cents"
    ]
    # Same graph as a full build of the same commit.
    build_index(poly_repo, progress=False)
    full_index = Index.open(poly_repo)
    full = full_index.graph
    assert full.ids == updated.ids and np.array_equal(full.edges, updated.edges)
    # The ranking arrays too.
    updated_rows = GraphRanker(updated_index).row_node
    full_rows = GraphRanker(full_index).row_node
    assert len(full_rows) == len(full_index) and np.array_equal(updated_rows, full_rows)
