"""One family's check: its tiny model through the plugin at the default batch size (8) and at
`--mllm-batch-size=1`, on the bundled `shapes` benchmark (one image per question) and MMMU's fixture
(up to five images per question), against its documented transformers usage
(`family_reference.py`, which imports no pytest-mllm code) on the same weights and inputs.

A refused family is checked with a folder holding only its config: the run stops before any sample
with one error that gives the reason. A family that loads but fails on its first question stops the
run at its first sample with one error (models/hf.py's load check).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest
from family_reference import describe_reference, reference_answers

from pytest_mllm.engine.images import load_image
from pytest_mllm.engine.spec import find_spec, load_spec
from pytest_mllm.loaders import load_samples

MMMU = Path(__file__).resolve().parents[2] / "fixtures" / "mmmu" / "data"
MAX_NEW_TOKENS = 6
SELECTION = "(img_000 and (existence or choice)) or Art"  # 3 shapes questions, 4 MMMU ones of 1 to 5 images
LOAD_FAILED = "pytest-mllm: the model could not be loaded: "
TOO_MANY_IMAGES = "per prompt and the sample has"


@dataclass
class Outcome:
    """What the check found for one family, as the sweep's results file records it."""

    model_type: str
    status: str  # "exact", "refused", "fails", "differs"
    detail: str = ""  # the refusal's or the failure's message; what differed
    answered: int = 0  # samples whose answers were compared (each at batch 8, batch 1 and by the reference)
    not_taken: int = 0  # samples with more images than the family takes (one clear error each, in both runs)
    reference: str = ""  # what the reference loop does
    seconds: float = 0.0

    def as_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def run_records(pytester: pytest.Pytester, folder: Path, *extra: str) -> tuple[Any, list[dict]]:
    """The plugin's run of the selected samples with the model in `folder`: its result and its records."""
    out = pytester.path / f"out{len(list(pytester.path.glob('out*.json')))}.json"
    result = pytester.runpytest(
        "-p", "no:cacheprovider", f"--mllm=hf:{folder}", "--mllm-bench=shapes", "--mllm-bench=mmmu",
        f"--mllm-data=mmmu={MMMU}", "-k", SELECTION, f"--mllm-max-new-tokens={MAX_NEW_TOKENS}", "--mllm-cache=off",
        f"--mllm-json={out}", *extra)
    records = json.loads(out.read_text())["records"] if out.exists() else []
    return result, records


def sample_inputs(records: list[dict]) -> list[tuple[str, list]]:
    """(prompt, images) of each record, read from the benchmarks' files as the run read them."""
    samples = {}
    for name, root in (("shapes", None), ("mmmu", str(MMMU))):
        spec = load_spec(find_spec(name))
        samples.update({(name, s.id): s for s in load_samples(spec, spec.resolve_data_root(root))})
    return [(r["prompt"], [load_image(ref) for ref in samples[r["benchmark"], r["id"]].images]) for r in records]


def check_refused(pytester: pytest.Pytester, model_type: str, folder: Path, reason: str) -> Outcome:
    """The run with a folder of a refused family stops before any sample, with its reason."""
    start = time.perf_counter()
    result, records = run_records(pytester, folder)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and records == [], output[-2000:]
    assert reason in " ".join(output.split()), output[-2000:]
    return Outcome(model_type, "refused", reason, seconds=time.perf_counter() - start)


def check_family(pytester: pytest.Pytester, model_type: str, folder: Path) -> Outcome:
    """Batch 8 = batch 1 = the reference, sample by sample; or one clear error at the first sample."""
    start = time.perf_counter()
    result, batched = run_records(pytester, folder)
    failed = next((line for line in result.stdout.lines if line.startswith(LOAD_FAILED)), None)
    if failed is not None:  # one error, at the first sample; the run stops there
        errors = [line for line in result.stdout.lines if line.startswith("ERROR ")]  # the short summary's lines
        assert result.ret == pytest.ExitCode.USAGE_ERROR and len(errors) == 1, result.stdout.str()
        message = failed[len(LOAD_FAILED):].replace(f"'{folder}' ", "", 1)  # the folder is this machine's
        return Outcome(model_type, "fails", message[:400], reference=describe_reference(folder),
                       seconds=time.perf_counter() - start)
    assert batched, result.stdout.str()[-3000:]
    errors = [r["error"] for r in batched if r["status"] == "error"]
    assert all(TOO_MANY_IMAGES in e for e in errors), errors
    _, alone = run_records(pytester, folder, "--mllm-batch-size=1")
    inputs = sample_inputs(batched)
    reference = reference_answers(folder, inputs, max_new_tokens=MAX_NEW_TOKENS)
    differences = []
    for one, many, expected in zip(alone, batched, reference):
        got = (many["status"] == "error", many["response"]), (one["status"] == "error", one["response"])
        wanted = (expected is None, expected if expected is not None else many["response"])
        if got[0] != wanted or got[1] != wanted:
            differences.append(f"{many['benchmark']}::{many['id']}: batch 8 {got[0]!r}, batch 1 {got[1]!r}, "
                               f"reference {expected!r}")
    answered = sum(e is not None for e in reference)
    status = "exact" if not differences and answered else "differs"
    return Outcome(model_type, status, "; ".join(differences)[:1500], answered, len(reference) - answered,
                   describe_reference(folder), time.perf_counter() - start)
