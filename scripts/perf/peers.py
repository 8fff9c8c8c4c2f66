"""Suite "peers": pytest-mllm, lmms-eval and VLMEvalKit on one model folder and one data set, each
from its own virtual environment (docs/peers.md)."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PIL import Image
from rich.console import Console
from rich.table import Table
from rich.text import Text

from perf.timing import (
    NOISY_SPREAD,
    RUN_FLAGS,
    SUBPROCESS_TIMEOUT_S,
    PerfError,
    Stats,
    all_cached,
    check_counts,
    child_env,
    children_cpu_s,
    load_average,
    machine,
    measure,
    outcome_counts,
    ratio,
    records_of,
)

PEER_TASKS = ("existence", "count", "position", "color", "posters", "celebrity", "scene", "landmark", "artwork",
              "OCR", "commonsense_reasoning", "numerical_calculation", "text_translation", "code_reasoning")
PEER_IMAGES = 56  # two questions each: 112 samples
PEER_COLOURS = {"red": (220, 40, 40), "green": (40, 170, 60), "blue": (40, 80, 220), "yellow": (230, 210, 40)}
PEER_SHAPES = ("circle", "square", "triangle")
PEER_GOALS = {"cold": 0.4, "cached": 0.1}  # pytest-mllm / peer, wall medians, like against like
PEER_MODES = ("cold", "cached")
PEER_DATASET = "PeerMME"  # the TSV's name in $LMUData, a dataset VLMEvalKit builds from --data-config
PEER_TASK = "peer_mme"  # the lmms-eval task written into an --include_path folder
PEER_MODEL = "TinyLLaVA"  # the name the VLMEvalKit driver registers in VLMEvalKit's model table
PEER_ENV_VARS = {"lmms_eval_python": "PERF_LMMS_EVAL_PYTHON", "vlmeval_python": "PERF_VLMEVAL_PYTHON",
                 "vlmeval_src": "PERF_VLMEVAL_SRC"}
MLLM_PYTHON_VAR = "PERF_MLLM_PYTHON"  # pytest-mllm's own environment for the peers suite (default: this one)
PEER_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
PEER_OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "HF_HUB_DISABLE_TELEMETRY": "1", "WANDB_MODE": "disabled", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


@dataclass(frozen=True)
class PeerSample:
    """One question, keyed as pytest-mllm's MME loader keys it: task::image::qN."""

    id: str
    task: str
    image: str
    question: str
    answer: str


@dataclass(frozen=True)
class PeerData:
    """The same samples three ways: an MME release folder, an lmms-eval parquet file, a VLMEvalKit TSV."""

    mme: Path
    parquet: Path
    tsv: Path
    samples: list[PeerSample]


