"""The package's shape: rooms in one layer order with no arrow back up, no import circles, pytest
only in the harness (its internals in one module), hooks of a few lines, the evaluation core usable
without pytest; every registry entry defined where its registry's index says, by a module that imports
its registry, and no import hidden in a string.

The import graph counts every import in a module (top-level, inside functions and under
TYPE_CHECKING), read with `ast` from the source files.
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import textwrap
import tokenize
from pathlib import Path
from typing import Any

import pytest_mllm

PACKAGE = Path(pytest_mllm.__file__).parent
PYTEST_FACING = ("pytest_mllm.harness", "pytest_mllm.plugin", "pytest_mllm.pytest_compat")

# The rooms of the package (a subpackage, or a top-level module; "__init__" is the package's own
# `__init__.py`), lowest first. A room imports only rooms before it: no arrow runs back up.
LAYERS = (
    "__init__", "echo", "safe_yaml",  # the version; values shown in messages, YAML read with limits
    "registry",  # named entries registered where they are defined (loaders, parsers, metrics, model kinds, sections)
    "sample", "record", "sections",  # the typed hand-offs; what methods add beside accuracy
    "shortfall",  # why a run is not a full run (interrupted, limited): no gate passes while one stands
    "scoring",  # scoring rules and metrics
    "engine", "loaders", "models",  # specs, images, the evaluator; formats → samples; model kinds
    "judge", "vrp", "tpeval", "report", "curation",  # the methods (the judges reach their LLMs as endpoints) and the outputs
    "estimate",  # full scores estimated from a subset: reads panels' results, draws, gates on intervals
    "evaluation", "conclusion",  # the pytest-free core: a run's answers, and its end
    "pytest_compat", "harness", "plugin",  # pytest: its internals in one module, the harness, the entry point
)


def _modules() -> dict[str, tuple[Path, bool]]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _imports(name: str, path: Path, is_package: bool) -> set[str]:
    """Every module name `name` imports (absolute), with `from x import y` also as `x.y`."""
    base = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                target = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def import_graph() -> dict[str, set[str]]:
    """Module → the package modules it imports."""
    modules = _modules()
    return {name: {m for m in _imports(name, *where) if m in modules and m != name}
            for name, where in modules.items()}


def room(module: str) -> str:
    """The room a module lives in: its subpackage or top-level module under the package."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def arrows_back_up(graph: dict[str, set[str]], layers: tuple[str, ...]) -> list[tuple[str, str]]:
    """Imports from a room into a room that comes later in `layers` (or is not in it)."""
    rank = {name: position for position, name in enumerate(layers)}
    return sorted((module, imported) for module, targets in graph.items() for imported in targets
                  if room(module) != room(imported)
                  and rank.get(room(imported), len(layers)) > rank.get(room(module), -1))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_checker_finds_an_arrow_back_up() -> None:
    graph = {"p.low.a": {"p.high.b", "p.low.c"}, "p.low.c": set(), "p.high.b": {"p.low.a"}, "p.new": {"p.low.a"}}
    assert arrows_back_up(graph, ("low", "high")) == [("p.low.a", "p.high.b"), ("p.new", "p.low.a")]


def test_every_room_has_its_place_in_the_layer_order() -> None:
    rooms = {room(module) for module in _modules()}
    assert rooms == set(LAYERS), f"rooms missing from LAYERS: {rooms - set(LAYERS)}; gone: {set(LAYERS) - rooms}"


