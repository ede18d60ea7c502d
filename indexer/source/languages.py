"""Which files are which language: a tree-sitter grammar, a text format, or plain text.

Every text file is indexed: a file whose name matches nothing here is chunked as plain text
windows ("text"); only known binary formats are left out by name (binary content is caught later
by `gitsource.content_skip_reason`). Secret-looking files are deliberately not named here.
"""

from __future__ import annotations

from functools import cache
from pathlib import PurePosixPath

from .specs import SPECS, LanguageSpec

__all__ = ["SPECS", "LanguageSpec", "detect_language", "grammar_of", "is_code", "pack_grammars"]

# Languages with a hand-written spec (indexer/source/specs.py).
EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "cpp",  # C++ grammar parses C headers well and also C++ headers
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".ipp": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".php": "php",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".lua": "lua",
    ".zig": "zig",
}

# Grammars of tree-sitter-language-pack chunked by the generic extractor (source/generic.py):
# the language name is the grammar's name.
GRAMMAR_EXTENSIONS: dict[str, str] = {
    ".ex": "elixir",
    ".exs": "elixir",
    ".heex": "heex",
    ".hs": "haskell",
    ".lhs": "haskell",
    ".ml": "ocaml",
    ".mli": "ocaml_interface",
    ".erl": "erlang",
    ".hrl": "erlang",
    ".clj": "clojure",
    ".cljs": "clojure",
    ".cljc": "clojure",
    ".dart": "dart",
    ".r": "r",
    ".jl": "julia",
    ".pl": "perl",
    ".pm": "perl",
    ".m": "objc",
    ".mm": "objc",
    ".elm": "elm",
    ".nim": "nim",
    ".nims": "nim",
    ".sol": "solidity",
    ".vue": "vue",
    ".svelte": "svelte",
    ".astro": "astro",
    ".hcl": "hcl",
    ".tf": "terraform",
    ".sql": "sql",
    ".proto": "proto",
    ".graphql": "graphql",
    ".gql": "graphql",
    ".cmake": "cmake",
    ".mk": "make",
    ".f": "fortran",
    ".for": "fortran",
    ".f90": "fortran",
    ".f95": "fortran",
    ".f03": "fortran",
    ".f08": "fortran",
    ".groovy": "groovy",
    ".gradle": "groovy",
    ".ps1": "powershell",
    ".psm1": "powershell",
    ".gleam": "gleam",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    ".fsi": "fsharp_signature",
    ".lisp": "commonlisp",
    ".cl": "commonlisp",
    ".el": "elisp",
    ".scm": "scheme",
    ".ss": "scheme",
    ".rkt": "racket",
    ".janet": "janet",
    ".fnl": "fennel",
    ".d": "d",
    ".adb": "ada",
    ".ads": "ada",
    ".pas": "pascal",
    ".hx": "haxe",
    ".v": "verilog",
    ".sv": "verilog",
    ".svh": "verilog",
    ".vhd": "vhdl",
    ".vhdl": "vhdl",
    ".tcl": "tcl",
    ".cu": "cuda",
    ".cuh": "cuda",
    ".glsl": "glsl",
    ".vert": "glsl",
    ".frag": "glsl",
    ".hlsl": "hlsl",
    ".wgsl": "wgsl",
    ".odin": "odin",
    ".ha": "hare",
    ".cairo": "cairo",
    ".clar": "clarity",
    ".gd": "gdscript",
    ".luau": "luau",
    ".purs": "purescript",
    ".pony": "pony",
    ".prisma": "prisma",
    ".pp": "puppet",
    ".rego": "rego",
    ".smali": "smali",
    ".smithy": "smithy",
    ".nut": "squirrel",
    ".bzl": "starlark",
    ".star": "starlark",
    ".thrift": "thrift",
    ".td": "tablegen",
    ".twig": "twig",
    ".nix": "nix",
    ".capnp": "capnp",
    ".bicep": "bicep",
    ".bb": "bitbake",
    ".bbappend": "bitbake",
    ".fish": "fish",
    ".as": "actionscript",
    ".agda": "agda",
    ".asm": "asm",
    ".s": "asm",
    ".vim": "vim",
    ".ll": "llvm",
    ".wat": "wat",
    ".wast": "wast",
    ".hack": "hack",
    ".qml": "qmljs",
    ".kdl": "kdl",
    ".typ": "typst",
    ".magik": "magik",
    ".ino": "arduino",
    ".ispc": "ispc",
    ".sparql": "sparql",
    ".rq": "sparql",
    ".tal": "uxntal",
    ".yuck": "yuck",
    ".func": "func",
    ".bsl": "bsl",
    ".jsonnet": "jsonnet",
    ".libsonnet": "jsonnet",
    ".trigger": "apex",
    ".fir": "firrtl",
    ".gn": "gn",
    ".gni": "gn",
    ".ld": "linkerscript",
    ".mmd": "mermaid",
    ".axs": "netlinx",
    ".axi": "netlinx",
    ".nqc": "nqc",
    ".ron": "ron",
    ".chatito": "chatito",
    ".ungram": "ungrammar",
    ".bib": "bibtex",
    ".beancount": "beancount",
    ".dtd": "dtd",
    ".pgn": "pgn",
    ".erb": "embeddedtemplate",
    ".ejs": "embeddedtemplate",
    ".org": "org",
    ".cpon": "cpon",
    ".rules": "udev",
    ".gst": "gstlaunch",
    ".hl": "hyprlang",
}
GRAMMAR_FILENAMES: dict[str, str] = {
    "Makefile": "make",
    "GNUmakefile": "make",
    "makefile": "make",
    "Dockerfile": "dockerfile",
    "Containerfile": "dockerfile",
    "CMakeLists.txt": "cmake",
    "Jenkinsfile": "groovy",
    "BUILD": "starlark",
    "BUILD.bazel": "starlark",
    "WORKSPACE": "starlark",
    "meson.build": "meson",
    "build.ninja": "ninja",
    "Gemfile": "ruby",
    "Rakefile": "ruby",
    "Kconfig": "kconfig",
    "go.mod": "gomod",
    "MANIFEST.in": "pymanifest",
    "qmldir": "qmldir",
    "XCompose": "xcompose",
    ".XCompose": "xcompose",
    "inputrc": "readline",
    ".inputrc": "readline",
    ".gitattributes": "gitattributes",
    ".gitignore": "gitignore",
}

