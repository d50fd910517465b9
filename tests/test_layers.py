"""The house rules on imports, checked on the source (ast), not by running it.

Layers, lowest first: base -> inputs -> engine -> tools -> views -> ui -> entry points (app.py, serve.py, the
planner/cli package, every __main__.py, and the scripts under benchmarks/, validation/ and examples/). A module imports
from its own layer or lower ones; the module graph has no cycle; no internal import hides inside a function (the
usual way to dodge a cycle); no module takes another module's private names; only the live price fetcher talks to
the network; only the bench and the profiler import torch, and nothing the app or the engine imports reaches them;
only app.py, serve.py and the ui package import streamlit.

Every file is parsed once (`scan`); the checks are plain functions of that scan, so the tests at the end run them on
small made-up trees too, to show that each one catches what it is for.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIRS = ("planner", "ui", "benchmarks", "validation", "examples")  # scanned whole; ui/ may not exist yet
SOURCE_FILES = ("app.py", "serve.py")
LAYERS = ("base", "inputs", "engine", "tools", "views", "ui", "entry")
PACKAGE_LAYER = {"planner.base": "base", "planner.inputs": "inputs", "planner.engine": "engine",
                 "planner.clients": "tools", "planner.validation": "tools", "planner.calibration": "tools",
                 "planner.profiling": "tools", "planner.bench": "tools", "planner.views": "views", "ui": "ui"}
ENTRY_MODULES = {"app", "serve", "planner.__main__"}
ENTRY_PACKAGES = ("planner.cli",)  # the command line: a subcommand per module
SCRIPT_PACKAGES = ("benchmarks", "validation", "examples")  # entry-level scripts: may import planner, never imported

NETWORK = ("planner.clients",)  # the only importers of requests / urllib.request / http.client
TORCH = ("planner.bench", "planner.profiling.tracer")  # a name covers the module or the package and all under it
LIBRARY_USERS = {"requests": NETWORK, "urllib.request": NETWORK, "http.client": NETWORK,
                 "streamlit": ("app", "serve", "ui"), "torch": TORCH}
# Scripts outside the product that break a library rule today, each named with its reason so that nothing else
# can: a new importer fails the test, and an exception that no longer applies fails it too (it must be removed).
SCRIPT_EXCEPTIONS = {
    "streamlit": {"benchmarks.app_rerun": "runs app.py under streamlit.testing's AppTest to time a rerun",
                  "benchmarks.concurrent_sessions": "decodes the app's websocket frames with streamlit's protobufs",
                  "benchmarks.new_session": "runs app.py under streamlit.testing's AppTest to time a new session",
                  "benchmarks.rerun_state_share": "times streamlit's SessionState.filtered_state in an AppTest rerun"},
    "urllib.request": {"benchmarks.browser_page": "polls the local server's health endpoint before timing it"},
    "torch": {"validation.count_kernels": "counts a model's kernels on the GPU",
              "validation.measure_hf": "times Hugging Face models on the GPU",
              "validation.count_tp_collectives": "counts a tensor-parallel block's collectives on two CPU ranks",
              "validation.probe_hf": "profiles a Hugging Face model on the GPU",
              "validation.probe_train": "profiles Hugging Face training steps on the GPU",
              "validation.probe_decode_attention": "times eager decode attention's kernels on the GPU",
              "examples.models.betarho": "a model factory for `planner profile`: a torch model by nature",
              "examples.models.gpt2": "a model factory for `planner profile`: a torch model by nature",
              "examples.models.sea": "a model factory for `planner profile`: a torch model by nature"},
}


def within(module: str, names) -> bool:
    """`module` is one of `names` or inside one of them (a package)."""
    return any(module == n or module.startswith(n + ".") for n in names)


def layer_of(module: str) -> str | None:
    if module in ENTRY_MODULES or module.endswith(".__main__") or within(module, SCRIPT_PACKAGES + ENTRY_PACKAGES):
        return "entry"
    if module == "planner":
        return "base"  # planner/__init__.py: paths only
    for prefix, layer in PACKAGE_LAYER.items():
        if within(module, (prefix,)):
            return layer
    return None


@dataclass(frozen=True)
class Import:
    """One imported module: `importer` imports `target` (absolute) at `line`; `names` are those a from-import takes."""
    importer: str
    target: str
    line: int
    inside: bool  # in a function: runs when called, not when the module is imported
    names: tuple[str, ...] = ()


@dataclass
class Scan:
    """Every module's parsed tree and every import in it, the internal ones resolved to a scanned module."""
    trees: dict[str, ast.Module] = field(default_factory=dict)
    imports: list[Import] = field(default_factory=list)  # every import, libraries included
    edges: list[Import] = field(default_factory=list)  # the imports of scanned modules only
    errors: list[str] = field(default_factory=list)


