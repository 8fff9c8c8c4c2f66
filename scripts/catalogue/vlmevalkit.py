"""VLMEvalKit's datasets read from its source: every name its dataset registry builds, the released file's
URL and MD5, the class, its TYPE and MODALITY, where its scoring starts, and what that scoring is.

Names are those `vlmeval/dataset/__init__.py`'s `build_dataset` resolves: the classes of its dataset lists in
order (IMAGE_DATASET, VIDEO_DATASET, …), each naming the keys of its DATASET_URL (or what its own
`supported_datasets` returns); a name claimed twice belongs to the first class, as there.

What VLMEvalKit's scoring does with each name is read from the evaluate method its class inherits. The
generic ones (ImageMCQDataset, ImageVQADataset, ImageYORNDataset) branch on the dataset's name; `RULES`
below writes those branches down, and `check_branches` compares them with the name lists in the source
at this commit, so a VLMEvalKit that branches otherwise stops the generator instead of writing a wrong
catalogue.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from python_source import ClassInfo, ClassRef, Evaluator, Module, Source, Unresolved

REPOSITORY = "open-compass/VLMEvalKit"
DATASETS = "vlmeval/dataset"
REGISTRY = f"{DATASETS}/__init__.py"
LISTS = ("IMAGE_DATASET", "VIDEO_DATASET", "TEXT_DATASET", "CUSTOM_DATASET")
BASE = ("vlmeval/dataset/image_base.py", "ImageBaseDataset")
MCQ = ("vlmeval/dataset/image_mcq.py", "ImageMCQDataset")
VQA = ("vlmeval/dataset/image_vqa.py", "ImageVQADataset")
YORN = ("vlmeval/dataset/image_yorn.py", "ImageYORNDataset")
OCRBENCH = ("vlmeval/dataset/image_vqa.py", "OCRBench")
TDBENCH = ("vlmeval/dataset/image_mcq.py", "TDBench")
CCOCR = ("vlmeval/dataset/image_ccocr.py", "CCOCRDataset")
CCOCR_OCR_GROUPS = ("multi_lan_ocr", "multi_scene_ocr")  # the categories OcrEvaluator scores (token F1)

# ImageMCQDataset.evaluate_heuristic: circular when the name (lowercased) holds one of these; its report
# function by name; names MMMU and LEGO read otherwise in mcq_vanilla_eval / extract_answer_from_item.
MCQ_CIRCULAR = ["mmbench", "ccbench", "circular", "mmcr"]
# ImageVQADataset.evaluate_heuristic: process_line's method per name, then hit_calculate's reduction.
VQA_METHODS = [(["TextVQA"], "vqa_score"), (["ChartQA"], "relaxed_accuracy"), (["OCRVQA", "GQA"], "accuracy"),
               (["DocVQA", "InfoVQA"], "anls")]
VQA_HITS = [(["TextVQA"], "mean"), (["DocVQA", "InfoVQA"], "anls"), (["ChartQA", "OCRVQA"], "max")]
# ImageYORNDataset.evaluate: the rating per name (default_rating otherwise).
YORN_RATINGS = [(["MME"], "MME_rating"), (["Hallusion"], "Hallusion_rating"), (["POPE"], "POPE_rating"),
                (["AMBER"], "AMBER_rating"), (["VSR-zeroshot"], "VSR_rating")]


@dataclass
class Dataset:
    """One dataset name as VLMEvalKit's registry builds it."""

    name: str
    info: ClassInfo
    classes: list[ClassInfo]  # its method resolution order
    url: str | None
    md5: str | None
    type: str | None
    modality: str | None

    def owner(self, method: str) -> ClassInfo | None:
        """The class whose `method` this dataset runs."""
        return next((c for c in self.classes if method in c.methods), None)

    def runs(self, method: str, where: tuple[str, str]) -> bool:
        owner = self.owner(method)
        return owner is not None and owner.key == where


@dataclass
class Skipped:
    """A class whose names the source alone does not give."""

    dataset_class: str
    class_file: str
    why: str


