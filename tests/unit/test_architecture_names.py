"""Generic code never names a benchmark or a method: each name in `NAMES` appears, in code (identifiers
and string literals; comments and docstrings are prose), only in the modules that own it. A module owns
a name when its path names it (`scoring/pope.py`, `vrp/`, `loaders/mme_results_section.py`) or
`OWNERS` lists it. A benchmark's own keys in data (a spec YAML) are not code and are not searched.

`PENDING` lists the generic modules that still name one, with the names: the list only shrinks. A name
found anywhere else fails the test; a listed name no longer found fails it too, so the list stays true.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest_mllm

PACKAGE = Path(pytest_mllm.__file__).parent

# name → the words that spell it, as code spells them once split into lowercase words (`tp_eval`,
# `TpEval`, "TP-Eval" → "tp eval").
NAMES: dict[str, str] = {
    "vrp": r"vrp|vrptest",
    "judge": r"judges?|judged|judging|cee|word match\w*|human label\w*",
    "tpeval": r"tp eval|tpeval|optimi[sz]\w*",
    "pope": r"pope",
    "circular": r"circular\w*",
    "mme": r"mme",
    "mmmu": r"mmmu",
    "mmbench": r"mmbench",
    "ocrbench": r"ocrbench",
    "hallusionbench": r"hallusion\w*",
    "lime": r"lime",
    "mmt": r"mmt",
    "mmstar": r"mmstar",
    "seedbench": r"seed ?bench",
    "scienceqa": r"science ?qa",
    "textvqa": r"text ?vqa",
    "docvqa": r"doc ?vqa",
    "chartqa": r"chart ?qa",
    "ai2d": r"ai2d",
    "realworldqa": r"real ?world ?qa",
    "tiny_lvlm_ehub": r"ehub|tiny lvlm",
    "mathvista": r"math ?vista",
    "mmvet": r"mm ?vet",
    "llava_bench": r"llava ?bench|lla va ?bench",  # "LLaVABench" splits into "lla vabench", "LLaVA-Bench" into "lla va bench"
    "ccocr": r"cc ?ocr",
}

# Modules that own a name their path does not spell (a module, or a package and all it holds).
OWNERS: dict[str, tuple[str, ...]] = {
    "vrp": ("pytest_mllm.scoring.code_match",),  # VRPTEST's relaxed accuracy for code answers
    "lime": ("pytest_mllm.curation",),  # LIME-M's curation
    "judge": ("pytest_mllm.scoring.word_match", "pytest_mllm.curation",  # word matching; LIME-M's judge panel
              "pytest_mllm.loaders.tiny_lvlm_ehub"),  # its samples' human labels, the judge's agreement study
    "tiny_lvlm_ehub": ("pytest_mllm.judge", "pytest_mllm.scoring.word_match"),
    "mmbench": ("pytest_mllm.scoring.circular", "pytest_mllm.scoring.circular_section"),  # its CircularEval
    "mmt": ("pytest_mllm.scoring.category_mean",),  # MMT-Bench's report: meta-tasks as the mean of their subtasks
}

# Generic modules that still name a benchmark or method, and the names (space-separated): to be emptied,
# never grown.
PENDING: dict[str, str] = {
}


def _words(text: str) -> str:
    """`text` as lowercase words: camel case and every non-alphanumeric run split ("TpEval_x" → "tp eval x")."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", text).lower()).split())


_PATTERNS = {name: re.compile(rf"(?<![a-z0-9])(?:{words})(?![a-z0-9])") for name, words in NAMES.items()}


def _docstring_lines(tree: ast.AST) -> set[int]:
    """The lines of every docstring (module, class, function)."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def code_words(source: str) -> list[tuple[int, str]]:
    """(line, words) of every identifier and string literal in `source`, comments and docstrings left out."""
    docstrings = _docstring_lines(ast.parse(source))
    texts = {tokenize.NAME, tokenize.STRING, *(getattr(tokenize, kind) for kind in ("FSTRING_MIDDLE",)
                                               if hasattr(tokenize, kind))}
    return [(token.start[0], _words(token.string)) for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type in texts and token.start[0] not in docstrings]


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def owns(module: str, name: str) -> bool:
    """Whether `module` owns `name`: its path spells it, or `OWNERS` gives it (to it or a package above it)."""
    if _PATTERNS[name].search(_words(module.removeprefix("pytest_mllm."))):
        return True
    return any(module == owner or module.startswith(owner + ".") for owner in OWNERS.get(name, ()))


def names_outside_owners(package: Path = PACKAGE) -> list[tuple[str, str, int]]:
    """(module, name, line) of every name found outside the modules that own it: in the code of each module,
    and in each report template (a template `<name>.html.j2` owns its name)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        for line, words in code_words(path.read_text(encoding="utf-8")):
            found += [(module, name, line) for name, pattern in _PATTERNS.items()
                      if pattern.search(words) and not owns(module, name)]
    for path in sorted((package / "templates").glob("*")):
        module = f"templates/{path.name}"
        for line, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            found += [(module, name, line) for name, pattern in _PATTERNS.items()
                      if pattern.search(_words(text)) and not pattern.search(_words(path.name))]
    return found


def test_the_search_reads_code_not_prose() -> None:
    source = '"""A docstring naming MME."""\n# a comment naming POPE\nx = TpEvalRun("vrp-radar", f"mmmu_{y}")\n'
    words = code_words(source)
    assert {line for line, _ in words} == {3} and any(w == "tp eval run" for _, w in words)
    assert [name for name, pattern in _PATTERNS.items() if any(pattern.search(w) for _, w in words)] \
        == ["vrp", "tpeval", "mmmu"]


def test_the_judge_graded_benchmarks_names_are_found_however_spelled() -> None:
    found = {name for name, pattern in _PATTERNS.items()
             for text in ("LLaVABench", "LLaVA-Bench", "llava_bench", "MathVista_MINI", "MMVet", "mm_vet")
             if pattern.search(_words(text))}
    assert found == {"llava_bench", "mathvista", "mmvet"}


def test_a_module_owns_the_names_its_path_spells() -> None:
    assert owns("pytest_mllm.scoring.pope_section", "pope") and owns("pytest_mllm.vrp.radar", "vrp")
    assert owns("pytest_mllm.curation.panel", "lime") and not owns("pytest_mllm.report.html", "pope")
    assert not owns("pytest_mllm.scoring.mmmu", "mme")  # a whole word, not a prefix


def test_no_benchmark_or_method_name_in_a_generic_module() -> None:
    new = sorted({f"{module}: {name} (line {line})" for module, name, line in names_outside_owners()
                  if name not in PENDING.get(module, "").split()})
    assert not new, "generic code names a benchmark or method; let its section, registry or owner module " \
                    "decide instead:\n" + "\n".join(new)


def test_the_pending_list_holds_only_names_still_there() -> None:
    found = {(module, name) for module, name, _ in names_outside_owners()}
    gone = sorted(f"{module}: {name}" for module, names in PENDING.items() for name in names.split()
                  if (module, name) not in found)
    assert not gone, "no longer named there: take them out of PENDING:\n" + "\n".join(gone)
