"""Suite "core": the synthetic --samples benchmark (figures c, c2, c3: collection, and runs against
plain pytest, without and with -n 2), and the cached-model benchmark figure b re-runs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from perf.timing import RUN_FLAGS, Case

TASKS = 10
SAMPLE_ID = "s{:06d}"
WRONG_EVERY = 5  # every fifth recorded answer is the wrong one
COLLECT_GOAL_S = 3.0
RATIO_GOAL = 1.5
CACHED_MODEL = "perf-model"
GENERATED_MARKER = "perf-model-generated"  # the cached model touches this file whenever it is asked


@dataclass(frozen=True)
class Workload:
    """The generated files, and what a run of the benchmark must report."""

    root: Path
    spec: Path
    predictions: Path
    plain_tests: Path
    samples: int
    correct: int
    cached_spec: Path

    @property
    def plugin_outcomes(self) -> dict[str, int]:
        """Summary counts of a plugin run: right answers pass, wrong ones are "incorrect"."""
        return {"passed": self.correct, "incorrect": self.samples - self.correct}


def make_workload(root: Path, samples: int) -> Workload:
    """Write the benchmark (spec, samples, one PNG), its recorded answers, the plain tests,
    and the cached-model benchmark (a spec over the same samples plus its conftest)."""
    (root / "images").mkdir()
    Image.new("RGB", (64, 64), (200, 40, 40)).save(root / "images" / "red.png")
    correct = 0
    with (root / "samples.jsonl").open("w", encoding="utf-8") as bench, \
            (root / "predictions.jsonl").open("w", encoding="utf-8") as predictions:
        for i in range(samples):
            pair = i // 2
            task = f"task{pair % TASKS}"
            answer, colour = ("yes", "red") if i % 2 == 0 else ("no", "blue")
            sample_id = SAMPLE_ID.format(i)
            bench.write(json.dumps({
                "id": sample_id, "task": task, "image": "images/red.png",
                "question": f"Image {pair}: is the square {colour}?", "answer": answer,
                "answer_type": "yes_no", "pair_group": f"p{pair}",
            }) + "\n")
            wrong = i % WRONG_EVERY == 0
            correct += not wrong
            response = ("No" if answer == "yes" else "Yes") if wrong else answer.capitalize()
            predictions.write(json.dumps({"id": f"{task}::{sample_id}", "response": response}) + "\n")
    spec_text = ("name: perf_bench\nloader: jsonl\ndata: {{root: {root}, file: samples.jsonl}}\nparser: mme\n"
                 "prompt: \"{{question}} Please answer yes or no.\"\nmetrics: [accuracy, accuracy_plus]\n")
    spec = root / "perf_bench.yaml"
    spec.write_text(spec_text.format(root="."), encoding="utf-8")
    plain = root / "test_plain.py"
    plain.write_text(
        f"import pytest\n\n\n@pytest.mark.parametrize(\"i\", range({samples}))\n"
        "def test_x(i):\n    assert i >= 0\n",
        encoding="utf-8",
    )
    (root / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # rootdir here, no ini from above
    cached = root / "cached"  # its own folder: the plain runs must not load its conftest
    cached.mkdir()
    (cached / "perf_bench.yaml").write_text(spec_text.format(root=".."), encoding="utf-8")
    (cached / "conftest.py").write_text(CACHED_CONFTEST.format(name=CACHED_MODEL, wrong_every=WRONG_EVERY,
                                                               marker=str(root / GENERATED_MARKER)), encoding="utf-8")
    return Workload(root, spec, root / "predictions.jsonl", plain, samples, correct, cached / "perf_bench.yaml")


CACHED_CONFTEST = '''"""A cacheable model that answers instantly: the recorded answers' pattern, every fifth wrong."""


class PerfModel:
    name = "{name}"
    needs_images = False
    identity = "{name}-v1"  # an identity: the plugin caches this model's answers

    def generate(self, requests):
        from pathlib import Path

        from pytest_mllm.sample import Response

        Path({marker!r}).touch()  # a run that asks the model was not fully cached
        answers = []
        for request in requests:
            right = request.sample.answer.capitalize()
            wrong = int(request.sample.id.rpartition("::")[2][1:]) % {wrong_every} == 0  # ids: task::s000123
            answers.append(Response(("No" if right == "Yes" else "Yes") if wrong else right))
        return answers


def pytest_mllm_make_model(spec, config):
    return PerfModel() if spec == "{name}" else None
'''


def core_cases(work: Workload) -> dict[str, Case]:
    """Figures c, c2, c3: collection, and runs against plain pytest, without and with -n 2."""
    bench = [work.spec.name, f"--mllm=replay:{work.predictions.name}"]
    plain = [work.plain_tests.name]
    n = work.samples
    return {
        "collect_plugin": Case("c. collect, plugin", args=[*bench, "--collect-only", "-q"], expected={"collected": n}),
        "collect_plain": Case("c. collect, plain", args=[*plain, "--collect-only", "-q"], expected={"collected": n}),
        "run_plugin": Case("c2. run, plugin", args=[*bench, *RUN_FLAGS], expected=work.plugin_outcomes),
        "run_plain": Case("c2. run, plain", args=[*plain, *RUN_FLAGS], expected={"passed": n}),
        "run_n2_plugin": Case("c3. run -n 2, plugin", args=[*bench, *RUN_FLAGS, "-n", "2"], expected=work.plugin_outcomes),
        "run_n2_plain": Case("c3. run -n 2, plain", args=[*plain, *RUN_FLAGS, "-n", "2"], expected={"passed": n}),
    }
