"""The bad-input table continued (`test_bad_inputs.py`'s `Case` and runner): outputs that must not be
written (devices, FIFOs, links out of their folder, inputs named as outputs, the job summary), servers
whose answers must be bounded, text that must be escaped where it is rendered, data that must be told
apart, and messages that must name their culprit. Each case asserts its exit status, its message, no
traceback, and that no file it built changed (sha256 before and after).

A case may run pytest first (`prepare`, e.g. the shards a merge reads; `between` changes the data
between those runs), answer against a faulty loopback server (`server`, substituted for "{server}":
`chat_stub.ChatStub` or `chat_stub.FaultyServer`, fakes on purpose), and check its outputs (`check`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from chat_stub import ChatStub, FaultyServer
from test_bad_inputs import (
    BASE,
    FAILED,
    OK,
    USAGE,
    YES,
    Case,
    both,
    files,
    jsonl_bench,
    linked,
    nothing,
    run_case,
)

pytest.importorskip("openai")


@pytest.fixture(scope="module", autouse=True)
def _http_stack_imported() -> None:
    """One request before any in-process run: the HTTP stack's lazily imported modules (its socket backend,
    which maps socket timeouts to its exception classes) are then outside the modules pytester forgets after
    each run; imported again inside a run, they would raise classes the SDK's HTTP client does not know."""
    from pytest_mllm.engine.chat import ChatClient

    with ChatStub(lambda body: "warm") as stub:
        assert ChatClient(stub.base_url, None).chat("m", [{"role": "user", "content": "hi"}]).text == "warm"

MINE = ("--mllm-bench={tmp}/mine.yaml", YES)
SERVED = ("--mllm=openai:m", "--mllm-base-url={server}", "--mllm-bench={tmp}/mine.yaml", "--mllm-cache=off")
WEIGHTS = Path(__file__).resolve().parents[2] / "pytest_mllm" / "models" / "weights" / "shapes-llava" / "stage1"


@dataclass(frozen=True)
class Hostile:
    case: Case
    server: str = ""  # "surrogate" (a ChatStub answering a lone surrogate), or a FaultyServer fault
    prepare: tuple[tuple[str, ...], ...] = ()  # pytest runs made first ("{tmp}" substituted)
    between: Callable[[Path], None] | None = None  # after the first prepared run: change the data
    check: Callable[[Path, str], None] | None = None  # (tmp, output) after the case
    took_at_most_s: float | None = None  # the case's own run, in seconds


def fifo(name: str) -> Callable[[Path], None]:
    def build(tmp: Path) -> None:
        os.mkfifo(tmp / name)
    return build


def weights_truncated_to(size: int) -> Callable[[Path], None]:
    def build(tmp: Path) -> None:
        shutil.copytree(WEIGHTS, tmp / "model")
        os.truncate(tmp / "model" / "model.safetensors", size)
    return build


def edit_row(old: str, new: str) -> Callable[[Path], None]:
    def change(tmp: Path) -> None:
        data = tmp / "data" / "b.jsonl"
        data.write_text(data.read_text().replace(old, new))
    return change


def json_written(name: str, *, answer: str | None = None) -> Callable[[Path, str], None]:
    """The results JSON `name` is written (and its first answer is `answer`)."""
    def check(tmp: Path, output: str) -> None:
        document = json.loads((tmp / name).read_text(encoding="utf-8"))
        if answer is not None:
            assert document["records"][0]["response"] == answer, document["records"][0]
    return check


def every_output_written(tmp: Path, output: str) -> None:
    """The results JSON (its answer U+FFFD where the server sent a lone surrogate), the HTML report, the JUnit
    XML and the Markdown summary are all written and readable."""
    json_written("r.json", answer="yes \ufffd")(tmp, output)
    assert "</html>" in (tmp / "r.html").read_text(encoding="utf-8")
    ET.parse(tmp / "j.xml")
    assert "pytest-mllm" in (tmp / "s.md").read_text(encoding="utf-8")


def junit_parses(tmp: Path, output: str) -> None:
    root = ET.parse(tmp / "j.xml").getroot()
    assert any("\\x01" in (p.get("name") or "") for p in root.iter("property")), ET.tostring(root)[:2000]


def summary_has_no_injected_markdown(tmp: Path, output: str) -> None:
    text = (tmp / "summary.md").read_text(encoding="utf-8")
    assert not [line for line in text.splitlines() if line.lstrip("> ").startswith(("## All", "<img", "!["))], text
    assert not re.search(r"(?<!\\)(!\[|<img|http:)", text), text  # each comes escaped: shown, never rendered