def _list_names(registry: Module) -> dict[str, list[str]]:
    """The class names of each dataset list in the registry module (`X = [...]`, `X += [...]`)."""
    lists: dict[str, list[str]] = {}
    for statement in registry.tree.body:
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.List):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    lists[target.id] = [ast.unparse(e) for e in statement.value.elts]
        elif (isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name)
              and isinstance(statement.value, ast.List)):
            lists.setdefault(statement.target.id, []).extend(ast.unparse(e) for e in statement.value.elts)
    return lists


def read_datasets(root: Path) -> tuple[list[Dataset], list[Skipped], Source]:
    """Every dataset name of the registry's lists, in build_dataset's order of precedence."""
    source = Source(root)
    evaluator = Evaluator(source)
    registry = source.module(REGISTRY)
    lists = _list_names(registry)
    seen: dict[str, Dataset] = {}
    skipped: list[Skipped] = []
    for list_name in LISTS:
        for class_name in lists.get(list_name, []):
            info = source.resolve_class(registry, class_name)
            if info is None:
                skipped.append(Skipped(class_name, REGISTRY, "the class is not defined in the source tree"))
                continue
            mro = source.mro(info)
            try:
                names = _names(evaluator, mro)
                urls = _attribute(evaluator, mro, "DATASET_URL") or {}
            except Unresolved as exc:
                skipped.append(Skipped(info.name, info.module.path, f"its dataset names are computed: {exc}"))
                continue
            md5s = _attribute(evaluator, mro, "DATASET_MD5", default={}) or {}
            kind = _attribute(evaluator, mro, "TYPE")
            modality = _attribute(evaluator, mro, "MODALITY")
            for name in names:
                if name in seen:
                    continue
                url = urls.get(name) if isinstance(urls, dict) else None
                md5 = md5s.get(name) if isinstance(md5s, dict) else None
                seen[name] = Dataset(name, info, mro, _url(url), md5 if _is_md5(md5) else None, kind, modality)
    return list(seen.values()), skipped, source


def _url(value: Any) -> str | list[str] | None:
    """A download URL (or a list of parts); any other value (VLMEvalKit writes '' or 'None' for data it builds
    itself) is none."""
    if isinstance(value, list) and all(isinstance(v, str) and v.startswith(("https://", "http://")) for v in value):
        return value
    return value if isinstance(value, str) and value.startswith(("https://", "http://")) else None


def _is_md5(value: Any) -> bool:
    return isinstance(value, str) and len(value) == 32 and all(c in "0123456789abcdefABCDEF" for c in value)


def _attribute(evaluator: Evaluator, mro: list[ClassInfo], name: str, default: Any = None) -> Any:
    try:
        found = evaluator.class_attribute(mro, name)
    except Unresolved:
        return default
    return default if found is None else found[0]


def _names(evaluator: Evaluator, mro: list[ClassInfo]) -> list[str]:
    """What `supported_datasets()` returns: DATASET_URL's keys unless a class overrides it."""
    owner = next(c for c in mro if "supported_datasets" in c.methods)
    if owner.key == BASE:
        urls = evaluator.class_attribute(mro, "DATASET_URL")
        return list(urls[0]) if urls else []
    names = evaluator.returned(owner.methods["supported_datasets"], mro)
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise Unresolved(f"supported_datasets of {mro[0].name} returns {names!r}")
    return names


# --- the branches of the generic evaluate methods, read from the source -------------------------------------

def listinstr_lists(function: ast.FunctionDef) -> list[list[str]]:
    """The literal lists passed first to `listinstr(...)` in a function, in source order."""
    found = []
    for node in ast.walk(function):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "listinstr"
                and node.args and isinstance(node.args[0], ast.List)):
            found.append((node.lineno, node.col_offset, [e.value for e in node.args[0].elts
                                                         if isinstance(e, ast.Constant)]))
    return [items for _, _, items in sorted(found)]