def make_peer_data(root: Path, images: int) -> PeerData:
    """Write `images` PNGs with two yes/no questions each (Yes first) over MME's 14 subtasks, in
    MME's folder layout, as lmms-lab/MME's parquet columns and as VLMEvalKit's MME TSV columns (a
    pair's second row names the first row's index instead of repeating the image, as MME.tsv does).
    Rows are in pytest-mllm's collection order: a row's position is its sample's key for the peers.
    PNG, not JPEG: VLMEvalKit writes each decoded image back to a file named by `image_path`, which
    would re-encode a JPEG (lossy); with PNG all three tools see the same pixels."""
    import base64
    import csv
    import random

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import ImageDraw

    rng = random.Random(0)
    mme = root / "MME_Benchmark_release_version"
    by_task: dict[str, list[tuple[PeerSample, bytes]]] = {task: [] for task in PEER_TASKS}
    for i in range(images):
        task, name = PEER_TASKS[i % len(PEER_TASKS)], f"{i:04d}.png"
        size = (rng.randint(64, 128), rng.randint(48, 96))
        colour, other = rng.sample(sorted(PEER_COLOURS), 2)
        shape = rng.choice(PEER_SHAPES)
        image = Image.new("RGB", size, tuple(rng.randint(200, 250) for _ in range(3)))
        x, y, r = rng.randint(16, size[0] - 16), rng.randint(16, size[1] - 16), rng.randint(6, 14)
        draw, fill = ImageDraw.Draw(image), PEER_COLOURS[colour]
        if shape == "circle":
            draw.ellipse((x - r, y - r, x + r, y + r), fill=fill)
        elif shape == "square":
            draw.rectangle((x - r, y - r, x + r, y + r), fill=fill)
        else:
            draw.polygon([(x, y - r), (x - r, y + r), (x + r, y + r)], fill=fill)
        folder = mme / task
        folder.mkdir(parents=True, exist_ok=True)
        image.save(folder / name)
        pairs = [(colour, "Yes"), (other, "No")]
        (folder / f"{i:04d}.txt").write_text(
            "".join(f"Is there a {c} {shape} in the image? Please answer yes or no.\t{a}\n" for c, a in pairs),
            encoding="utf-8")
        blob = (folder / name).read_bytes()
        for number, (c, answer) in enumerate(pairs, start=1):
            question = f"Is there a {c} {shape} in the image? Please answer yes or no."
            by_task[task].append((PeerSample(f"{task}::{name}::q{number}", task, name, question, answer), blob))
    rows = [row for task in PEER_TASKS for row in by_task[task]]
    samples = [sample for sample, _ in rows]

    parquet = root / "MME" / "data" / "test-00000-of-00001.parquet"
    parquet.parent.mkdir(parents=True)
    string = {"dtype": "string", "_type": "Value"}
    features = {"question_id": string, "image": {"_type": "Image"}, "question": string, "answer": string,
                "category": string}
    table = pa.table({"question_id": [f"{s.task}/{s.image}" for s in samples],
                      "image": [{"bytes": blob, "path": s.image} for s, blob in rows],
                      "question": [s.question for s in samples], "answer": [s.answer for s in samples],
                      "category": [s.task for s in samples]})
    pq.write_table(table.replace_schema_metadata({"huggingface": json.dumps({"info": {"features": features}})}),
                   parquet)

    tsv = root / "LMUData" / f"{PEER_DATASET}.tsv"
    tsv.parent.mkdir()
    with tsv.open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(["index", "image", "question", "answer", "category", "image_path"])
        for index, (s, blob) in enumerate(rows):
            image = base64.b64encode(blob).decode("ascii") if s.id.endswith("q1") else str(index - 1)
            writer.writerow([index, image, s.question, s.answer, s.task, f"{s.task}/{s.image}"])
    return PeerData(mme, parquet, tsv, samples)


PEER_LMMS_TASK = """\
task: {task}
dataset_path: parquet
dataset_kwargs:
  data_files:
    test: {parquet}
test_split: test
output_type: generate_until
doc_to_visual: !function {module}.mme_doc_to_visual
doc_to_text: !function {module}.mme_doc_to_text
doc_to_target: answer
generation_kwargs:
  max_new_tokens: 16
  temperature: 0
  top_p: 1.0
  num_beams: 1
  do_sample: false
process_results: !function {module}.mme_process_results
metric_list:
  - metric: mme_perception_score
    aggregation: !function {module}.mme_aggregate_results
    higher_is_better: true
  - metric: mme_cognition_score
    aggregation: !function {module}.mme_aggregate_results
    higher_is_better: true
lmms_eval_specific_kwargs:
  default:
    pre_prompt: ""
    post_prompt: ""
metadata:
  - version: 0.0
"""


