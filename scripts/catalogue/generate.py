#!/usr/bin/env python
"""Write the benchmark catalogue (benchmarks/catalogue/*.json) from VLMEvalKit's and lmms-eval's source.

    python scripts/catalogue/generate.py --vlmevalkit DIR --lmms-eval DIR [--out benchmarks/catalogue]
    python scripts/catalogue/generate.py ... --check      # exit 1 when the committed files differ

DIR is a checkout (or `git archive`) of each repository at the commit named with --vlmevalkit-commit /
--lmms-eval-commit (default: the commits the committed catalogue read, below); their source is read as
syntax trees and YAML, never imported or run. Then the catalogue's specs are written (or checked):

    python scripts/catalogue/specs.py [--check]

vlmevalkit.json holds every image (and video) dataset name VLMEvalKit's registry builds: the released
file's URL and MD5, the class and where its scoring starts, its kind and VLMEvalKit's scorer in words,
and whether this project's type templates reproduce that scoring (else the reason). lmms_eval.json holds
lmms-eval's tasks that read a Hugging Face dataset: id, config, revision, split, metrics, modality, and
the VLMEvalKit name the task maps to (`PEERS`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import lmms_eval  # noqa: E402
import vlmevalkit  # noqa: E402

REPO = HERE.parents[1]
OUT = REPO / "benchmarks" / "catalogue"
FORMAT = 1
VLMEVALKIT_COMMIT = "e8e78f05f3080fe28154f2130321f17951c3be94"
LMMS_EVAL_COMMIT = "75571cfe0fa36ca5ec2e6aa2bb268f9d38295af3"

# lmms-eval's task → VLMEvalKit's dataset of the same benchmark and split (both must exist in the source read).
PEERS = {
    "3dsrbench": "3DSRBench", "abench_dev": "A-Bench_VAL", "ai2d": "AI2D_TEST", "ai2d_no_mask": "AI2D_TEST_NO_MASK",
    "chartqa": "ChartQA_TEST", "chartqapro": "ChartQAPro", "cmmmu_val": "CMMMU_VAL", "countbenchqa": "CountBenchQA",
    "cv_bench_2d": "CV-Bench-2D", "cv_bench_3d": "CV-Bench-3D", "docvqa_test": "DocVQA_TEST",
    "docvqa_val": "DocVQA_VAL", "dtcbench": "K-DTCBench", "embspatial": "EmbSpatialBench", "erqa": "ERQA",
    "gqa": "GQA_TestDev_Balanced", "hallusion_bench_image": "HallusionBench", "hrbench4k": "HRBench4K",
    "hrbench8k": "HRBench8K", "infovqa_test": "InfoVQA_TEST", "infovqa_val": "InfoVQA_VAL",
    "llava_in_the_wild": "LLaVABench", "mathverse_testmini": "MathVerse_MINI", "mathvision_test": "MathVision",
    "mathvision_testmini": "MathVision_MINI", "mathvista_testmini_format": "MathVista_MINI",
    "mmbench_cn_cc": "CCBench", "mmbench_cn_dev": "MMBench_DEV_CN", "mmbench_cn_test": "MMBench_TEST_CN",
    "mmbench_en_dev": "MMBench_DEV_EN", "mmbench_en_test": "MMBench_TEST_EN", "mmbench_ko_dev": "MMBench_DEV_KO",
    "mme": "MME", "mmerealworld": "MME-RealWorld", "mmerealworld_cn": "MME-RealWorld-CN", "mmmu_test": "MMMU_TEST",
    "mmmu_val": "MMMU_DEV_VAL", "mmsi_bench": "MMSIBench_wo_circular", "mmstar": "MMStar", "mmstar_ko": "MMStar_KO",
    "mmt_mi_val": "MMT-Bench_VAL_MI", "mmt_val": "MMT-Bench_VAL", "mmvet": "MMVet", "mmvp": "MMVP",
    "mtvqa": "MTVQA_TEST", "muirbench": "MUIRBench", "naturalbench": "NaturalBenchDataset", "ocrbench": "OCRBench",
    "ocrbench_v2": "OCRBench_v2", "pope": "POPE", "qbench_dev": "Q-Bench1_VAL", "realworldqa": "RealWorldQA",
    "scienceqa_img": "ScienceQA_TEST", "seedbench": "SEEDBench_IMG", "seedbench_2": "SEEDBench2",
    "seedbench_2_plus": "SEEDBench2_Plus", "seedbench_ko": "SEEDBench_IMG_KO", "textvqa_val": "TextVQA_VAL",
    "viewspatial": "ViewSpatialBench", "vizwiz_vqa_val": "VizWiz", "vl_rewardbench": "VL-RewardBench",
    "vlmsareblind": "VLMBlind", "vmcbench": "VMCBench_DEV", "vstar_bench": "VStarBench", "wildvision_0617": "WildVision",
    "zerobench": "ZEROBench",
}


def vlmevalkit_entries(root: Path, peers: dict[str, list[str]]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    datasets, skipped, source = vlmevalkit.read_datasets(root)
    problems = vlmevalkit.check_branches(source)
    if problems:
        raise SystemExit("VLMEvalKit's scoring branches differ from this generator's reading; read them again "
                         "and update scripts/catalogue/vlmevalkit.py:\n  " + "\n  ".join(problems))
    reasons = vlmevalkit.skip_reasons(source)
    entries = []
    for dataset in datasets:
        if dataset.modality not in ("IMAGE", "VIDEO"):
            continue
        scoring = vlmevalkit.classify(dataset, source, reasons)
        entries.append({
            "name": dataset.name,
            "file": f"{dataset.name}.tsv",
            "url": dataset.url if isinstance(dataset.url, str) else None,
            "md5": dataset.md5,
            "modality": dataset.modality,
            "dataset_class": dataset.info.name,
            "class_file": dataset.info.module.path,
            "vlmevalkit_type": dataset.type,
            "evaluate": scoring.evaluate,
            "kind": scoring.kind,
            "scorer": scoring.scorer,
            "supported": scoring.supported,
            "reason": scoring.reason,
            "lmms_eval": sorted(peers.get(dataset.name, [])),
        })
    return entries, [vars(s) for s in skipped if s.class_file]


def lmms_eval_entries(root: Path, pairs: dict[str, str]) -> list[dict[str, Any]]:
    return [{"task": t.task, "yaml": t.yaml, "dataset_path": t.dataset_path, "dataset_name": t.dataset_name,
             "revision": t.revision, "split": t.split, "metrics": t.metrics, "modality": t.modality,
             "vlmevalkit": pairs.get(t.task)} for t in lmms_eval.read_tasks(root) if t.modality == "image"]


def documents(vlmevalkit_root: Path, lmms_root: Path, vlmevalkit_commit: str, lmms_commit: str,
              pairs: dict[str, str] = PEERS) -> dict[str, str]:
    """{file name: text} of the catalogue (`pairs`: lmms-eval task → VLMEvalKit dataset)."""
    tasks = lmms_eval_entries(lmms_root, pairs)
    names = {t["task"] for t in tasks}
    missing = sorted(set(pairs) - names)
    if missing:
        raise SystemExit(f"PEERS names lmms-eval tasks this source has no image task for: {missing}")
    peers: dict[str, list[str]] = {}
    for task, name in pairs.items():
        peers.setdefault(name, []).append(task)
    entries, skipped = vlmevalkit_entries(vlmevalkit_root, peers)
    unknown = sorted(set(peers) - {e["name"] for e in entries})
    if unknown:
        raise SystemExit(f"PEERS names VLMEvalKit datasets this source does not build: {unknown}")
    generator = "scripts/catalogue/generate.py"
    vlm = {"format": FORMAT, "source": {"repository": vlmevalkit.REPOSITORY, "commit": vlmevalkit_commit,
                                        "generator": generator},
           "entries": entries, "unread_classes": skipped}
    lmms = {"format": FORMAT, "source": {"repository": lmms_eval.REPOSITORY, "commit": lmms_commit,
                                         "generator": generator},
            "entries": tasks}
    return {"vlmevalkit.json": _dump(vlm), "lmms_eval.json": _dump(lmms)}


def _dump(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None, pairs: dict[str, str] = PEERS) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vlmevalkit", type=Path, required=True, help="VLMEvalKit's source at the commit")
    parser.add_argument("--lmms-eval", type=Path, required=True, help="lmms-eval's source at the commit")
    parser.add_argument("--vlmevalkit-commit", default=VLMEVALKIT_COMMIT)
    parser.add_argument("--lmms-eval-commit", default=LMMS_EVAL_COMMIT)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true", help="compare with the files in --out, write nothing")
    args = parser.parse_args(argv)
    written = documents(args.vlmevalkit, args.lmms_eval, args.vlmevalkit_commit, args.lmms_eval_commit, pairs)
    stale = [n for n, text in written.items()
             if not (args.out / n).is_file() or (args.out / n).read_text(encoding="utf-8") != text]
    if args.check:
        for name in stale:
            print(f"{args.out / name} is not what the generator writes from this source")
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in written.items():
        (args.out / name).write_text(text, encoding="utf-8")
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