# Grammars of the pack deliberately not used for whole files: text and data formats chunked as
# text windows (their own issue owns JSON/YAML/TOML/CSV), grammars that only parse pieces
# embedded in other files, formats whose extension another grammar claims (.m: objc, .v:
# verilog, .re), translation catalogs (plain text, ranked like docs) and key files (never).
UNUSED_GRAMMARS = {
    "text formats": (
        "css html ini json latex markdown properties psv requirements rst scss toml tsv "
        "csv xml yaml po gitcommit"
    ),
    "embedded only": "comment doxygen jsdoc luadoc luap markdown_inline printf query test",
    "extension claimed by another grammar": "matlab re2c v",
    "lock files (skipped as generated)": "gosum",
    "hangs on some inputs (a parse never returns)": "cobol",
    "secrets": "pem",
}

# Text formats chunked by bounded windows (Markdown by heading first).
TEXT_EXTENSIONS: dict[str, str] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdx": "markdown",
    ".rst": "rst",
    ".txt": "text",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".json": "json",
    ".ini": "ini",
    ".cfg": "ini",
    ".conf": "ini",
    ".html": "html",
    ".htm": "html",
    ".xml": "xml",
    ".css": "css",
    ".scss": "css",
    ".tex": "tex",
    ".ipynb": "notebook",  # cells: indexer/source/notebook.py
    ".csv": "csv",  # large data files by shape: indexer/source/datafiles.py
    ".tsv": "tsv",
}
TEXT_FILENAMES: dict[str, str] = {
    "README": "text",
    "LICENSE": "text",
    "CHANGES": "text",
    "AUTHORS": "text",
}

# Formats that are never text: skipped by name, without reading the blob.
BINARY_EXTENSIONS = frozenset(
    {
        ".png",
        ".jpg",
        ".jpeg",
        ".gif",
        ".bmp",
        ".ico",
        ".icns",
        ".webp",
        ".tif",
        ".tiff",
        ".psd",
        ".svgz",
        ".pdf",
        ".ps",
        ".eps",
        ".zip",
        ".gz",
        ".tgz",
        ".bz2",
        ".xz",
        ".zst",
        ".7z",
        ".rar",
        ".tar",
        ".jar",
        ".war",
        ".whl",
        ".egg",
        ".apk",
        ".dmg",
        ".iso",
        ".so",
        ".dll",
        ".dylib",
        ".exe",
        ".o",
        ".a",
        ".lib",
        ".obj",
        ".pyc",
        ".pyo",
        ".class",
        ".wasm",
        ".bin",
        ".dat",
        ".db",
        ".sqlite",
        ".woff",
        ".woff2",
        ".ttf",
        ".otf",
        ".eot",
        ".mp3",
        ".mp4",
        ".wav",
        ".ogg",
        ".flac",
        ".avi",
        ".mov",
        ".mkv",
        ".webm",
        ".npy",
        ".npz",
        ".pkl",
        ".pickle",
        ".h5",
        ".hdf5",
        ".parquet",
        ".fits",
        ".mo",
        ".pb",
        ".onnx",
        ".pt",
        ".ckpt",
    }
)

# Plain-text fallback: any other name. Ranked like documentation (indexer/source/pathclass.py).
PLAIN_TEXT = "text"


def detect_language(path: str) -> str | None:
    """Language of a path: a tree-sitter language, a text format, plain text, or None for a
    known binary format."""
    pure = PurePosixPath(path)
    name = pure.name
    if name in GRAMMAR_FILENAMES:
        return GRAMMAR_FILENAMES[name]
    if name in TEXT_FILENAMES:
        return TEXT_FILENAMES[name]
    suffix = pure.suffix.lower()
    if suffix in BINARY_EXTENSIONS:
        return None
    known = EXTENSIONS.get(suffix) or GRAMMAR_EXTENSIONS.get(suffix) or TEXT_EXTENSIONS.get(suffix)
    if known:
        return known
    if name.startswith("Dockerfile") or name.endswith(".dockerfile"):
        return "dockerfile"
    return PLAIN_TEXT


@cache
def pack_grammars() -> frozenset[str]:
    """Every grammar tree-sitter-language-pack ships."""
    import typing

    from tree_sitter_language_pack import SupportedLanguage

    return frozenset(typing.get_args(SupportedLanguage))


def grammar_of(language: str) -> str | None:
    """The grammar that parses `language`, or None for text formats."""
    spec = SPECS.get(language)
    if spec is not None:
        return spec.grammar
    if language in GRAMMAR_LANGUAGES:
        return language
    return None


def is_code(language: str) -> bool:
    return grammar_of(language) is not None


GRAMMAR_LANGUAGES = frozenset(GRAMMAR_EXTENSIONS.values()) | frozenset(GRAMMAR_FILENAMES.values())