def test_architecture_md_shows_the_layer_order() -> None:
    assert " · ".join(LAYERS) in (PACKAGE.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")


def test_no_arrow_runs_back_up() -> None:
    assert arrows_back_up(import_graph(), LAYERS) == []


def test_no_module_imports_in_a_circle() -> None:
    assert circles(import_graph()) == []


def test_only_the_harness_imports_pytest() -> None:
    users = sorted(name for name, (path, is_package) in _modules().items()
                   if any(m.split(".")[0] in ("pytest", "_pytest") for m in _imports(name, path, is_package)))
    assert users and all(name.startswith(PYTEST_FACING) for name in users), users


def test_the_evaluation_core_runs_without_pytest(tmp_path: Path) -> None:
    """A script drives the core end to end (samples, answers, scores, gates) and never imports pytest."""
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from pytest_mllm.engine.spec import find_spec
        from pytest_mllm.evaluation import Evaluation, EvaluationSettings
        from pytest_mllm.scoring.gates import GateSettings, parse_gate

        evaluation = Evaluation(EvaluationSettings(model="baseline:yes", cache_path=Path({str(tmp_path)!r}) / "c.sqlite3"))
        spec = evaluation.spec(find_spec("shapes"))
        samples = [s for s in evaluation.samples_for(spec) if s.task == "existence"][:20]
        records = evaluation.answer([(s, spec) for s in samples])
        for order, record in enumerate(records):
            record["order"] = order
        evaluation.gather(records)
        result = evaluation.results()["shapes"]
        verdicts = GateSettings([parse_gate("shapes.accuracy>=0.5")], []).verdicts(
            {{"shapes": result.metrics}}, {{}}, {{}})
        print(len(records), result.metrics["accuracy"], result.metrics["existence.accuracy_plus"], verdicts[0].verdict)
        assert "pytest" not in sys.modules and "_pytest" not in sys.modules, "the core imported pytest"
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # MME-style pairs, one "Yes" and one "No" per image: the yes baseline gets half, and no image both.
    assert done.stdout.split() == ["20", "0.5", "0.0", "pass"]


def submodules_taken_from_their_package() -> list[str]:
    """`from package import submodule` lines: the name is the package's attribute, which outlives the submodule's
    removal from `sys.modules` (pytester's in-process runs drop the modules a run imported), so a later run would
    get an earlier run's module, its registries and classes. `import package.submodule as submodule` and
    `from package.submodule import name` go through `sys.modules`."""
    modules = _modules()
    found = []
    for name, (path, _) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found += [f"{name}:{node.lineno} from {node.module} import {alias.name}" for alias in node.names
                          if f"{node.module}.{alias.name}" in modules]
    return found


def test_a_submodule_is_imported_by_its_full_name() -> None:
    assert submodules_taken_from_their_package() == []


# -- registries ----------------------------------------------------------------------------------------


def registries() -> dict[str, Any]:
    """Each registry of the package, by the module that holds it (where its decorators are defined)."""
    from pytest_mllm.engine.spec import LOADERS
    from pytest_mllm.loaders import RESULTS_FOLDERS
    from pytest_mllm.models.ref import MODEL_KINDS
    from pytest_mllm.scoring.metrics import METRICS
    from pytest_mllm.scoring.catalogue_templates import TEMPLATES
    from pytest_mllm.scoring.score import PARSERS
    from pytest_mllm.sections import SECTIONS

    return {"pytest_mllm.engine.spec": LOADERS, "pytest_mllm.scoring.score": PARSERS,
            "pytest_mllm.scoring.metrics": METRICS, "pytest_mllm.models.ref": MODEL_KINDS,
            "pytest_mllm.sections": SECTIONS, "pytest_mllm.scoring.catalogue_templates": TEMPLATES,
            "pytest_mllm.loaders": RESULTS_FOLDERS}


def test_each_entry_is_registered_by_the_module_the_index_names_which_imports_its_registry() -> None:
    """The registry imports a module by its name only where the index read from the source says it declares
    an entry: importing it registers exactly those names, and it imports the registry's module, so its
    arrow is in the import graph (and the layer order) like any other."""
    import importlib

    from pytest_mllm.registry import declarations

    graph = import_graph()
    for home, registry in registries().items():
        index = registry.index()
        assert index, f"{home}: no entry declared"
        for module in sorted(set(index.values())):
            importlib.import_module(module)
            here = [name for name, at in index.items() if at == module]
            assert sorted(registry.registered_by(module)) == sorted(here), (module, registry.kind)
            assert home in graph[module], f"{module} registers {registry.kind}s without importing {home}"
        declared = [d.name for d in declarations() if d.decorator in registry.decorators]
        assert len(set(declared)) == len(declared), f"a {registry.kind} name declared twice: {declared}"
        assert registry.names() == declared


def test_no_module_is_imported_by_a_name_in_a_string() -> None:
    """Only the registry imports by name (the modules its index read from the source); a "module:function"
    string anywhere else would hide an arrow from the import graph."""
    users = []
    for name, (path, _) in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = node.func if isinstance(node, ast.Call) else None
            named = getattr(called, "attr", None) or getattr(called, "id", None)
            if named in ("import_module", "__import__"):
                users.append(name)
    assert sorted(set(users)) == ["pytest_mllm.registry"]


def test_the_schema_and_the_listing_read_the_registries() -> None:
    from pytest_mllm.engine.spec import LOADERS, spec_schema
    from pytest_mllm.harness.listing import listing
    from pytest_mllm.models.ref import MODEL_KINDS
    from pytest_mllm.models.registry import known_names
    from pytest_mllm.scoring.metrics import known_metrics
    from pytest_mllm.scoring.score import PARSERS

    properties = spec_schema()["properties"]
    assert properties["loader"]["enum"] == sorted(LOADERS.names())
    assert properties["parser"]["enum"] == sorted(PARSERS.names())
    assert properties["metrics"]["items"]["enum"] == sorted(known_metrics())
    assert all(f"{name} (" in properties["loader"]["description"] for name in LOADERS.names())
    text = listing()
    for names in (LOADERS.names(), PARSERS.names(), known_metrics(), known_names()):
        assert all(name in text for name in names)
    assert set(MODEL_KINDS.names()) >= {"hf", "openai", "replay", "baseline", "alias", "tiny"}


# -- hooks and internals ------------------------------------------------------------------------------


MAX_HOOK_LINES = 15


def code_lines(source: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of a function holding code (its signature included): no docstring, comment or blank line."""
    docstring = function.body[0] if ast.get_docstring(function) is not None else None
    skipped = set(range(docstring.lineno, (docstring.end_lineno or docstring.lineno) + 1)) if docstring else set()
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                          tokenize.ENDMARKER) or not function.lineno <= token.start[0] <= (function.end_lineno or 0):
            continue
        lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - skipped)


def hook_lengths() -> dict[str, int]:
    """`module:line name` → code lines of every pytest hook the package implements (`pytest_…` functions)."""
    lengths = {}
    for name, (path, _) in _modules().items():
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("pytest_"):
                lengths[f"{name}:{node.lineno} {node.name}"] = code_lines(source, node)
    return lengths


def test_the_line_count_leaves_out_docstrings_comments_and_blank_lines() -> None:
    source = 'def pytest_x(a,\n          b):\n    """Doc\n    string."""\n    # a comment\n\n    c = [a,\n         b]\n    return c\n'
    function = ast.parse(source).body[0]
    assert isinstance(function, ast.FunctionDef) and code_lines(source, function) == 5


def test_every_hook_is_a_few_lines_that_delegate() -> None:
    lengths = hook_lengths()
    assert len(lengths) > 15  # the plugin's, the run's, xdist's
    assert {hook: lines for hook, lines in lengths.items() if lines > MAX_HOOK_LINES} == {}


# What pytest and xdist do not publish, named only in pytest_compat (which test_pytest_compat.py checks):
# their private modules, and the attributes read.
INTERNAL_MODULES = ("_pytest", "xdist")
INTERNAL_NAMES = {"_tw", "_width_of_current_line", "torun", "nextitem_index", "workerinput", "xml_key",
                  "known_args_namespace", "_ispytest", "logfile", "_io"}


def internals_named(name: str, path: Path, is_package: bool) -> set[str]:
    """The internal modules a module imports and the internal names it reads (as attributes, names, imported
    names, keywords or strings)."""
    found = {m for m in _imports(name, path, is_package) if m.split(".")[0] in INTERNAL_MODULES}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        words = {getattr(node, "attr", None), getattr(node, "id", None), getattr(node, "arg", None),
                 node.name if isinstance(node, ast.alias) else None,
                 node.value if isinstance(node, ast.Constant) else None}
        found |= {w for w in words if isinstance(w, str) and w in INTERNAL_NAMES}
    return found


def test_the_internals_check_finds_each_kind_of_reading(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('from _pytest.junitxml import xml_key\nw = reporter._tw\nhasattr(config, "workerinput")\n'
                      'Mark("x", _ispytest=True)\n"text that mentions xdist. and torun loosely"\n')
    assert internals_named("p.m", module, False) == {"_pytest.junitxml", "_pytest.junitxml.xml_key", "xml_key",
                                                     "_tw", "workerinput", "_ispytest"}


def test_pytest_and_xdist_internals_are_read_in_one_module() -> None:
    found = {name: internals for name, where in _modules().items() if name != "pytest_mllm.pytest_compat"
             for internals in [internals_named(name, *where)] if internals}
    assert found == {}
    assert internals_named("pytest_mllm.pytest_compat", *_modules()["pytest_mllm.pytest_compat"]) >= INTERNAL_NAMES