# lmms-eval's own MME functions, imported by the task above: the prompt is the question as written
# (empty pre and post prompts), as pytest-mllm's bundled mme spec renders it.
PEER_LMMS_MODULE = """\
from lmms_eval.tasks.mme.utils import (mme_aggregate_results, mme_doc_to_text, mme_doc_to_visual,
                                       mme_process_results)
"""
PEER_VLMEVAL_LOADING = "peer driver: loading the model"  # printed by the driver's model class
PEER_VLMEVAL_DRIVER = '''\
"""Run VLMEvalKit's run.py with a transformers LLaVA class added to its model table.

argv: MODEL_FOLDER RUN_PY MODEL_NAME [run.py arguments...]. VLMEvalKit's HF LLaVA wrappers load
LLaVA-NeXT, or move the model to CUDA in float16; this class loads LlavaForConditionalGeneration
on the CPU in float32 and answers one message at a time, as VLMEvalKit calls it.

VLMEvalKit imports its whole model and data set zoo at start, and some of those modules import
torchvision (or timm) at their top; neither is installed (torchvision would pull another torch).
Placeholder modules stand in for them: importing works, using one raises. transformers decides
first, for real, that torchvision is absent, so its processors take their PIL code paths.
"""
import importlib.abc
import importlib.machinery
import runpy
import sys
import types
from functools import partial

import torch
import transformers.utils.import_utils as availability
from PIL import Image

ABSENT = {"torchvision", "timm"}
for name in ABSENT:
    check = getattr(availability, f"is_{name}_available", None)
    if check is not None and check():  # cached by transformers from here on
        ABSENT.discard(name)


class Placeholder:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, attribute):
        return Placeholder(f"{self._name}.{attribute}")

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self._name}: not installed in this environment")

    def __mro_entries__(self, bases):
        return (object,)


class AbsentModule(types.ModuleType):
    def __getattr__(self, attribute):
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        return Placeholder(f"{self.__name__}.{attribute}")


class AbsentFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ABSENT:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return AbsentModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []


sys.meta_path.append(AbsentFinder())  # last: consulted only for what is not installed

from vlmeval.config import supported_VLM  # noqa: E402
from vlmeval.vlm.base import BaseModel  # noqa: E402


class LocalLlava(BaseModel):
    INSTALL_REQ = False
    INTERLEAVE = False

    def __init__(self, model_path, max_new_tokens=16, **kwargs):
        from transformers import AutoProcessor, LlavaForConditionalGeneration

        print("{loading}", flush=True)
        self.processor = AutoProcessor.from_pretrained(model_path)
        self.model = LlavaForConditionalGeneration.from_pretrained(model_path, dtype=torch.float32).eval()
        self.max_new_tokens = max_new_tokens

    def generate_inner(self, message, dataset=None):
        content, images = [], []
        for part in message:
            if part["type"] == "image":
                content.append({"type": "image"})
                images.append(Image.open(part["value"]).convert("RGB"))
            else:
                content.append({"type": "text", "text": part["value"]})
        prompt = self.processor.apply_chat_template([{"role": "user", "content": content}],
                                                    add_generation_prompt=True, tokenize=False)
        inputs = self.processor(text=prompt, images=images or None, return_tensors="pt")
        with torch.inference_mode():
            output = self.model.generate(**inputs, do_sample=False, max_new_tokens=self.max_new_tokens)
        return self.processor.decode(output[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True).strip()


folder, run_py, name = sys.argv[1:4]
supported_VLM[name] = partial(LocalLlava, model_path=folder)
sys.argv = [run_py, *sys.argv[4:]]
sys.path.insert(0, str(__import__("pathlib").Path(run_py).parent))
runpy.run_path(run_py, run_name="__main__")
'''


@dataclass(frozen=True)
class PeerPaths:
    """Where the peers live: each virtual environment's interpreter, and VLMEvalKit's source tree."""

    lmms_eval_python: Path | None
    vlmeval_python: Path | None
    vlmeval_src: Path | None

    @classmethod
    def find(cls, args: argparse.Namespace) -> tuple["PeerPaths", list[str]]:
        """The paths from the options, else the environment; and why a peer cannot run, if it cannot."""
        found: dict[str, Path | None] = {}
        for key, variable in PEER_ENV_VARS.items():
            raw = getattr(args, key) or os.environ.get(variable)
            found[key] = Path(raw).expanduser() if raw else None
        paths, missing = cls(**found), []
        if paths.lmms_eval_python is None or not paths.lmms_eval_python.is_file():
            missing.append(f"lmms-eval: no interpreter at --lmms-eval-python or ${PEER_ENV_VARS['lmms_eval_python']} "
                           f"({paths.lmms_eval_python or 'not set'})")
        if paths.vlmeval_python is None or not paths.vlmeval_python.is_file():
            missing.append(f"VLMEvalKit: no interpreter at --vlmeval-python or ${PEER_ENV_VARS['vlmeval_python']} "
                           f"({paths.vlmeval_python or 'not set'})")
        elif paths.vlmeval_src is None or not (paths.vlmeval_src / "run.py").is_file():
            missing.append(f"VLMEvalKit: no run.py in --vlmeval-src or ${PEER_ENV_VARS['vlmeval_src']} "
                           f"({paths.vlmeval_src or 'not set'})")
        return paths, missing