JSONL_ROW = '{"id": "a", "image": "ok.png", "question": "Red?", "answer": "yes"}\n'
TWO_ROWS = JSONL_ROW + '{"id": "b", "image": "ok.png", "question": "Blue?", "answer": "no"}\n'
HOSTILE_GROUP = "## All gates passed\\n![ok](http://evil.example/badge.png) <img src=x>"

HOSTILE = [
    # -- outputs: only regular files or new paths, never an input or another output -----------------------
    Hostile(Case("output: --mllm-json=/dev/null", (*MINE, "--mllm-json=/dev/null"), USAGE,
                 "--mllm-json=/dev/null: is a character device, not a regular file", jsonl_bench())),
    Hostile(Case("output: --mllm-html=/dev/stdout", (*MINE, "--mllm-html=/dev/stdout"), USAGE,
                 "--mllm-html=/dev/stdout: is a symbolic link to ", jsonl_bench())),
    Hostile(Case("output: --mllm-json a FIFO", (*MINE, "--mllm-json={tmp}/fifo"), USAGE,
                 "--mllm-json={tmp}/fifo: is a FIFO (named pipe), not a regular file", both(jsonl_bench(), fifo("fifo")))),
    Hostile(Case("output: --mllm-markdown a link out of its folder", (*MINE, "--mllm-markdown={tmp}/out/s.md"), USAGE,
                 "--mllm-markdown={tmp}/out/s.md: is a symbolic link to {tmp}/elsewhere.md, outside its folder",
                 both(jsonl_bench(), files(**{"elsewhere.md": "mine\n", "out__keep": ""}), linked("elsewhere.md", "out/s.md")))),
    Hostile(Case("output: --mllm-mme-results a FIFO", (*MINE, "--mllm-mme-results={tmp}/fifo"), USAGE,
                 "--mllm-mme-results={tmp}/fifo: a file is in the way", both(jsonl_bench(), fifo("fifo")))),
    Hostile(Case("output: --junitxml the data file", (*MINE, "--junitxml={tmp}/data/b.jsonl"), USAGE,
                 "--junitxml={tmp}/data/b.jsonl: that is the data file of benchmark 'mine'", jsonl_bench())),
    Hostile(Case("output: --junitxml the spec", (*MINE, "--junitxml={tmp}/mine.yaml"), USAGE,
                 "--junitxml={tmp}/mine.yaml: that is the benchmark spec mine.yaml", jsonl_bench())),
    Hostile(Case("output: --junitxml the results JSON", (*MINE, "--mllm-json={tmp}/r.json", "--junitxml={tmp}/r.json"),
                 USAGE, "--mllm-json and --junitxml both name {tmp}/r.json", jsonl_bench())),
    Hostile(Case("output: --junitxml a device", (*MINE, "--junitxml=/dev/null"), USAGE,
                 "--junitxml=/dev/null: is a character device", jsonl_bench())),
    Hostile(Case("merge: --html=/dev/null", ("{tmp}/m.json", "{tmp}/s1.json", "--html=/dev/null"), 2,
                 "--html=/dev/null: is a character device, not a regular file", files(**{"s1.json": "{}"}), tool="merge")),
    Hostile(Case("merge: OUT a FIFO", ("{tmp}/fifo", "{tmp}/s1.json"), 2, "OUT={tmp}/fifo: is a FIFO",
                 both(files(**{"s1.json": "{}"}), fifo("fifo")), tool="merge")),
    Hostile(Case("compare: --json=/dev/stdout", ("{tmp}/a.json", "{tmp}/b.json", "--json=/dev/stdout"), 2,
                 "--json=/dev/stdout: is a symbolic link to ", files(**{"a.json": "{}", "b.json": "{}"}), tool="compare")),
    Hostile(Case("curate: --out the data folder", ("{tmp}/mine.yaml", "--out={tmp}/data", "--panel=baseline:yes",
                                                    "--panel=baseline:no"), 2,
                 "--out={tmp}/data: that is the data folder of benchmark 'mine'", jsonl_bench(), tool="curate")),
    Hostile(Case("curate: --out holding a FIFO where report.md goes", ("{tmp}/mine.yaml", "--out={tmp}/out",
                                                                        "--panel=baseline:yes", "--panel=baseline:no"),
                 2, "--out (report.md)={tmp}/out/report.md: is a FIFO", both(jsonl_bench(), files(out="<dir>"),
                                                                              fifo("out/report.md")), tool="curate")),
    # -- the job summary: append-only, never an input or another output; a problem is a warning ----------
    Hostile(Case("step summary: the data file", MINE, OK,
                 "warning: $GITHUB_STEP_SUMMARY={tmp}/data/b.jsonl: that is the data file of benchmark 'mine'",
                 jsonl_bench(), env={"GITHUB_STEP_SUMMARY": "{tmp}/data/b.jsonl"})),
    Hostile(Case("step summary: the spec", MINE, OK,
                 "warning: $GITHUB_STEP_SUMMARY={tmp}/mine.yaml: that is the benchmark spec mine.yaml",
                 jsonl_bench(), env={"GITHUB_STEP_SUMMARY": "{tmp}/mine.yaml"})),
    Hostile(Case("step summary: the baseline", (*MINE, "--mllm-baseline={tmp}/base.json"), OK,
                 "warning: $GITHUB_STEP_SUMMARY={tmp}/base.json: that is the --mllm-baseline file",
                 both(jsonl_bench(), files(**{"base.json": '{"benchmarks": {"mine": {"metrics": {"accuracy": 0.5}}}}'})),
                 env={"GITHUB_STEP_SUMMARY": "{tmp}/base.json"})),
    Hostile(Case("step summary: the results JSON", (*MINE, "--mllm-json={tmp}/r.json"), OK,
                 "warning: $GITHUB_STEP_SUMMARY={tmp}/r.json: --mllm-json writes there too",
                 jsonl_bench(), env={"GITHUB_STEP_SUMMARY": "{tmp}/r.json"}), check=json_written("r.json")),
    Hostile(Case("step summary: a FIFO", (*MINE, "--mllm-json={tmp}/r.json"), OK,
                 "warning: $GITHUB_STEP_SUMMARY={tmp}/fifo: is a FIFO (named pipe), not a regular file",
                 both(jsonl_bench(), fifo("fifo")), env={"GITHUB_STEP_SUMMARY": "{tmp}/fifo"}),
            check=json_written("r.json"), took_at_most_s=60),
    Hostile(Case("step summary: a folder", MINE, OK, "warning: $GITHUB_STEP_SUMMARY={tmp}/reports: is a folder",
                 both(jsonl_bench(), files(reports="<dir>")), env={"GITHUB_STEP_SUMMARY": "{tmp}/reports"})),
    Hostile(Case("step summary: in /proc", MINE, OK,
                 "warning: $GITHUB_STEP_SUMMARY=/proc/summary.md: cannot be appended to", jsonl_bench(),
                 env={"GITHUB_STEP_SUMMARY": "/proc/summary.md"})),
    Hostile(Case("step summary: a missing folder", MINE, OK,
                 "warning: $GITHUB_STEP_SUMMARY={tmp}/gone/s.md: its folder {tmp}/gone does not exist", jsonl_bench(),
                 env={"GITHUB_STEP_SUMMARY": "{tmp}/gone/s.md"})),
    Hostile(Case("step summary: a device", MINE, OK,
                 "warning: $GITHUB_STEP_SUMMARY=/dev/null: is a character device", jsonl_bench(),
                 env={"GITHUB_STEP_SUMMARY": "/dev/null"})),
    # -- a server's answer is bounded; a surrogate in it loses nothing ------------------------------------
    Hostile(Case("served: a lone surrogate in an answer", (*SERVED, "--mllm-json={tmp}/r.json", "--mllm-html={tmp}/r.html",
                                                          "--junitxml={tmp}/j.xml", "--mllm-markdown={tmp}/s.md"), OK,
                 "results written to {tmp}/r.json", jsonl_bench()), server="surrogate", check=every_output_written),
    Hostile(Case("served: a server trickling its body", (*SERVED, "--mllm-timeout=2", "--mllm-json={tmp}/r.json"), FAILED,
                 "no complete answer from {server}/chat/completions within 2 s (--mllm-timeout", jsonl_bench()),
            server="trickle", took_at_most_s=30),
    Hostile(Case("served: a hung server without replicas", (*SERVED, "--mllm-timeout=2", "--mllm-json={tmp}/r.json"),
                 FAILED, "taken as hung and the run's later requests to it fail at once",
                 jsonl_bench(rows="".join(JSONL_ROW.replace('"a"', f'"{n}"') for n in range(12)))),
            server="hung", took_at_most_s=40),
    Hostile(Case("served: a gzip bomb", (*SERVED, "--mllm-json={tmp}/r.json"), FAILED,
                 "answered more than 16 MiB once decompressed: an answer may take at most 16 MiB", jsonl_bench()),
            server="gzip-bomb", took_at_most_s=60),
    Hostile(Case("served: an endless chunked body", (*SERVED, "--mllm-json={tmp}/r.json"), FAILED,
                 "answered more than 16 MiB: an answer may take at most 16 MiB", jsonl_bench()),
            server="endless", took_at_most_s=60),
    # -- text from data made safe where it is rendered ------------------------------------------------------
    Hostile(Case("text: a lone surrogate in a data row", (*MINE, "--mllm-json={tmp}/r.json"), OK,
                 "results written to {tmp}/r.json",
                 jsonl_bench(rows='{"id": "a", "image": "ok.png", "question": "Red\\ud800?", "answer": "yes"}\n')),
            check=json_written("r.json")),
    Hostile(Case("text: a control character in a task name, in the JUnit XML", (*MINE, "--junitxml={tmp}/j.xml"), OK,
                 "passed", jsonl_bench(rows=JSONL_ROW.replace('"id"', '"task": "t\\u0001x", "id"'))),
            check=junit_parses),
    Hostile(Case("text: Rich markup in a category", MINE, OK, "[/]",
                 jsonl_bench(rows=JSONL_ROW.replace('"id"', '"category": "[/]", "id"'),
                             spec_extra="metrics: [accuracy, category]\n"))),
    Hostile(Case("text: Markdown in a group name, in the job summary", MINE, OK, "passed",
                 both(jsonl_bench(spec_extra=f'groups: {{"{HOSTILE_GROUP}": [mine]}}\n'),
                      files(**{"summary.md": "# earlier step\n"})),
                 env={"GITHUB_STEP_SUMMARY": "{tmp}/summary.md"}, changes=("summary.md",)),
            check=summary_has_no_injected_markdown),
    Hostile(Case("baseline: a metric of -Infinity", (*MINE, "--mllm-baseline={tmp}/base.json"), USAGE,
                 "cannot read baseline results {tmp}/base.json: it holds -Infinity, which is not a finite number",
                 both(jsonl_bench(), files(**{"base.json": '{"benchmarks": {"mine": {"metrics": {"accuracy": -Infinity}}}}'})))),
    Hostile(Case("model args: a 5,000-digit integer", ("--mllm=tiny-llava", "--mllm-bench={tmp}/mine.yaml",
                                                      "--mllm-model-args=max_pixels=" + "9" * 5000), USAGE,
                 "--mllm-model-args: the value of 'max_pixels' holds a number of more than 4300 digits", jsonl_bench())),
    Hostile(Case("model args: JSON 5,000 levels deep", ("--mllm=tiny-llava", "--mllm-bench={tmp}/mine.yaml",
                                                       "--mllm-model-args=max_pixels=" + "[" * 5000 + "]" * 5000), USAGE,
                 "--mllm-model-args: the value of 'max_pixels' is nested too deeply to read", jsonl_bench())),
    # -- vague messages made clear ------------------------------------------------------------------------
    Hostile(Case("model args: max_memory=-1GiB", ("--mllm=tiny-llava", "--mllm-bench={tmp}/mine.yaml",
                                                  '--mllm-model-args=max_memory={"0": "-1GiB"}'), USAGE,
                 '--mllm-model-args: max_memory["0"]="-1GiB" is not a size', jsonl_bench())),
    Hostile(Case("weights: a truncated safetensors file", ("--mllm=hf:{tmp}/model", "--mllm-bench={tmp}/mine.yaml"), USAGE,
                 "the weights file model.safetensors in {tmp}/model is truncated: 500000 bytes",
                 both(jsonl_bench(), weights_truncated_to(500_000)))),
    Hostile(Case("weights: a safetensors file cut inside its header", ("--mllm=hf:{tmp}/model", "--mllm-bench={tmp}/mine.yaml"),
                 USAGE, "the weights file model.safetensors in {tmp}/model is truncated or no safetensors file",
                 both(jsonl_bench(), weights_truncated_to(40)))),
    # -- data identity: merge and compare tell other data from a model's change --------------------------------
    Hostile(Case("merge: two valid shards, one of them empty", ("{tmp}/m.json", "{tmp}/s1.json", "{tmp}/s2.json"), OK,
                 "merged results written to {tmp}/m.json", jsonl_bench(), tool="merge"),
            prepare=((*MINE, "--mllm-shard=1/2", "--mllm-json={tmp}/s1.json"),
                     (*MINE, "--mllm-shard=2/2", "--mllm-json={tmp}/s2.json")), check=json_written("m.json")),
    Hostile(Case("merge: shards run on two versions of the data", ("{tmp}/m.json", "{tmp}/s1.json", "{tmp}/s2.json"), 2,
                 "{tmp}/s2.json and {tmp}/s1.json ran benchmark 'mine' on different data", jsonl_bench(rows=TWO_ROWS),
                 tool="merge"),
            prepare=((*MINE, "--mllm-shard=1/2", "--mllm-json={tmp}/s1.json"),
                     (*MINE, "--mllm-shard=2/2", "--mllm-json={tmp}/s2.json")), between=edit_row("Blue?", "Green?")),
    Hostile(Case("compare: a data change is not a model regression", ("{tmp}/a.json", "{tmp}/b.json", "--max-drop=0.01"),
                 FAILED, "b.json ran on other data than a.json", jsonl_bench(rows=TWO_ROWS), tool="compare"),
            prepare=((*MINE, "--mllm-json={tmp}/a.json"), (*MINE, "--mllm-json={tmp}/b.json")),
            between=edit_row('"answer": "no"', '"answer": "yes"'),
            check=lambda tmp, output: ("1 left out: their inputs changed" in output
                                       and "a data change, not a model's regression" in output) or pytest.fail(output)),
    Hostile(Case("baseline: the run's own limit against a baseline run on other data",
                 (*MINE, "--mllm-baseline={tmp}/a.json", "--mllm-max-drop=0.01"), FAILED,
                 "not evaluated: the data changed (digest", jsonl_bench(rows=TWO_ROWS)),
            prepare=((*MINE, "--mllm-json={tmp}/a.json"),), between=edit_row('"answer": "no"', '"answer": "yes"'),
            check=lambda tmp, output: "a data change, not a model's regression" in output or pytest.fail(output)),
]


