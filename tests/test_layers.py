"""The house rules on imports, checked on the source (ast), not by running it.

Layers, lowest first: base -> inputs -> engine -> tools -> views -> entry points (planner/cli.py, every
__main__.py, app.py). A module imports from its own layer or lower ones; the module graph has no cycle; no
planner import hides inside a function (the usual way to dodge a cycle); only the live price fetcher talks to
the network; only the bench and the profiler import torch, and nothing the app or the engine imports reaches them;
nothing under planner/ imports streamlit.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LAYERS = ("base", "inputs", "engine", "tools", "views", "entry")
PACKAGE_LAYER = {"planner.base": "base", "planner.inputs": "inputs", "planner.engine": "engine",
                 "planner.tools": "tools", "planner.bench": "tools", "planner.views": "views"}
NETWORK_MODULES = {"planner.tools.live_prices"}  # the only importers of requests / urllib.request / http.client
TORCH_PACKAGE = "planner.bench"
TORCH_MODULES = {"planner.tools.profiler"}  # besides the bench package: the only importers of torch


def _modules() -> dict[str, Path]:
    out = {"app": ROOT / "app.py"}
    for path in (ROOT / "planner").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def layer_of(module: str) -> str:
    if module in ("app", "planner.cli", "planner.__main__") or module.endswith(".__main__"):
        return "entry"
    if module == "planner":
        return "base"  # planner/__init__.py: paths only
    for prefix, layer in PACKAGE_LAYER.items():
        if module == prefix or module.startswith(prefix + "."):
            return layer
    raise AssertionError(f"{module} belongs to no layer: put it in a layer package or name it in LAYERS")


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import in the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                found.extend((a.name, child.lineno, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.append((child.module, child.lineno, in_function))
                # `from planner import share` imports the submodule planner.share
                found.extend((f"{child.module}.{a.name}", child.lineno, in_function) for a in child.names
                             if f"{child.module}.{a.name}" in MODULES)
            visit(child, inner)

    visit(tree, False)
    return found


def _planner_edges() -> list[tuple[str, str, int, bool]]:
    edges = []
    for module, path in MODULES.items():
        for target, line, in_function in _imports(path):
            if target == "planner" or target.startswith("planner."):
                # `from planner.inputs.models import X` imports planner.inputs.models (and its packages' __init__)
                while target not in MODULES and "." in target:
                    target = target.rsplit(".", 1)[0]
                edges.append((module, target, line, in_function))
    return edges


EDGES = _planner_edges()


def test_every_module_has_a_layer():
    for module in MODULES:
        assert layer_of(module) in LAYERS


def test_imports_point_down_or_sideways_never_up():
    wrong = [f"{m} ({layer_of(m)}) line {line} imports {t} ({layer_of(t)})" for m, t, line, _ in EDGES
             if LAYERS.index(layer_of(t)) > LAYERS.index(layer_of(m))]
    assert not wrong, "imports that point up a layer:\n" + "\n".join(wrong)


def test_no_planner_import_hides_inside_a_function():
    """Entry points may defer a heavy import (the bench's torch) so that --help answers at once: nothing imports
    them, so they can't be part of a cycle."""
    hidden = [f"{m} line {line} imports {t}" for m, t, line, inside in EDGES if inside and layer_of(m) != "entry"]
    assert not hidden, "imports inside functions:\n" + "\n".join(hidden)


def test_the_module_graph_has_no_cycle():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m, t, _, _ in EDGES:
        if t != m and not m.startswith(t + "."):  # a package's __init__ runs before its submodules: not a cycle
            graph[m].add(t)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


@pytest.mark.parametrize("library, allowed", [
    ("requests", NETWORK_MODULES), ("urllib.request", NETWORK_MODULES), ("http.client", NETWORK_MODULES),
    ("streamlit", {"app"}), ("huggingface_hub", {"planner.tools.hf_hub"}),
])
def test_only_named_modules_import(library, allowed):
    users = {m for m, path in MODULES.items() for t, _, _ in _imports(path)
             if t == library or t.startswith(library + ".")}
    assert users <= set(allowed), f"{library} imported by {sorted(users - set(allowed))}"


def test_torch_stays_in_the_bench_and_the_profiler():
    users = {m for m, path in MODULES.items() for t, _, _ in _imports(path) if t == "torch" or t.startswith("torch.")}
    assert users and all(m.startswith(TORCH_PACKAGE) or m in TORCH_MODULES for m in users), sorted(users)
    assert TORCH_MODULES <= users  # the allowance names a real importer, not a stale one


def _reachable(start: str) -> set[str]:
    """Every planner module that importing `start` imports (module-level imports only; packages' __init__ too)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m, t, _, inside in EDGES:
        if not inside:
            graph[m].add(t)
    for m in MODULES:  # importing a.b.c runs a/__init__ and a/b/__init__ first
        parts = m.split(".")
        graph[m] |= {".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in MODULES}
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += sorted(graph.get(node, ()))
    return seen


@pytest.mark.parametrize("entry", ["app", "planner.engine.estimate", "planner.cli", "planner.views.page"])
def test_the_app_the_engine_and_the_cli_start_without_torch(entry):
    """The web app installs without torch: nothing it imports at module level reaches a torch importer (the CLI's
    `profile` command imports the profiler inside its function, as an entry point may)."""
    torch_users = {m for m, path in MODULES.items() for t, _, _ in _imports(path) if t == "torch" or t.startswith("torch.")}
    assert not _reachable(entry) & torch_users, sorted(_reachable(entry) & torch_users)


def test_the_checker_sees_an_upward_import(tmp_path):
    """The walk itself works: a made-up engine module importing a view is reported as pointing up."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from planner.views.share import encode\n")
    (target, line, inside), *_ = _imports(bad)
    assert target == "planner.views.share" and line == 2 and inside
    assert LAYERS.index(layer_of(target)) > LAYERS.index(layer_of("planner.engine.estimate"))


ENGINE_FORBIDDEN_CALLS = {"open", "read_text", "read_bytes", "write_text", "load_facts", "load_catalog", "load_rules",
                          "load_runtimes", "load_models", "snapshot_table", "urlopen"}


def test_the_engine_reads_no_file_and_loads_nothing():
    """The engine receives resolved objects; loading happens at the boundary (planner.inputs.facts.load_facts)."""
    calls = []
    for module, path in MODULES.items():
        if layer_of(module) != "engine":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in ENGINE_FORBIDDEN_CALLS:
                    calls.append(f"{module} line {node.lineno}: {name}()")
    assert not calls, "I/O in the engine:\n" + "\n".join(calls)