class PeerTool(ABC):
    """One evaluation tool: its command line for a run, and the answers that run wrote."""

    name = ""

    def __init__(self, root: Path, data: PeerData, model: Path) -> None:
        self.root, self.data, self.model = root, data, model

    @abstractmethod
    def command(self, mode: str, run_dir: Path) -> tuple[list[str], dict[str, str]]:
        """The command and the extra environment of one run; `run_dir` is new and empty. Modes:
        "cold" (nothing kept), "fill" (the untimed run that fills the state of "cached" runs), "cached"."""

    @abstractmethod
    def answers(self, run_dir: Path) -> dict[str, str]:
        """Each sample's answer (by pytest-mllm's sample id) as the run in `run_dir` wrote it."""

    @abstractmethod
    def check(self, output: str, mode: str, run_dir: Path) -> None:
        """PerfError unless the run's output shows a complete run, and a cached run reused its state."""


class OursTool(PeerTool):
    """pytest-mllm: the bundled mme spec on the MME folder, `hf:` loading the model folder."""

    name = "pytest-mllm"

    def __init__(self, root: Path, data: PeerData, model: Path, python: Path) -> None:
        super().__init__(root, data, model)
        self.python = python

    def command(self, mode: str, run_dir: Path) -> tuple[list[str], dict[str, str]]:
        cache = self.root / "state" / "ours-cache" if mode != "cold" else run_dir / "cache"
        return [str(self.python), "-m", "pytest", f"--mllm=hf:{self.model}", "--mllm-bench=mme",
                f"--mllm-data={self.data.mme}", f"--mllm-cache-dir={cache}", f"--mllm-json={run_dir / 'results.json'}",
                *RUN_FLAGS], {}

    def answers(self, run_dir: Path) -> dict[str, str]:
        document = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
        return {r["id"]: r["response"] for r in records_of(document, len(self.data.samples))}

    def check(self, output: str, mode: str, run_dir: Path) -> None:
        check_counts(self.name, outcome_counts(output), len(self.data.samples))
        if mode == "cached":
            all_cached(len(self.data.samples))(json.loads((run_dir / "results.json").read_text(encoding="utf-8")))


def check_no_failure(tool: str, output: str, marker: str) -> None:
    """PerfError when a peer logged `marker`: both peers log a failed evaluation and still exit 0."""
    if marker in output:
        at = output.index(marker)
        raise PerfError(f"{tool} reported a failure (exit status 0):\n{output[max(0, at - 500):at + 2500]}")