def check_branches(source: Source) -> list[str]:
    """Differences between `RULES`' reading of the generic evaluate methods and the source; [] when none."""
    problems = []

    def method(where: tuple[str, str], name: str) -> ast.FunctionDef:
        return source.module(where[0]).classes[where[1]].methods[name]

    mcq = listinstr_lists(method(MCQ, "evaluate_heuristic"))
    if not mcq or mcq[0] != MCQ_CIRCULAR:
        problems.append(f"ImageMCQDataset.evaluate_heuristic's circular names are {mcq[:1]}, not {MCQ_CIRCULAR}")
    vqa = listinstr_lists(method(VQA, "evaluate_heuristic"))
    if vqa != [names for names, _ in VQA_METHODS]:
        problems.append(f"ImageVQADataset.evaluate_heuristic branches on {vqa}, not {[n for n, _ in VQA_METHODS]}")
    hit = source.module("vlmeval/dataset/utils/vqa_eval.py").functions["hit_calculate"]
    if listinstr_lists(hit) != [names for names, _ in VQA_HITS]:
        problems.append(f"hit_calculate branches on {listinstr_lists(hit)}, not {[n for n, _ in VQA_HITS]}")
    yorn = listinstr_lists(method(YORN, "evaluate"))
    expected = [["AMBER"], *[names for names, _ in YORN_RATINGS]]
    if yorn != expected:
        problems.append(f"ImageYORNDataset.evaluate branches on {yorn}, not {expected}")
    report = ast.unparse(method(MCQ, "evaluate_heuristic"))
    for needle in ("'MMT' in dataset", "'MMSci' in dataset", "dataset == 'MMVP'", "report_acc(data)"):
        if needle not in report:
            problems.append(f"ImageMCQDataset.evaluate_heuristic no longer holds {needle!r}")
    vanilla = ast.unparse(source.module("vlmeval/dataset/utils/multiple_choice.py").functions["mcq_vanilla_eval"])
    if "'MMMU' in dataset_name" not in vanilla:
        problems.append("mcq_vanilla_eval no longer reads MMMU's names apart")
    evaluators = ast.unparse(source.module("vlmeval/dataset/utils/ccocr_evaluator/__init__.py").tree)
    ocr = ast.unparse(source.module("vlmeval/dataset/utils/ccocr_evaluator/ocr_evaluator.py").tree)
    ccocr = ast.unparse(method(CCOCR, "evaluate"))
    for needle, text in ((f"'{CCOCR_OCR_GROUPS[0]}': OcrEvaluator('{CCOCR_OCR_GROUPS[0]}')", evaluators),
                         (f"'{CCOCR_OCR_GROUPS[1]}': OcrEvaluator('{CCOCR_OCR_GROUPS[1]}')", evaluators),
                         ("if dataset_name in ['Arabic', 'Japanese', 'Korean'] or 'zh' in dataset_name:", ocr),
                         ("if 'multi_scene_ocr' in self.group_name and is_word_level:", ocr),
                         ("final_macro_f1 = sum(macro_f1_list) / (len(macro_f1_list) + 1e-09)", ocr),
                         ("if 'lan_ocr' in key:", ccocr), ("elif 'scene_ocr' in key:", ccocr),
                         ("res['total'] = sum(category_averages) / len(category_averages)", ccocr)):
        if needle not in text:
            problems.append(f"CC-OCR's scoring no longer holds {needle!r}")
    td = ast.unparse(source.module(TDBENCH[0]).classes[TDBENCH[1]].methods["do_evaluate"])
    for needle in ("mcq_vanilla_eval(model, data, meta", "acc = report_acc(data)"):
        if needle not in td:
            problems.append(f"TDBench.do_evaluate no longer holds {needle!r}")
    return problems


def skip_reasons(source: Source) -> dict[str, str]:
    """run.py's names that it does not evaluate itself (a server or a submission scores them, or the split has no
    answers), as {"=NAME" or "~PART": its skip_reason}: exact names, and parts of names (`'X' in dataset_name`)."""
    tree = ast.parse((source.root / "run.py").read_text(encoding="utf-8"))
    reasons: dict[str, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        keywords = [k for statement in node.body for k in ast.walk(statement) if isinstance(k, ast.keyword)
                    and k.arg == "skip_reason" and isinstance(k.value, ast.Constant)]
        if not keywords:
            continue
        for name, exact in _named(node.test):
            reasons.setdefault(("=" if exact else "~") + name, keywords[0].value.value)
    return reasons


def _named(test: ast.expr) -> list[tuple[str, bool]]:
    """The dataset names an if-test of run.py names: (name, exact) for `dataset_name in [...]`, `'X' ==
    dataset_name`; (part, False) for `'X' in dataset_name`."""
    found = []
    for node in ast.walk(test):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1):
            continue
        left, right, op = node.left, node.comparators[0], node.ops[0]
        if isinstance(right, ast.Name) and right.id == "dataset_name" and isinstance(left, ast.Constant):
            found.append((left.value, isinstance(op, ast.Eq)))
        elif (isinstance(left, ast.Name) and left.id == "dataset_name" and isinstance(op, ast.In)
              and isinstance(right, ast.List)):
            found += [(e.value, True) for e in right.elts if isinstance(e, ast.Constant)]
    return found


