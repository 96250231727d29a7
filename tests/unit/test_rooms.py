"""The rooms of docs/architecture.md ("Rooms") and of native/README.md, enforced: a Python
import or a C include that points up the table fails here, and so does an import cycle
inside a room (Python modules that import each other, C files that use each other's functions).

Imports are read with ``ast`` (every import, those inside functions and under
TYPE_CHECKING included); includes and calls from the C text.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PY_MAY_IMPORT = {
    "omdp": ("omdp",),
    "feedhandlers": ("omdp", "feedhandlers"),
    "decision_engines": ("omdp", "feedhandlers.opra_record", "decision_engines"),
}
"""docs/architecture.md "Rooms": what each Python room may import of the project (ops and
tests may import everything)."""

PY_ROOMS = ("omdp", "feedhandlers", "decision_engines", "ops")
PROJECT = set(PY_ROOMS)

C_MAY_USE = {
    "runtime": (), "captures": (), "codec": ("runtime",), "transport": ("runtime",), "metrics": ("runtime",),
    "replay": ("runtime", "codec", "transport"), "reshard": ("runtime",),
    "feed_handler": ("runtime", "codec", "transport", "metrics", "replay", "reshard"),
    "engine": ("runtime", "codec", "reshard"), "elastic": ("runtime", "codec", "engine"), "synth": ("runtime", "codec"),
    "market": ("runtime", "codec"),
}
"""native/README.md: the components each component may use (besides itself)."""

HEADER_OWNER = {
    "clock": "runtime", "tsc_clock": "runtime", "stamp_clock": "runtime", "record": "runtime",
    "operator": "runtime", "partition": "runtime", "seq_ops": "runtime", "shm_region": "runtime",
    "relaxed_counter": "runtime", "pcap_walk": "captures", "opra_fast": "codec", "opra_msg": "codec",
    "opra_bench": "codec", "opra_arrow": "codec", "opra_obi": "codec", "obi_synth": "synth", "vega": "transport", "vega_ring": "transport",
    "vega_defaults": "transport", "vega_mirror": "transport", "vega_tcp": "transport", "vega_ib": "transport",
    "tcp_channel": "transport", "channel_mpi": "transport", "transport_bench_mpi": "transport",
    "partition_channels": "transport", "transport_bench": "transport",
    "histogram": "metrics", "collector": "metrics", "latency_operator": "metrics", "stats": "metrics",
    "replay": "replay", "reshard": "reshard", "feed_handler": "feed_handler", "feed_offline": "feed_handler",
    "feed_stage": "feed_handler", "engine": "engine", "engine_nbbo": "engine", "engine_op": "engine",
    "engine_reshard": "engine", "signal": "engine", "engine_bench": "engine", "engine_fit": "engine",
    "engine_nbbo_arrow": "engine", "elastic": "elastic", "elastic_op": "elastic",
    "market_stats": "market",
}
"""Each public header's component (native/README.md)."""


# ---- Python ----

def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for room in PY_ROOMS for p in (ROOT / room).rglob("*.py")}


MODULES = _modules()


def _imports(path: Path) -> Iterable[str]:
    """Every project module ``path`` imports (the submodule where ``from a import b`` names one)."""
    tree = ast.parse(path.read_text(), str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            for a in node.names:
                yield f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base


def _project(name: str) -> str | None:
    """The project module an import name lands in (its longest known prefix), else None."""
    parts = name.split(".")
    if parts[0] not in PROJECT:
        return None
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts) or None


def _allowed(target: str, rules: tuple[str, ...]) -> bool:
    return target == "omdp._native" or any(target == r or target.startswith(r + ".") for r in rules)


@pytest.mark.parametrize("room", sorted(PY_MAY_IMPORT))
def test_python_imports_point_down_the_table(room: str) -> None:
    broken = []
    for name, path in sorted(MODULES.items()):
        if name.split(".")[0] != room:
            continue
        for imported in _imports(path):
            first = imported.split(".")[0]
            if first in PROJECT and not _allowed(imported, PY_MAY_IMPORT[room]):
                broken.append(f"{path.relative_to(ROOT)} imports {imported}")
    assert not broken, "imports against docs/architecture.md \"Rooms\":\n" + "\n".join(broken)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycles_are_found() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("room", PY_ROOMS)
def test_no_python_import_cycle_in_a_room(room: str) -> None:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        if name.split(".")[0] != room:
            continue
        targets = {_project(i) for i in _imports(path)}
        # a package's __init__ is not an edge: importing a.b.c runs a/__init__ first, by Python's rules
        graph[name] = {t for t in targets if t and t != name and t.split(".")[0] == room
                       and not MODULES[t].name == "__init__.py"}
    assert _cycles(graph) == []


# ---- C ----

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SRC = ROOT / "native" / "src"
PUBLIC = ROOT / "native" / "include" / "omdp"


def _component(path: Path) -> str:
    return HEADER_OWNER[path.stem] if path.parent == PUBLIC else path.relative_to(SRC).parts[0]


def test_every_public_header_has_a_component() -> None:
    assert sorted(HEADER_OWNER) == sorted(p.stem for p in PUBLIC.glob("*.h"))
    assert sorted(C_MAY_USE) == sorted(p.name for p in SRC.iterdir() if p.is_dir())


def test_c_includes_follow_the_components_table() -> None:
    broken = []
    for path in sorted([*SRC.rglob("*.[ch]"), *PUBLIC.glob("*.h")]):
        mine = _component(path)
        for inc in _INCLUDE.findall(path.read_text()):
            if inc.startswith("omdp/"):
                theirs = HEADER_OWNER[Path(inc).stem]
                if theirs != mine and theirs not in C_MAY_USE[mine]:
                    broken.append(f"{path.relative_to(ROOT)} ({mine}) includes {inc} ({theirs})")
            elif not (path.parent / inc).exists():
                broken.append(f"{path.relative_to(ROOT)} includes {inc}, not a private header of its own folder")
    assert not broken, "includes against native/README.md:\n" + "\n".join(broken)


_DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \t\*]*?\b([a-z_]\w*)\s*\([^;{]*\)\s*\{", re.M)
_USE = re.compile(r"\b([a-z_]\w*)\b")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def test_no_c_file_cycle_in_a_component() -> None:
    """Inside a component no two files use each other: file A uses file B when A names a
    function B defines, called or passed (a thread's start routine) (native/README.md)."""
    problems = []
    for folder in sorted(p for p in SRC.iterdir() if p.is_dir()):
        texts = {p.name: _COMMENT.sub(" ", p.read_text()) for p in folder.glob("*.c")}
        defines = {name: set(_DEFINITION.findall(text)) for name, text in texts.items()}
        owner = {fn: name for name, fns in defines.items() for fn in fns}
        graph = {name: {owner[c] for c in _USE.findall(text) if c in owner and owner[c] != name}
                 for name, text in texts.items()}
        problems += [f"{folder.name}: {' <-> '.join(c)}" for c in _cycles(graph)]
    assert not problems, "files that use each other:\n" + "\n".join(problems)