class LmmsEvalTool(PeerTool):
    """lmms-eval: its `llava_hf` model on a parquet task in an --include_path folder; cached runs add
    --use_cache (its response cache) and keep the datasets cache of the parquet file."""

    name = "lmms-eval"

    def __init__(self, root: Path, data: PeerData, model: Path, python: Path) -> None:
        super().__init__(root, data, model)
        self.python = python
        self.tasks = root / "lmms-tasks"
        self.tasks.mkdir()
        module = f"{PEER_TASK}_utils"
        (self.tasks / f"{PEER_TASK}.yaml").write_text(
            PEER_LMMS_TASK.format(task=PEER_TASK, parquet=data.parquet, module=module), encoding="utf-8")
        (self.tasks / f"{module}.py").write_text(PEER_LMMS_MODULE, encoding="utf-8")

    def command(self, mode: str, run_dir: Path) -> tuple[list[str], dict[str, str]]:
        cached = mode != "cold"
        command = [str(self.python), "-m", "lmms_eval", "--model", "llava_hf",
                   "--model_args", f"pretrained={self.model},dtype=float32,device_map=cpu", "--tasks", PEER_TASK,
                   "--include_path", str(self.tasks), "--batch_size", "1", "--device", "cpu",
                   "--output_path", str(run_dir / "out"), "--log_samples"]
        if cached:
            command += ["--use_cache", str(self.root / "state" / "lmms-cache")]
        hf_home = self.root / "state" / "lmms-hf" if cached else run_dir / "hf"
        return command, {"HF_HOME": str(hf_home)}

    def answers(self, run_dir: Path) -> dict[str, str]:
        files = sorted((run_dir / "out").rglob(f"*samples_{PEER_TASK}*.jsonl"))
        if not files:
            raise PerfError(f"{self.name}: no samples file under {run_dir / 'out'}")
        answers = {}
        for line in files[-1].read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            response = row["filtered_resps"]  # a string, or a list of them in other lmms-eval versions
            while isinstance(response, list):
                response = response[0]
            answers[self.data.samples[int(row["doc_id"])].id] = response
        return answers

    def check(self, output: str, mode: str, run_dir: Path) -> None:
        check_no_failure(self.name, output, "Error during evaluation")
        hits = re.search(r"ResponseCache stats: (\d+) hits", output)
        if mode == "cached" and (hits is None or int(hits.group(1)) != len(self.data.samples)):
            raise PerfError(f"{self.name}, cached: its response cache answered "
                            f"{hits.group(1) if hits else 'no'} of {len(self.data.samples)} requests")


class VLMEvalTool(PeerTool):
    """VLMEvalKit: run.py on the TSV in $LMUData (built as an ImageYORNDataset by --data-config),
    with a transformers LLaVA class registered by a driver; cached runs add --reuse (it reuses the
    prediction file of the last run in its work folder) and keep the images it decoded."""

    name = "VLMEvalKit"

    def __init__(self, root: Path, data: PeerData, model: Path, python: Path, src: Path) -> None:
        super().__init__(root, data, model)
        self.python, self.run_py = python, src / "run.py"
        self.driver = root / "vlmeval_driver.py"
        self.driver.write_text(PEER_VLMEVAL_DRIVER.replace("{loading}", PEER_VLMEVAL_LOADING), encoding="utf-8")

    def command(self, mode: str, run_dir: Path) -> tuple[list[str], dict[str, str]]:
        cached = mode != "cold"
        state = self.root / "state"
        lmudata = state / "vlmeval-lmudata" if cached else run_dir / "lmudata"
        if not (lmudata / self.data.tsv.name).is_file():
            lmudata.mkdir(parents=True, exist_ok=True)
            shutil.copy(self.data.tsv, lmudata / self.data.tsv.name)
        work = state / "vlmeval-work" if cached else run_dir / "work"
        command = [str(self.python), str(self.driver), str(self.model), str(self.run_py), PEER_MODEL,
                   "--data", PEER_DATASET, "--model", PEER_MODEL, "--work-dir", str(work),
                   "--data-config", json.dumps({PEER_DATASET: {"class": "ImageYORNDataset", "dataset": PEER_DATASET}}),
                   "--judge", "exact_matching"]
        return command + (["--reuse"] if cached else []), {"LMUData": str(lmudata)}

    def answers(self, run_dir: Path) -> dict[str, str]:
        from openpyxl import load_workbook
        from openpyxl.utils.escape import unescape  # xlsx stores control characters as _xHHHH_

        work = run_dir / "work" if (run_dir / "work").is_dir() else self.root / "state" / "vlmeval-work"
        files = sorted(work.rglob(f"{PEER_MODEL}_{PEER_DATASET}.xlsx"), key=lambda p: p.stat().st_mtime)
        if not files:
            raise PerfError(f"{self.name}: no prediction file under {work}")
        sheet = load_workbook(files[-1], read_only=True).active
        rows = sheet.iter_rows(values_only=True)
        header = list(next(rows))
        index, prediction = header.index("index"), header.index("prediction")
        return {self.data.samples[int(row[index])].id: "" if row[prediction] is None else unescape(str(row[prediction]))
                for row in rows}

    def check(self, output: str, mode: str, run_dir: Path) -> None:
        check_no_failure(self.name, output, "combination failed")
        if mode == "cached" and PEER_VLMEVAL_LOADING in output:
            raise PerfError(f"{self.name}, cached: it loaded the model (inference was not skipped by --reuse)")