def skip_reason(name: str, reasons: dict[str, str]) -> str | None:
    for key, reason in reasons.items():
        if (key[0] == "=" and key[1:] == name) or (key[0] == "~" and key[1:] in name):
            return reason
    return None


def judged(dataset: Dataset, source: Source) -> str:
    """Whether the dataset's evaluate path builds an LLM judge ("always"), builds one unless the judge is
    "exact_matching" ("optional"), or never ("never"): read in its evaluate, the other methods of the class
    that defines it, and the functions of that module they name."""
    owner = dataset.owner("evaluate")
    if owner is None:
        return "never"
    called = {n.id for m in owner.methods.values() for n in ast.walk(m) if isinstance(n, ast.Name)}
    texts = [ast.unparse(m) for m in owner.methods.values()]
    texts += [ast.unparse(f) for name, f in owner.module.functions.items() if name in called]
    text = "\n".join(texts)
    if "build_judge" not in text:
        return "never"
    return "optional" if "exact_matching" in text else "always"


# --- what VLMEvalKit's scoring is, per name ------------------------------------------------------------------

@dataclass
class Scoring:
    """How VLMEvalKit scores one dataset, and whether a type template here reproduces it."""

    kind: str  # mcq, mcq_circular, mcq_mmt, yes_no, vqa_score, vqa_anls, vqa_relaxed, vqa_exact, vqa_exact_mean,
    # ocrbench, llm_graded, video, interleaved, other
    scorer: str  # what VLMEvalKit applies, in words
    evaluate: str  # where its scoring starts: "file:Class.method"
    supported: bool
    reason: str | None = None  # why not, starting with its category


def _where(owner: ClassInfo | None, method: str) -> str:
    return f"{owner.module.path}:{owner.name}.{method}" if owner else ""


def _first(name: str, branches: list[tuple[list[str], str]], default: str) -> str:
    return next((result for parts, result in branches if any(p in name for p in parts)), default)


MCQ_SCORER = "can_infer option matching (exact_matching, no judge), mcq_vanilla_eval"
REPORT = "report_acc: accuracy per split, l2-category and category"


def classify(dataset: Dataset, source: Source, reasons: dict[str, str]) -> Scoring:
    """VLMEvalKit's scoring of `dataset`, and whether a type template reproduces it."""
    evaluate = dataset.owner("evaluate")
    where = _where(evaluate, "evaluate")
    name = dataset.name
    if dataset.modality == "VIDEO":
        return Scoring("video", "video frames", where, False, "video: a video benchmark (frames sampled from clips)")
    kind, scorer = _kind(dataset)
    if dataset.runs("evaluate", MCQ) or dataset.runs("evaluate", VQA):
        where = _where(dataset.owner("evaluate_heuristic"), "evaluate_heuristic")
    unreproduced = kind.startswith("unsupported:")
    kind = kind.removeprefix("unsupported:")
    skip = skip_reason(name, reasons)
    if skip is not None:
        return Scoring(kind, scorer, where, False, f"no ground truth here: run.py does not score it ({skip})")
    if isinstance(dataset.url, list):
        return Scoring(kind, scorer, where, False, f"data not a released TSV: released in {len(dataset.url)} parts, "
                       f"which {dataset.info.name} joins when it downloads them")
    if not dataset.url:
        return Scoring(kind, scorer, where, False, "data not a released TSV: no download URL (built by "
                       f"{_where(dataset.owner('load_data'), 'load_data')})")
    loader = dataset.owner("load_data")
    if loader is not None and loader.key != BASE:
        return Scoring(kind, scorer, where, False, f"data not a released TSV: built by {_where(loader, 'load_data')}")
    if kind == "other":
        judge = judged(dataset, source)
        if judge == "always":
            return Scoring("llm_graded", "an LLM judge grades the answers", where, False,
                           f"LLM-graded: {where} asks an LLM judge (build_judge)")
        if dataset.type in INTERLEAVED_TYPES:
            return Scoring("interleaved", f"TYPE {dataset.type}", where, False,
                           f"interleaved output: the model writes {INTERLEAVED_TYPES[dataset.type]}")
        rules = " (rule-based under --judge exact_matching)" if judge == "optional" else ""
        return Scoring("other", f"its own evaluate{rules}", where, False, f"scorer not reproduced yet: {where}{rules}")
    if unreproduced:
        return Scoring(kind, scorer, where, False, f"scorer not reproduced yet: {scorer}")
    return Scoring(kind, scorer, where, True)