def test_the_cases_are_distinct() -> None:
    assert len({h.case.id for h in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("hostile", HOSTILE, ids=[h.case.id for h in HOSTILE])
def test_hostile_input(hostile: Hostile, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp = pytester.path
    case = hostile.case
    if hostile.prepare:
        case.build(tmp)
        for n, args in enumerate(hostile.prepare):
            prepared = pytester.runpytest(*BASE, *(arg.replace("{tmp}", str(tmp)) for arg in args))
            assert prepared.ret in (OK, FAILED, pytest.ExitCode.NO_TESTS_COLLECTED), prepared.stdout.str()
            if n == 0 and hostile.between is not None:
                hostile.between(tmp)
        case = dataclasses.replace(case, build=nothing)
    with _server(hostile.server) as url:
        case = dataclasses.replace(case, args=tuple(a.replace("{server}", url) for a in case.args),
                                   culprit=case.culprit.replace("{server}", url))
        start = time.monotonic()
        output = run_case(case, pytester, monkeypatch)
        took = time.monotonic() - start
    if hostile.took_at_most_s is not None:
        assert took < hostile.took_at_most_s, (took, output)
    if hostile.check is not None:
        hostile.check(tmp, output)


class _server:
    """The case's faulty server, or nothing."""

    def __init__(self, fault: str) -> None:
        self.fault = fault

    def __enter__(self) -> str:
        if not self.fault:
            self._server = None
            return "http://127.0.0.1:9/v1"
        self._server = ChatStub(lambda body: "yes \ud800") if self.fault == "surrogate" else FaultyServer(self.fault)
        return self._server.__enter__().base_url

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.__exit__(*exc)


def test_a_hung_server_costs_one_deadline_not_one_per_request(pytester: pytest.Pytester) -> None:
    """24 samples, 8 requests at a time, a 2 s deadline: about 2 s, not 3 waves × 2 s (nor × the retries)."""
    jsonl_bench(rows="".join(JSONL_ROW.replace('"a"', f'"{n}"') for n in range(24)))(pytester.path)
    with FaultyServer("hung") as server:
        start = time.monotonic()
        result = pytester.runpytest(*BASE, "--mllm=openai:m", f"--mllm-base-url={server.base_url}",
                                    f"--mllm-bench={pytester.path}/mine.yaml", "--mllm-cache=off", "--mllm-timeout=2")
        took = time.monotonic() - start
        sent = server.calls
    assert result.ret == FAILED and took < 20, (took, result.stdout.str())
    assert sent <= 9  # the model listing and the first requests in flight, none after the server was found hung