@dataclass
class PeerRun(Stats):
    """One tool in one mode, timed as a whole process; every run's answers are kept."""

    tool: PeerTool | None = None
    mode: str = "cold"
    answer_runs: list[dict[str, str]] = field(default_factory=list)

    def run(self, cwd: Path, env: dict[str, str]) -> tuple[float, float]:
        assert self.tool is not None
        run_dir = self.tool.root / "runs" / f"{re.sub(r'[^A-Za-z0-9]+', '-', self.label)}-{len(self.answer_runs)}"
        run_dir.mkdir(parents=True)
        command, extra = self.tool.command(self.mode, run_dir)
        cpu_start = children_cpu_s()
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=cwd, env={**env, **extra}, capture_output=True, text=True,
                              timeout=SUBPROCESS_TIMEOUT_S)
        elapsed, cpu = time.perf_counter() - start, children_cpu_s() - cpu_start
        output = proc.stdout + proc.stderr
        (run_dir / "output.log").write_text(output, encoding="utf-8")
        if proc.returncode != 0:
            raise PerfError(f"{self.label}: exit status {proc.returncode} from {' '.join(command)}\n{output[-3000:]}")
        self.tool.check(output, self.mode, run_dir)
        answers = self.tool.answers(run_dir)
        if len(answers) != len(self.tool.data.samples):
            raise PerfError(f"{self.label}: {len(answers)} answers, expected {len(self.tool.data.samples)}")
        self.answer_runs.append(answers)
        return elapsed, cpu


def peer_agreement(runs: dict[str, PeerRun], samples: list[PeerSample]) -> dict[str, Any]:
    """Answers compared sample by sample (after stripping white space): each pair of tools, all
    of them, and whether each tool answered alike in all its runs, cold and cached."""
    first = {run.tool.name: {k: v.strip() for k, v in run.answer_runs[0].items()}
             for run in runs.values() if run.mode == "cold" and run.tool is not None}
    tools = list(first)
    pairs: dict[str, Any] = {}
    for i, a in enumerate(tools):
        for b in tools[i + 1:]:
            differ = [s.id for s in samples if first[a].get(s.id) != first[b].get(s.id)]
            pairs[f"{a} = {b}"] = {"equal": len(samples) - len(differ), "differ": differ[:5],
                                   "examples": [{"id": d, a: first[a].get(d), b: first[b].get(d)} for d in differ[:3]]}
    all_equal = sum(1 for s in samples if len({first[t].get(s.id) for t in tools}) == 1)
    stable = {}
    for name in tools:
        mine = [{k: v.strip() for k, v in answers.items()} for run in runs.values() if run.tool is not None
                and run.tool.name == name for answers in run.answer_runs]
        stable[name] = all(answers == mine[0] for answers in mine)
    return {"samples": len(samples), "pairs": pairs, "all_equal": all_equal, "stable_across_runs": stable}