INTERLEAVED_TYPES = {"GenerateImgPrompt": "prompts for an image generator, scored on generated images",
                     "MT": "several turns, each answer judged"}


def _kind(dataset: Dataset) -> tuple[str, str]:
    """(kind, scorer): the type of VLMEvalKit's scoring of this name; "other" for a class's own evaluate,
    "unsupported:<kind>" for a generic path whose branch for this name no template reproduces."""
    name = dataset.name
    if dataset.runs("evaluate", MCQ) and dataset.runs("evaluate_heuristic", MCQ):
        if "MMMU" in name:
            return "unsupported:mcq", "mcq_vanilla_eval with MMMU_preproc (open questions as two options)"
        if "LEGO" in name:
            return "unsupported:mcq", "can_infer_lego (ordering questions), report_acc"
        circular = any(part in name.lower() for part in MCQ_CIRCULAR)
        reading = "CircularEval (mcq_circular_eval: a question counts when every rotation is right)" if circular \
            else "mcq_vanilla_eval"
        base = f"can_infer option matching (exact_matching, no judge), {reading}"
        if "MMT" in name:
            return ("mcq_mmt" if not circular else "unsupported:mcq_circular"), f"{base}, report_acc_MMT"
        if "MMSci" in name:
            return "unsupported:mcq", f"{base}, report_acc_MMSci (per setting and subject)"
        if name == "MMVP":
            return "unsupported:mcq", f"{base}, report_acc_MMVP (question pairs both right)"
        return ("mcq_circular" if circular else "mcq"), f"{base}, {REPORT}"
    if dataset.runs("evaluate", TDBENCH):
        return "mcq", f"{MCQ_SCORER}, {REPORT} (TDBench.do_evaluate; the rotation summary is printed beside)"
    if dataset.runs("evaluate", VQA) and dataset.runs("evaluate_heuristic", VQA):
        method = _first(name, VQA_METHODS, "vqa_score_default")
        hit = _first(name, VQA_HITS, "mean")
        kind = {("vqa_score", "mean"): "vqa_score", ("anls", "anls"): "vqa_anls",
                ("relaxed_accuracy", "max"): "vqa_relaxed", ("accuracy", "max"): "vqa_exact",
                ("accuracy", "mean"): "vqa_exact_mean"}.get((method, hit), "unsupported:vqa")
        report = "per split and overall (a split column), else overall and per category"
        return kind, f"process_line method {method}, hit_calculate {hit}; {report}"
    if dataset.runs("evaluate", YORN):
        rating = _first(name, YORN_RATINGS, "default_rating")
        base = "YOrN_Extraction (exact_matching, no judge)"
        return "unsupported:yes_no", f"{base}, {rating}"
    if dataset.runs("evaluate", CCOCR):
        group = next((g for g in CCOCR_OCR_GROUPS if f"/{g}/" in (dataset.url or "")), None)
        if group is None:
            return "other", ""
        return "ccocr_ocr", (f"{group} rows: OcrEvaluator's token F1 (words, or characters for Arabic, Japanese, "
                             "Korean and zh splits), macro F1 per sub-dataset, the groups' mean")
    if dataset.runs("evaluate", OCRBENCH):
        return "ocrbench", ("an accepted answer found in the response (handwritten formulas: spaces removed, case "
                            "kept), right answers counted per type")
    return "other", ""


__all__ = ["Scoring", "classify", "ClassRef", "Dataset", "Skipped", "read_datasets", "check_branches", "skip_reasons", "skip_reason",
           "judged"]