def read_tree(root: Path) -> dict[str, str]:
    """{path relative to root: source} for every file the rules cover; a missing folder just has no files."""
    paths = [root / f for f in SOURCE_FILES if (root / f).is_file()]
    paths += [p for d in SOURCE_DIRS for p in sorted((root / d).rglob("*.py"))]
    return {p.relative_to(root).as_posix(): p.read_text(encoding="utf-8") for p in paths}


def module_name(path: str) -> tuple[str, bool]:
    """('a.b', is a package) for 'a/b.py' or 'a/b/__init__.py'."""
    parts = path.removesuffix(".py").split("/")
    return (".".join(parts[:-1]), True) if parts[-1] == "__init__" else (".".join(parts), False)


def scan(files: Mapping[str, str]) -> Scan:
    """Parse each file once and resolve its imports (relative ones against the importer's package)."""
    out = Scan()
    packages = set()
    for path, source in files.items():
        name, is_package = module_name(path)
        out.trees[name] = ast.parse(source, filename=path)
        if is_package:
            packages.add(name)
    roots = {m.split(".")[0] for m in out.trees}

    def resolve(target: str) -> str:
        # `from planner.inputs.models import X` imports planner.inputs.models (and its packages' __init__)
        while target not in out.trees and "." in target:
            target = target.rsplit(".", 1)[0]
        return target

    def visit(module: str, package: str, node: ast.AST, inside: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                out.imports.extend(Import(module, a.name, child.lineno, inside) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".") if package else []
                    if child.level - 1 >= len(up):
                        out.errors.append(f"{module} line {child.lineno}: relative import beyond the top package")
                        continue
                    base = ".".join(up[:len(up) - (child.level - 1)] + ([base] if base else []))
                names = tuple(a.name for a in child.names)
                out.imports.append(Import(module, base, child.lineno, inside, names))
                # `from planner import share` / `from . import share` imports the submodule; for a library the
                # name may be one too (`from urllib import request`), which the library checks must see
                out.imports.extend(Import(module, f"{base}.{n}", child.lineno, inside) for n in names
                                   if f"{base}.{n}" in out.trees or base.split(".")[0] not in roots)
            in_function = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            visit(module, package, child, inside or in_function)

    for module, tree in out.trees.items():
        # the package a relative import starts from: a package's __init__ is its own package
        package = module if module in packages else module.rpartition(".")[0]
        visit(module, package, tree, False)
    for imp in out.imports:
        # a script's import of its sibling (`import measure_hf`, run from its folder) names no root: not an edge
        if imp.target.split(".")[0] in roots:
            target = resolve(imp.target)
            out.edges.append(Import(imp.importer, target if target in out.trees else imp.target, imp.line,
                                    imp.inside, imp.names))
    return out


def _show(imp: Import) -> str:
    return f"{imp.importer} line {imp.line} imports {imp.target}"


def unlayered(s: Scan) -> list[str]:
    return sorted(m for m in s.trees if layer_of(m) is None)


def upward_imports(s: Scan) -> list[str]:
    """Imports that point up a layer (a module of no layer counts as the top, so it is reported too)."""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    return [f"{_show(e)} ({layer_of(e.importer)} -> {layer_of(e.target)})" for e in s.edges
            if rank.get(layer_of(e.target), len(LAYERS)) > rank.get(layer_of(e.importer), len(LAYERS))]


def hidden_imports(s: Scan) -> list[str]:
    """Entry points may defer a heavy import (the bench's torch) so that --help answers at once: nothing imports
    them, so they can't be part of a cycle."""
    return [_show(e) for e in s.edges if e.inside and layer_of(e.importer) != "entry"]


def private_imports(s: Scan) -> list[str]:
    """`from x import _name` across modules: the name is x's own business (dunders such as __version__ are not)."""
    return [f"{e.importer} line {e.line} imports {n} from {e.target}" for e in s.edges if e.target != e.importer
            for n in e.names if n.startswith("_") and not n.startswith("__")]


def find_cycle(s: Scan) -> list[str]:
    """One import cycle as its path (first module repeated at the end), or [] when there is none."""
    graph: dict[str, set[str]] = {m: set() for m in s.trees}
    for e in s.edges:
        if e.target != e.importer and not e.importer.startswith(e.target + "."):
            graph[e.importer].add(e.target)  # a package's __init__ runs before its submodules: not a cycle
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return []

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return []


def library_users(s: Scan, library: str) -> set[str]:
    return {i.importer for i in s.imports if within(i.target, (library,))}


def reachable(s: Scan, start: str) -> set[str]:
    """Every scanned module that importing `start` imports (module-level imports only; packages' __init__ too)."""
    graph: dict[str, set[str]] = {m: set() for m in s.trees}
    for e in s.edges:
        if not e.inside and e.importer in graph:
            graph[e.importer].add(e.target)
    for m in s.trees:  # importing a.b.c runs a/__init__ and a/b/__init__ first
        parts = m.split(".")
        graph[m] |= {".".join(parts[:i]) for i in range(1, len(parts)) if ".".join(parts[:i]) in s.trees}
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo += sorted(graph.get(node, ()))
    return seen


@pytest.fixture(scope="module")
def real() -> Scan:
    """The repository, parsed once for all the tests below."""
    return scan(read_tree(ROOT))


def test_every_file_is_read_and_every_relative_import_resolves(real):
    """The app, the server, the package and the scripts are all scanned (ui/ too, once it exists)."""
    assert {m.split(".")[0] for m in real.trees} >= {"app", "serve", "planner", "benchmarks", "validation", "examples"}
    assert not real.errors, real.errors


def test_every_module_has_a_layer(real):
    assert not unlayered(real), "put these in a layer package or name them in layer_of: " + ", ".join(unlayered(real))


def test_imports_point_down_or_sideways_never_up(real):
    wrong = upward_imports(real)
    assert not wrong, "imports that point up a layer:\n" + "\n".join(wrong)


def test_no_internal_import_hides_inside_a_function(real):
    hidden = hidden_imports(real)
    assert not hidden, "imports inside functions:\n" + "\n".join(hidden)


def test_no_module_imports_another_modules_private_names(real):
    taken = private_imports(real)
    assert not taken, "private names imported across modules (make them public where they are defined):\n" + \
        "\n".join(taken)


def test_the_module_graph_has_no_cycle(real):
    cycle = find_cycle(real)
    assert not cycle, "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize("library", sorted(LIBRARY_USERS))
def test_only_named_modules_import(real, library):
    excepted = SCRIPT_EXCEPTIONS.get(library, {})
    users = library_users(real, library)
    stray = sorted(m for m in users if not within(m, LIBRARY_USERS[library]) and m not in excepted)
    assert not stray, f"{library} imported by {stray}"
    # an exception names a script that still needs it, and never a module of the product
    assert set(excepted) <= users, f"stale exceptions for {library}: {sorted(set(excepted) - users)}"
    assert all(within(m, SCRIPT_PACKAGES) for m in excepted)


def test_the_torch_allowance_names_real_importers(real):
    users = library_users(real, "torch")
    assert "planner.profiling.tracer" in users and any(within(m, ("planner.bench",)) for m in users)


CLI_PROFILE = "planner.cli.profile"  # the one CLI module that reaches torch
CLI_QUICK = ("planner.cli", "planner.cli.estimate")  # what `planner estimate` imports before it answers


def test_planner_estimate_imports_no_chart_or_dataframe_library(real):
    """A cold `planner estimate` starts in well under a second (benchmarks/cli_start.py) because neither the
    package nor its estimate command reaches altair or pandas (the charts of `validate`), torch, or numpy (the
    catalog sweep's arrays, planner.engine.sweep, which the page passes to the engine)."""
    heavy = set().union(*(library_users(real, lib) for lib in ("altair", "pandas", "torch", "numpy")))
    reached = {start: sorted(reachable(real, start) & heavy) for start in CLI_QUICK}
    assert not any(reached.values()), reached


def _no_torch_starts(s: Scan) -> list[str]:
    """The app, the server, the CLI and every module of the layers the app is built from."""
    return sorted(m for m in s.trees if m in ("app", "serve") or (within(m, ENTRY_PACKAGES) and m != CLI_PROFILE)
                  or layer_of(m) in ("base", "inputs", "engine", "views", "ui"))


def test_the_app_the_engine_and_the_cli_start_without_torch(real):
    """The web app installs without torch: nothing it imports at module level reaches a torch importer (the CLI's
    `profile` command lives in its own module, which the CLI imports only when that command runs)."""
    torch_users = library_users(real, "torch")
    starts = _no_torch_starts(real)
    assert {"app", "serve", "planner.cli", "planner.engine.estimate", "planner.views.ranking_table"} <= set(starts)
    reached = {start: sorted(reachable(real, start) & torch_users) for start in starts}
    assert not any(reached.values()), {k: v for k, v in reached.items() if v}


ENGINE_FORBIDDEN_CALLS = {"open", "read_text", "read_bytes", "write_text", "load_facts", "load_catalog", "load_rules",
                          "load_runtimes", "load_models", "snapshot_table", "urlopen"}


def test_the_engine_reads_no_file_and_loads_nothing(real):
    """The engine receives resolved objects; loading happens at the boundary (planner.inputs.facts.load_facts)."""
    calls = []
    for module, tree in real.trees.items():
        if layer_of(module) != "engine":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                if name in ENGINE_FORBIDDEN_CALLS:
                    calls.append(f"{module} line {node.lineno}: {name}()")
    assert not calls, "I/O in the engine:\n" + "\n".join(calls)


# The checks on made-up trees: each catches what it is for, and a clean tree passes them all.

CLEAN = {
    "app.py": "import streamlit as st\nfrom ui import table\n",
    "serve.py": "import streamlit\nimport app\n",
    "planner/__init__.py": "",
    "planner/base/__init__.py": "",
    "planner/base/units.py": "GB = 1e9\n",
    "planner/engine/__init__.py": "from . import plan\n",  # the package's own submodule
    "planner/engine/plan.py": "from ..base.units import GB\nfrom planner.base import units\n",
    "planner/engine/cost.py": "from .plan import GB\nfrom . import plan\nfrom .plan import __doc__\n",
    "planner/views/__init__.py": "",
    "planner/views/page.py": "from ..engine import cost\n",
    "ui/__init__.py": "",
    "ui/table.py": "import streamlit as st\nfrom planner.views import page\n",
    "benchmarks/run.py": "import planner.engine.cost\n\ndef main():\n    from planner.views import page\n",
}


def _scan_tree(tmp_path: Path, files: dict[str, str]) -> Scan:
    """Write the files under tmp_path and scan them the way the real tree is scanned."""
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return scan(read_tree(tmp_path))


def test_a_clean_tree_passes_every_check(tmp_path):
    s = _scan_tree(tmp_path, CLEAN)
    assert set(s.trees) == {module_name(p)[0] for p in CLEAN}
    assert not (s.errors or unlayered(s) or upward_imports(s) or hidden_imports(s) or private_imports(s))
    assert not find_cycle(s)
    assert library_users(s, "streamlit") == {"app", "serve", "ui.table"}
    # the relative imports resolved to real modules, a package's own `from . import` included
    edges = {(e.importer, e.target) for e in s.edges}
    assert {("planner.engine", "planner.engine.plan"), ("planner.engine.plan", "planner.base.units"),
            ("planner.engine.cost", "planner.engine.plan"), ("planner.views.page", "planner.engine.cost")} <= edges
    assert "planner.views.page" not in reachable(s, "planner.engine.cost")
    assert reachable(s, "app") >= {"ui.table", "planner.views.page", "planner.engine.cost", "planner.base.units"}


def test_the_checker_sees_a_relative_upward_import(tmp_path):
    s = _scan_tree(tmp_path, CLEAN | {"planner/engine/x.py": "from ..views import page\n"})
    assert upward_imports(s) == ["planner.engine.x line 1 imports planner.views (engine -> views)",
                                 "planner.engine.x line 1 imports planner.views.page (engine -> views)"]


def test_the_checker_sees_the_product_importing_ui_or_a_script(tmp_path):
    s = _scan_tree(tmp_path, CLEAN | {"planner/views/x.py": "from ui.table import st\n",
                                      "ui/y.py": "import benchmarks.run\n"})
    assert upward_imports(s) == ["planner.views.x line 1 imports ui.table (views -> ui)",
                                 "ui.y line 1 imports benchmarks.run (ui -> entry)"]


def test_the_checker_sees_an_upward_import_hidden_in_a_function(tmp_path):
    s = _scan_tree(tmp_path, CLEAN | {"planner/engine/x.py": "def f():\n    from planner.views.page import cost\n"})
    assert hidden_imports(s) == ["planner.engine.x line 2 imports planner.views.page"]
    assert upward_imports(s) == ["planner.engine.x line 2 imports planner.views.page (engine -> views)"]


def test_the_checker_sees_a_relative_import_cycle(tmp_path):
    s = _scan_tree(tmp_path, CLEAN | {"planner/engine/a.py": "from . import b\n",
                                      "planner/engine/b.py": "from .a import f\n"})
    assert find_cycle(s) == ["planner.engine.a", "planner.engine.b", "planner.engine.a"]


def test_the_checker_sees_a_private_name_taken_from_another_module(tmp_path):
    s = _scan_tree(tmp_path, CLEAN | {"planner/engine/x.py": "from .plan import _helper, __doc__, GB\n",
                                      "planner/engine/y.py": "from planner.engine.plan import (GB,\n    _other)\n"})
    assert private_imports(s) == ["planner.engine.x line 1 imports _helper from planner.engine.plan",
                                  "planner.engine.y line 1 imports _other from planner.engine.plan"]


def test_the_checker_sees_a_library_imported_by_its_submodule_name(tmp_path):
    s = _scan_tree(tmp_path, CLEAN | {"planner/engine/x.py": "from urllib import request\nfrom http import client\n",
                                      "planner/views/y.py": "from streamlit import column_config\n"})
    assert library_users(s, "urllib.request") == library_users(s, "http.client") == {"planner.engine.x"}
    assert library_users(s, "streamlit") == {"app", "serve", "ui.table", "planner.views.y"}


def test_a_relative_import_above_the_top_package_is_an_error(tmp_path):
    s = _scan_tree(tmp_path, CLEAN | {"planner/x.py": "from ...up import y\n"})
    assert s.errors == ["planner.x line 1: relative import beyond the top package"]