def run_peers(args: argparse.Namespace, paths: PeerPaths, tmp: Path, info: dict[str, Any],
              log: Console) -> tuple[dict[str, PeerRun], PeerData]:
    """Build the model folder and the data once, warm every tool up (untimed: bytecode, OS file cache,
    the cached runs' state), then time the cold runs and the cached runs, interleaved."""
    from pytest_mllm.models.tiny import ensure_tiny_llava

    model = ensure_tiny_llava(tmp / "tiny-llava")  # save_pretrained output: every tool loads this folder
    data = make_peer_data(tmp, args.peer_images)
    (tmp / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    (tmp / "state").mkdir()
    env = {**child_env(tmp / "pycache"), **PEER_THREADS, **PEER_OFFLINE, "HF_HOME": str(tmp / "hf")}
    ours = Path(args.mllm_python or os.environ.get(MLLM_PYTHON_VAR) or sys.executable).expanduser()
    if not ours.is_file():
        raise PerfError(f"pytest-mllm: no interpreter at --mllm-python or ${MLLM_PYTHON_VAR} ({ours})")
    info["mllm_python"] = str(ours)
    tools: list[PeerTool] = [OursTool(tmp, data, model, ours)]
    if paths.lmms_eval_python is not None:
        tools.append(LmmsEvalTool(tmp, data, model, paths.lmms_eval_python))
    if paths.vlmeval_python is not None and paths.vlmeval_src is not None:
        tools.append(VLMEvalTool(tmp, data, model, paths.vlmeval_python, paths.vlmeval_src))
    runs = {f"{tool.name} {mode}": PeerRun(f"{tool.name}, {mode}", tool=tool, mode=mode)
            for mode in PEER_MODES for tool in tools}
    log.print(f"set-up, not recorded: one cached-mode run of each tool, one after another ({len(data.samples)} samples)")
    for tool in tools:
        warm = PeerRun(f"{tool.name} warm-up", tool=tool, mode="fill")
        wall, _ = warm.run(tmp, env)
        log.print(f"  {warm.label}: {wall:.1f} s")
    info["load"]["peers"] = [load_average(), None]
    measure([[runs[f"{tool.name} {mode}"] for tool in tools] for mode in PEER_MODES], args.repeat, tmp, env, log)
    info["load"]["peers"][1] = load_average()
    info["peer_samples"] = len(data.samples)
    info["peer_versions"] = peer_versions(paths)
    return runs, data


def peer_versions(paths: PeerPaths) -> dict[str, str]:
    """lmms-eval's, VLMEvalKit's, torch's and transformers' versions in each peer environment."""
    probe = "import importlib.metadata as m, json, sys; print(json.dumps({d: m.version(d) for d in sys.argv[1:]}))"
    found = {}
    for label, python, dist in (("lmms-eval", paths.lmms_eval_python, "lmms-eval"),
                                ("VLMEvalKit", paths.vlmeval_python, "vlmeval")):
        if python is None:
            continue
        proc = subprocess.run([str(python), "-c", probe, dist, "torch", "transformers"], capture_output=True,
                              text=True, timeout=60)
        found[label] = ", ".join(f"{dist} {v}" for dist, v in json.loads(proc.stdout).items()) \
            if proc.returncode == 0 else f"unknown ({proc.stderr.strip()[-200:]})"
    return found


def peer_report(info: dict[str, Any], runs: dict[str, PeerRun], data: PeerData, repeat: int,
                console: Console) -> dict[str, Any]:
    """Print the peers' table and the answers' agreement; return everything for --json."""
    console.print(f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), {info['os']}",
                  soft_wrap=True)
    console.print(f"versions: Python {info['python']}, pytest-mllm {info['pytest-mllm']}, torch {info['torch']}, "
                  f"transformers {info['transformers']}; " + "; ".join(
                      f"{peer}: {found}" for peer, found in info["peer_versions"].items()), soft_wrap=True)
    console.print(f"pytest-mllm ran from {info['mllm_python']}", soft_wrap=True)
    before, after = info["load"]["peers"]
    console.print(f"1-min load average (before -> after): whole script {info['load_before']} -> "
                  f"{info['load_after']}, timed runs {before} -> {after}", soft_wrap=True)
    tools = [run.tool.name for run in runs.values() if run.mode == "cold" and run.tool is not None]
    ratios: dict[str, dict[str, float]] = {}
    met: dict[str, bool] = {}
    table = Table(title=f"pytest-mllm and its peers: {len(data.samples)} MME-layout samples, greedy, 16 new tokens, "
                        f"1 thread each; {repeat} runs of each, medians and mins", title_justify="left")
    for column in ("figure", "wall med", "wall min", "CPU med", "goal"):
        table.add_column(column, justify="left" if column in ("figure", "goal") else "right", no_wrap=True)
    for mode in PEER_MODES:
        table.add_section()
        ours = runs[f"pytest-mllm {mode}"]
        for name in tools:
            run = runs[f"{name} {mode}"]
            spread = f" [yellow]noisy ({run.spread:.1f}x)[/yellow]" if run.spread > NOISY_SPREAD else ""
            table.add_row(run.label, f"{run.median:.2f} s", f"{run.best:.2f} s", f"{run.cpu_median:.2f} s", spread)
        for name in tools[1:]:
            key = f"{mode}_vs_{name}"
            ratios[key] = ratio(ours, runs[f"{name} {mode}"])
            met[key] = ratios[key]["median"] <= PEER_GOALS[mode]
            verdict = "[green]met[/green]" if met[key] else "[bold red]missed[/bold red]"
            r = ratios[key]
            table.add_row(f"pytest-mllm / {name}, {mode}", f"{r['median']:.2f}x", f"{r['min']:.2f}x",
                          f"{r['cpu_median']:.2f}x", f"<= {PEER_GOALS[mode]:g}x: {verdict}")
    agreement = peer_agreement(runs, data.samples)
    console.print(table)
    n = agreement["samples"]
    parts = [f"{pair}: {result['equal']}/{n}" for pair, result in agreement["pairs"].items()]
    console.print(f"answers equal, sample by sample (first cold run of each, stripped): {', '.join(parts)}; "
                  f"all {len(tools)} alike: {agreement['all_equal']}/{n}", soft_wrap=True)
    for pair, result in agreement["pairs"].items():
        for example in result["examples"]:
            console.print(f"  differs ({pair}): {example}", soft_wrap=True)
    console.print("each tool answered alike in all its runs: " + ", ".join(
        f"{name} {'yes' if same else 'NO'}" for name, same in agreement["stable_across_runs"].items()), soft_wrap=True)
    console.print("cold: nothing reused (pytest-mllm: an empty response cache folder; lmms-eval: no --use_cache, an "
                  "empty HF_HOME, so the parquet file is converted again; VLMEvalKit: a new work folder and $LMUData, so "
                  "it decodes the images again); cached: pytest-mllm's response cache, lmms-eval's --use_cache and its "
                  "datasets cache, VLMEvalKit's --reuse of its prediction file and its decoded images, all filled by an "
                  "untimed run. wall: each tool's whole process (start, imports, model load, data, answers, scores)",
                  soft_wrap=True)
    return {
        "machine": info, "suites": ["peers"], "samples": len(data.samples), "repeat": repeat, "goals": PEER_GOALS,
        "met": met, "ratios": ratios, "answers": agreement,
        "timings_s": {key: {"label": run.label, "median": run.median, "min": run.best, "runs": run.times,
                            "cpu_median": run.cpu_median, "cpu_runs": run.cpu_times, "loads": run.loads}
                      for key, run in runs.items()},
    }


def peers_main(args: argparse.Namespace, console: Console, log: Console) -> int:
    """The peers suite: skipped (exit 0, with the reason) when no peer environment is found."""
    paths, missing = PeerPaths.find(args)
    if len(missing) == 2:
        console.print("peers suite skipped: " + "; ".join(missing) + " (setup: docs/peers.md)", soft_wrap=True)
        return 0
    for reason in missing:  # one peer is missing: the other still runs
        log.print(f"not measured: {reason}", soft_wrap=True)
        if reason.startswith("lmms-eval"):
            paths = PeerPaths(None, paths.vlmeval_python, paths.vlmeval_src)
        else:
            paths = PeerPaths(paths.lmms_eval_python, None, None)
    info = machine()
    info["load_before"] = load_average()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="pytest-mllm-peers-") as tmp:
        try:
            runs, data = run_peers(args, paths, Path(tmp), info, log)
        except (PerfError, subprocess.TimeoutExpired) as exc:
            log.print(Text("error: ", style="bold red") + Text(str(exc)))
            return 2
    info["total_s"] = round(time.perf_counter() - started, 1)
    info["load_after"] = load_average()
    document = peer_report(info, runs, data, args.repeat, console)
    console.print(f"total time of this script: {info['total_s']:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(document, indent=1), encoding="utf-8")
        console.print(f"figures written to {args.json}")
    return 0
