"""Bad input of every kind, one table: each case ends with the right exit status, a message that
names the culprit (option, file or field), and no traceback or INTERNALERROR.

Most cases are usage errors (exit 4) or collection errors (exit 2) that stop before any model
runs; the rest run a few samples with a baseline model. Each case is one in-process pytester run.

With BAD_INPUTS_TABLE=1 the table (case, exit status, first line of the message) is written to
$BAD_INPUTS_TABLE_PATH (default /tmp/work/bad_inputs_table.md) and printed at the end.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import pytest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OK_PNG = (FIXTURES / "bad" / "ok.png").read_bytes()
USAGE, COLLECTION, FAILED, OK = 4, 2, 1, 0
BASE = ("-p", "no:cacheprovider", "-p", "no:randomly")
YES = "--mllm=baseline:yes"
SHAPES = (YES, "--mllm-bench=shapes")
FEW = ("-k", "img_000")  # 4 samples of shapes' existence task … and a few of the others
LATIN1 = "question: caf\xe9\n".encode("latin-1")


def jsonl_bench(rows: str | bytes = '{"id": "a", "image": "ok.png", "question": "Red?", "answer": "yes"}\n',
                spec_extra: str = "", data_file: str = "b.jsonl", name: str = "mine") -> Callable[[Path], None]:
    """A jsonl benchmark in tmp: data/ok.png, data/<data_file>, mine.yaml."""
    def build(tmp: Path) -> None:
        data = tmp / "data"
        data.mkdir(exist_ok=True)
        (data / "ok.png").write_bytes(OK_PNG)
        target = data / data_file
        target.write_bytes(rows if isinstance(rows, bytes) else rows.encode())
        (tmp / "mine.yaml").write_text(f"name: {name}\nloader: jsonl\nparser: mme\n"
                                       f"data: {{root: data, file: {data_file}}}\n{spec_extra}")
    return build


def files(**contents: str | bytes) -> Callable[[Path], None]:
    """Files in tmp (`__` in a name is a folder separator, `_dir` at the end makes a folder)."""
    def build(tmp: Path) -> None:
        for name, content in contents.items():
            path = tmp / name.replace("__", "/")
            path.parent.mkdir(parents=True, exist_ok=True)
            if content == "<dir>":
                path.mkdir(exist_ok=True)
            else:
                path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return build


def spec(text: str | bytes, name: str = "mine.yaml") -> Callable[[Path], None]:
    return files(**{name: text})


def both(*builders: Callable[[Path], None]) -> Callable[[Path], None]:
    def build(tmp: Path) -> None:
        for builder in builders:
            builder(tmp)
    return build


def nothing(tmp: Path) -> None:
    pass


# -- builders of issue 28's cases (hostile files, faults) -------------------------------------------


def alias_bomb(levels: int = 9) -> str:
    """A YAML value of 10**(levels+1) strings in a few hundred bytes ("billion laughs")."""
    expr = "&a0 [" + ", ".join(['"lol"'] * 10) + "]"
    for level in range(1, levels + 1):
        expr = f"&a{level} [{expr}, " + ", ".join([f"*a{level - 1}"] * 9) + "]"
    return expr


DEEP_YAML = "[" * 20_000 + "]" * 20_000  # 20,000 nested lists
DEEP_JSON = DEEP_YAML  # the same text is JSON too


def image_bytes(kind: str) -> bytes:
    """OK_PNG re-encoded by Pillow as `kind` (JPEG, GIF, BMP, WEBP, TIFF, ICO)."""
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.open(io.BytesIO(OK_PNG)).convert("RGB").save(buffer, format=kind)
    return buffer.getvalue()


EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 10 10\nnewpath 0 0 moveto 10 10 lineto stroke\nshowpage\n%%EOF\n"
POSTSCRIPT = b"%!PS\n/Helvetica findfont 12 scalefont setfont 10 10 moveto (x) show showpage\n"
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'


def one_image(name: str, content: bytes) -> Callable[[Path], None]:
    """A jsonl benchmark whose one sample shows data/<name>."""
    row = json.dumps({"id": "a", "image": name, "question": "Red?", "answer": "yes"}) + "\n"
    return both(jsonl_bench(rows=row), files(**{f"data__{name}": content}))


def linked(target: str, link: str, hard: bool = False) -> Callable[[Path], None]:
    """tmp/<link> a symbolic (or hard) link to tmp/<target>."""
    def build(tmp: Path) -> None:
        (tmp / link).parent.mkdir(parents=True, exist_ok=True)
        if hard:
            os.link(tmp / target, tmp / link)
        else:
            (tmp / link).symlink_to(tmp / target)
    return build


def parquet_bench(answer: str, options: list[str], loader_options: str = "",
                  spec_extra: str = "") -> Callable[[Path], None]:
    """A parquet benchmark of one multiple-choice row (question, options, answer, image)."""
    def build(tmp: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        (tmp / "data").mkdir(exist_ok=True)
        table = pa.table({"question": ["Which?"], "options": [options], "answer": [answer],
                          "image": [{"bytes": OK_PNG, "path": "ok.png"}]})
        pq.write_table(table, tmp / "data" / "test.parquet")
        (tmp / "mine.yaml").write_text(
            "name: mine\nloader: parquet\nparser: choice\ndata: {root: data, file: test.parquet}\n"
            f"loader_options: {{task: t, columns: {{choices: options}}{loader_options}}}\n{spec_extra}")
    return build


def cache_file(columns: str) -> Callable[[Path], None]:
    """cache/responses.sqlite3 at the current schema version, its table holding `columns`."""
    def build(tmp: Path) -> None:
        import sqlite3

        (tmp / "cache").mkdir(exist_ok=True)
        db = sqlite3.connect(tmp / "cache" / "responses.sqlite3")
        db.execute(f"CREATE TABLE responses ({columns})")
        db.execute("PRAGMA user_version=2")
        db.commit()
        db.close()
    return build


def xlsx_entity_bomb(tmp: Path) -> None:
    """p.xlsx: a VLMEvalKit prediction workbook whose sheet declares nested XML entities."""
    import io
    import zipfile

    from openpyxl import Workbook

    book = Workbook()
    book.active.append(["index", "prediction"])
    book.active.append([1, "yes"])
    plain = io.BytesIO()
    book.save(plain)
    entities = '<!DOCTYPE worksheet [<!ENTITY a "aaaaaaaaaa">' + "".join(
        f'<!ENTITY {chr(98 + i)} "' + f"&{chr(97 + i)};" * 10 + '">' for i in range(8)) + "]>"
    with zipfile.ZipFile(plain) as source, zipfile.ZipFile(tmp / "p.xlsx", "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "xl/worksheets/sheet1.xml":
                text = data.decode()
                at = text.index("<worksheet")
                text = text[:at] + entities + text[at:]
                text = text.replace("</sheetData>", '<row r="3"><c r="A3" t="inlineStr"><is><t>&i;</t></is></c></row>'
                                                    "</sheetData>")
                data = text.encode()
            target.writestr(item, data)


# A model of the user's conftest with an identity, so that its answers are cached (fault cases of the cache)
CACHED_MODEL = '''
from pytest_mllm.sample import Response

class Counting:
    name = "counting"
    needs_images = False
    identity = "counting-v1"

    def __init__(self, config):
        self.config = config
        self.calls = 0

    def generate(self, requests):
        self.calls += 1
        if self.calls == 2 and DISK_FULL:  # the cache's disk fills up: SQLite's own "database or disk is full"
            from pytest_mllm.harness.stash import RUN_KEY

            db = self.config.stash[RUN_KEY].evaluation.cache._db
            db.execute(f"PRAGMA max_page_count={db.execute('PRAGMA page_count').fetchone()[0]}")
        if DISK_FULL:  # answers of 4 kB: storing them needs new pages, which the limit refuses
            return [Response("yes" + " ." * 2000) for _ in requests]
        return [Response("yes") for _ in requests]

def pytest_mllm_make_model(spec, config):
    return Counting(config) if spec == "counting" else None
'''
COUNTING = ("--mllm=counting", "--mllm-cache-dir={tmp}/cache", "--mllm-batch-size=2")

# A user's model whose process gets SIGTERM (from the model itself, a real signal) as it starts its third answer
TERMINATED_MODEL = '''
import os, signal
from pytest_mllm.sample import Response

class Terminated:
    name = "terminated"
    needs_images = False
    calls = 0

    def generate(self, requests):
        self.calls += 1
        if self.calls == 3:
            os.kill(os.getpid(), signal.SIGTERM)
        return [Response("yes") for _ in requests]

def pytest_mllm_make_model(spec, config):
    return Terminated() if spec == "terminated" else None
'''

# The output folder is gone when the run ends (a file stands in its place): the final write fails with a
# real OSError, after the up-front checks passed
FOLDER_GONE_AT_THE_END = '''
import shutil
import pytest

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    folder = session.config.rootpath / "out"
    shutil.rmtree(folder, ignore_errors=True)
    folder.write_text("a file where the output folder was")
    return (yield)
'''


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]  # "{tmp}" is the case's folder
    status: int | None  # None: any status but an internal error
    culprit: str  # in the output (the message names it)
    build: Callable[[Path], None] = nothing
    env: dict[str, str] = field(default_factory=dict)
    ini: str = ""  # lines of [tool.pytest.ini_options]
    tool: str = ""  # "merge", "compare" or "curate": the args go to that command instead of pytest
    changes: tuple[str, ...] = ()  # files the case builds that the run may change (a cache it writes to)


GOOD_SPEC = "name: mine\nloader: jsonl\nparser: mme\ndata: {root: data, file: b.jsonl}\n"
POPE_DATA, MMBENCH_DATA = FIXTURES / "pope_splits", FIXTURES / "mmbench_circular"


def shifted_lmms_eval() -> str:
    """The fixture's lmms-eval samples file with every doc_id one too high (rows matched to the wrong samples)."""
    import json

    records = [json.loads(line) for line in (FIXTURES / "predictions" / "20260101_000000_samples_pope.jsonl")
               .read_text().splitlines() if line.strip()]
    return "".join(json.dumps({**r, "doc_id": r["doc_id"] + 1}) + "\n" for r in records)


def other_vlmevalkit_file() -> str:
    """The fixture's VLMEvalKit prediction file with another benchmark's question in every row (same indexes)."""
    lines = (FIXTURES / "predictions" / "Model_MMBench_DEV_EN.tsv").read_text().split("\n")
    return "\n".join([lines[0], *(re.sub(r'^("[^"]*"\t)"[^"]*"', r'\1"How many people are in the picture?"', line)
                                   for line in lines[1:])])
PIXELS_ABOVE_PILLOW = str(200_000_000)

CASES = [
    # -- spec files -----------------------------------------------------------------------------------
    Case("spec: not a mapping", ("--mllm-bench={tmp}/mine.yaml", YES), COLLECTION, "must be a YAML mapping",
         spec("- a\n- b\n")),
    Case("spec: invalid YAML", ("{tmp}/mine.yaml", YES), COLLECTION, "is not valid YAML",
         spec("name: mine\nloader: jsonl\nprompt: [\n")),
    Case("spec: unknown field", ("{tmp}/mine.yaml", YES), COLLECTION, "field 'colour': unknown field",
         spec(GOOD_SPEC + "colour: red\n")),
    Case("spec: unknown field, given by --mllm-bench", ("--mllm-bench={tmp}/mine.yaml", YES), COLLECTION,
         "field 'colour': unknown field", spec(GOOD_SPEC + "colour: red\n")),
    Case("spec: name missing", ("--mllm-bench={tmp}/mine.yaml", YES), COLLECTION, "field 'name': missing",
         spec("loader: jsonl\n")),
    Case("spec: unknown loader", ("{tmp}/mine.yaml", YES), COLLECTION, "field 'loader': 'csv' is not one of",
         spec("name: mine\nloader: csv\n")),
    Case("spec: unknown metric", ("{tmp}/mine.yaml", YES), COLLECTION, "field 'metrics': 'bleu' is not one of",
         spec(GOOD_SPEC + "metrics: [accuracy, bleu]\n")),
    Case("spec: unknown parser", ("{tmp}/mine.yaml", YES), COLLECTION, "field 'parser': 'fuzzy' is not one of",
         spec("name: mine\nloader: jsonl\nparser: fuzzy\n")),
    Case("spec: max_new_tokens 0", ("{tmp}/mine.yaml", YES), COLLECTION, "field 'max_new_tokens'",
         spec(GOOD_SPEC + "max_new_tokens: 0\n")),
    Case("spec: unknown prompt placeholder", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'prompt': unknown placeholder {choices}", spec(GOOD_SPEC + "prompt: '{question} {choices}'\n")),
    Case("spec: unknown placeholder in a task's prompt", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'tasks.color.prompt': unknown placeholder {image}",
         spec(GOOD_SPEC + "tasks: {color: {prompt: '{image} {question}'}}\n")),
    Case("spec: attribute of a placeholder", ("{tmp}/mine.yaml", YES), COLLECTION,
         "unknown placeholder {question.upper}", spec(GOOD_SPEC + "prompt: '{question.upper}'\n")),
    Case("spec: unbalanced brace in prompt", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'prompt': '{question' is not a valid template", spec(GOOD_SPEC + "prompt: '{question'\n")),
    Case("spec: group name is a task name", ("{tmp}/mine.yaml", YES), COLLECTION,
         "group name 'color' is also a task name", spec(GOOD_SPEC + "groups: {color: [color]}\n")),
    Case("spec: subset file missing", ("{tmp}/mine.yaml", YES), COLLECTION, "field 'subset'",
         spec(GOOD_SPEC + "subset: ids.txt\n")),
    Case("spec: subset file not UTF-8", ("{tmp}/mine.yaml", YES), COLLECTION, "field 'subset': cannot read",
         both(jsonl_bench(spec_extra="subset: ids.txt\n"), files(**{"ids.txt": b"mine::a\xff\n"}))),
    Case("spec: not UTF-8", ("--mllm-bench={tmp}/mine.yaml", YES), COLLECTION, "is not UTF-8 text",
         spec(b"name: mine\nloader: jsonl\ndescription: caf\xe9\n")),
    Case("spec: not UTF-8, as a test path", ("{tmp}/mine.yaml", YES), COLLECTION, "is not UTF-8 text",
         spec(b"name: mine\nloader: jsonl\ndescription: caf\xe9\n")),
    Case("spec: two specs claim one name", ("--mllm-bench=shapes,{tmp}/mine.yaml", YES), COLLECTION,
         "two benchmark specs are named 'shapes'", spec("name: shapes\nloader: shapes\n")),
    Case("bench: unknown bundled name", (YES, "--mllm-bench=no_such_bench"), USAGE,
         "unknown benchmark 'no_such_bench' in --mllm-bench"),
    Case("bench: spec path missing", (YES, "--mllm-bench={tmp}/nope.yaml"), USAGE, "unknown benchmark"),
    Case("bench: without a model", ("--mllm-bench=shapes",), USAGE, "--mllm-bench needs a model"),
    # -- data ---------------------------------------------------------------------------------------
    Case("data: mme without data", (YES, "--mllm-bench=mme"), COLLECTION, "benchmark 'mme' needs its data",
         env={"MLLM_DATA_MME": ""}),
    Case("data: MLLM_DATA_MME points nowhere", (YES, "--mllm-bench=mme"), USAGE, "$MLLM_DATA_MME",
         env={"MLLM_DATA_MME": "/nonexistent/mme"}),
    Case("data: MLLM_DATA_MME points at a file", (YES, "--mllm-bench=mme"), USAGE, "is a file, not a folder",
         files(**{"mme.zip": "x"}), env={"MLLM_DATA_MME": "{tmp}/mme.zip"}),
    Case("data: --mllm-data names a benchmark not in the run", (*SHAPES, "--mllm-data=pope={tmp}"), USAGE,
         "no benchmark 'pope' in this run"),
    Case("data: --mllm-data is a file", (YES, "--mllm-bench={tmp}/mine.yaml", "--mllm-data=mine={tmp}/data/b.jsonl"),
         USAGE, "is a file; give the folder", jsonl_bench()),
    Case("data: --mllm-data does not exist", (YES, "--mllm-bench={tmp}/mine.yaml", "--mllm-data={tmp}/nope"),
         USAGE, "does not exist", jsonl_bench()),
    Case("data: spec's data.root does not exist", ("{tmp}/mine.yaml", YES), COLLECTION,
         "data root for benchmark 'mine' does not exist", spec(GOOD_SPEC)),
    Case("data: samples file missing", ("{tmp}/mine.yaml", YES), COLLECTION, "samples file not found",
         both(jsonl_bench(), spec(GOOD_SPEC.replace("b.jsonl", "c.jsonl")))),
    Case("data: empty samples file", ("{tmp}/mine.yaml", YES), COLLECTION, "no samples in", jsonl_bench(rows="")),
    Case("data: blank-lines samples file", ("{tmp}/mine.yaml", YES), COLLECTION, "no samples in",
         jsonl_bench(rows="\n\n")),
    Case("data: JSONL not UTF-8", ("{tmp}/mine.yaml", YES), COLLECTION, "not UTF-8 text",
         jsonl_bench(rows='{"id": "a", "question": "caf\xe9?", "answer": "yes"}\n'.encode("latin-1"))),
    Case("data: YAML samples not a list", ("{tmp}/mine.yaml", YES), COLLECTION, "expected a list of samples",
         jsonl_bench(rows="id: a\n", data_file="b.yaml")),
    Case("data: YAML samples invalid", ("{tmp}/mine.yaml", YES), COLLECTION, "not valid YAML",
         jsonl_bench(rows="- [\n", data_file="b.yaml")),
    Case("data: TSV not UTF-8", ("{tmp}/mine.yaml", YES), COLLECTION, "not UTF-8 text",
         both(files(**{"data__b.tsv": b"index\tquestion\tanswer\n1\tcaf\xe9?\tyes\n"}),
              spec("name: mine\nloader: tsv\ndata: {root: data, file: b.tsv}\n"))),
    Case("data: duplicate sample ids", ("{tmp}/mine.yaml", YES), COLLECTION, "duplicate sample id 'mine::a'",
         jsonl_bench(rows='{"id": "a", "question": "Q?", "answer": "yes"}\n' * 2)),
    Case("data: a row not JSON errors alone", ("{tmp}/mine.yaml", YES), FAILED, "not valid JSON",
         jsonl_bench(rows='{"id": "a", "image": "ok.png", "question": "Red?", "answer": "yes"}\n{not json\n')),
    Case("data: a row with an unknown field", ("{tmp}/mine.yaml", YES), FAILED, "unknown field 'colour'",
         jsonl_bench(rows='{"id": "a", "question": "Q?", "answer": "yes", "colour": 1}\n')),
    Case("data: a row without an answer", ("{tmp}/mine.yaml", YES), FAILED, "missing field 'answer'",
         jsonl_bench(rows='{"id": "a", "question": "Q?"}\n')),
    Case("data: answer not among the choices", ("{tmp}/mine.yaml", YES), FAILED, "is not one of the choices",
         jsonl_bench(rows='{"id": "a", "question": "Q?", "answer": "E", "choices": ["x", "y"]}\n')),
    # -- images -------------------------------------------------------------------------------------
    Case("image: path escapes the data root", ("{tmp}/mine.yaml", YES), FAILED, "escapes the data root",
         jsonl_bench(rows='{"id": "a", "image": "../x.png", "question": "Q?", "answer": "yes"}\n')),
    Case("image: missing", ("{tmp}/mine.yaml", YES), FAILED, "image not found",
         jsonl_bench(rows='{"id": "a", "image": "gone.png", "question": "Q?", "answer": "yes"}\n')),
    Case("image: not an image", ("{tmp}/mine.yaml", YES), FAILED, "cannot decode",
         both(jsonl_bench(rows='{"id": "a", "image": "bad.png", "question": "Q?", "answer": "yes"}\n'),
              files(**{"data__bad.png": b"not a png"}))),
    Case("image: over --mllm-max-image-pixels", ("{tmp}/mine.yaml", YES, "--mllm-max-image-pixels=10"), FAILED,
         "over the limit of 10", jsonl_bench()),
    Case("image: decompression bomb", ("{tmp}/mine.yaml", YES), FAILED, "decompression bomb",
         both(jsonl_bench(rows='{"id": "a", "image": "bomb.png", "question": "Q?", "answer": "yes"}\n'),
              files(**{"data__bomb.png": (FIXTURES / "bad" / "bomb.png").read_bytes()}))),
    Case("image: --mllm-max-image-pixels=0", (*SHAPES, "--mllm-max-image-pixels=0"), USAGE,
         "--mllm-max-image-pixels must be"),
    Case("image: --mllm-max-image-pixels above Pillow's limit", (*SHAPES, *FEW,
         f"--mllm-max-image-pixels={PIXELS_ABOVE_PILLOW}"), OK, "passed"),
    # -- options ------------------------------------------------------------------------------------
    Case("option: unknown model", ("--mllm=gpt5", "--mllm-bench=shapes"), USAGE, "unknown model 'gpt5' in --mllm"),
    Case("option: --mllm-batch-size=0", (*SHAPES, "--mllm-batch-size=0"), USAGE, "--mllm-batch-size must be"),
    Case("option: --mllm-batch-size not a number", (*SHAPES, "--mllm-batch-size=many"), USAGE,
         "--mllm-batch-size"),
    Case("option: --mllm-show-incorrect=-1", (*SHAPES, "--mllm-show-incorrect=-1"), USAGE,
         "--mllm-show-incorrect must be"),
    Case("option: --mllm-vrp-examples=0", (*SHAPES, "--mllm-vrp-examples=0"), USAGE, "--mllm-vrp-examples must be"),
    Case("option: --mllm-cache=maybe", (*SHAPES, "--mllm-cache=maybe"), USAGE, "--mllm-cache"),
    Case("option: --mllm-vrp=everything", (*SHAPES, "--mllm-vrp=everything"), USAGE, "--mllm-vrp"),
    Case("option: --mllm-gpus-per-worker=0", (*SHAPES, "--mllm-gpus-per-worker=0"), USAGE,
         "--mllm-gpus-per-worker must be"),
    Case("option: --mllm-gpus=abc", (*SHAPES, "--mllm-gpus=abc"), USAGE, "--mllm-gpus"),
    Case("option: --mllm-tp-alpha=2", (*SHAPES, "--mllm-tp-alpha=2"), USAGE, "--mllm-tp-alpha"),
    Case("option: --mllm-tp-rounds=0", (*SHAPES, "--mllm-tp-rounds=0"), USAGE, "--mllm-tp-rounds"),
    Case("option: --mllm-optimize without an optimizer", (*SHAPES, "--mllm-optimize={tmp}/p.yaml"), USAGE,
         "--mllm-optimize needs an optimizer LLM"),
    Case("option: --mllm-optimize with --mllm-prompts", (*SHAPES, "--mllm-optimize={tmp}/p.yaml",
         "--mllm-prompts={tmp}/p.yaml"), USAGE, "--mllm-optimize and --mllm-prompts do not go together"),
    Case("option: --mllm-prompts missing", (*SHAPES, "--mllm-prompts={tmp}/nope.yaml"), USAGE, "nope.yaml"),
    Case("option: --mllm-judge-max-tokens=0", (*SHAPES, "--mllm-judge-max-tokens=0"), USAGE,
         "--mllm-judge-max-tokens must be"),
    # -- endpoints ----------------------------------------------------------------------------------
    Case("endpoint: --mllm-timeout=0", (*SHAPES, "--mllm-timeout=0"), USAGE, "--mllm-timeout must be"),
    Case("endpoint: --mllm-concurrency=0", (*SHAPES, "--mllm-concurrency=0"), USAGE, "--mllm-concurrency must be"),
    Case("endpoint: --mllm-max-retries=-1", (*SHAPES, "--mllm-max-retries=-1"), USAGE, "--mllm-max-retries must be"),
    Case("endpoint: --mllm-base-url not a URL", ("--mllm=openai:m", "--mllm-bench=shapes",
         "--mllm-base-url=localhost:8000"), USAGE, "--mllm-base-url"),
    Case("endpoint: --mllm-judge-base-url not a URL", (*SHAPES, "--mllm-judge=openai:j",
         "--mllm-judge-base-url=ftp://host/v1"), USAGE, "--mllm-judge-base-url"),
    # -- cache --------------------------------------------------------------------------------------
    Case("cache: --mllm-cache-dir is a file", ("--mllm=tiny-llava", "--mllm-bench=shapes",
         "--mllm-cache-dir={tmp}/cache"), USAGE, "--mllm-cache-dir: the cache folder", files(cache="x")),
    Case("cache: --mllm-cache-dir under a file", ("--mllm=tiny-llava", "--mllm-bench=shapes",
         "--mllm-cache-dir={tmp}/cache/sub"), USAGE, "cannot be created", files(cache="x")),
    Case("cache: ini mllm_cache_dir is a file", ("--mllm=tiny-llava", "--mllm-bench=shapes"), USAGE,
         "mllm_cache_dir (ini)", files(cache="x"), ini='mllm_cache_dir = "cache"'),
    # -- outputs ------------------------------------------------------------------------------------
    Case("output: --mllm-json is a folder", (*SHAPES, "--mllm-json={tmp}/out"), USAGE, "--mllm-json=",
         files(out="<dir>")),
    Case("output: --mllm-json under a file", (*SHAPES, "--mllm-json={tmp}/f/out.json"), USAGE,
         "--mllm-json=", files(f="x")),
    Case("output: --mllm-html is a folder", (*SHAPES, "--mllm-html={tmp}/out"), USAGE, "--mllm-html=",
         files(out="<dir>")),
    Case("output: --mllm-html under a file", (*SHAPES, "--mllm-html={tmp}/f/r.html"), USAGE, "--mllm-html=",
         files(f="x")),
    Case("output: --mllm-mme-results is a file", (*SHAPES, "--mllm-mme-results={tmp}/f"), USAGE,
         "--mllm-mme-results=", files(f="x")),
    Case("output: --mllm-vrp-radar under a file", (*SHAPES, "--mllm-vrp-radar={tmp}/f/r.png"), USAGE,
         "--mllm-vrp-radar=", files(f="x")),
    Case("output: --mllm-json in new folders is written", (*SHAPES, *FEW, "--mllm-json={tmp}/a/b/out.json"), OK,
         "results written to"),
    # -- gates --------------------------------------------------------------------------------------
    Case("gate: invalid expression", (*SHAPES, "--mllm-gate=shapes.accuracy => 0.5"), USAGE, "invalid gate"),
    Case("gate: misspelled benchmark", (*SHAPES, "--mllm-gate=shapse.accuracy>=0.5"), USAGE,
         "names benchmark 'shapse', which is not in this run"),
    Case("gate: misspelled benchmark in ini", SHAPES, USAGE, "names benchmark 'shapse'",
         ini='mllm_gates = ["shapse.accuracy>=0.5"]'),
    Case("gate: max-drop on a benchmark not in the run", (*SHAPES, "--mllm-baseline={tmp}/b.json",
         "--mllm-max-drop=pope.f1=0.1"), USAGE, "names benchmark 'pope'",
         files(**{"b.json": '{"benchmarks": {}}'})),
    Case("gate: other benchmark, skipped on purpose", (*SHAPES, *FEW, "--mllm-gate=pope.f1>=0.8",
         "--mllm-gate-skip-missing"), OK, "not run"),
    Case("gate: its task removed by -k fails", (*SHAPES, *FEW, "-k", "existence", "--mllm-gate=shapes.color>=0.1"),
         FAILED, "gate failed: shapes.color>=0.1: not evaluated: no sample of 'color' ran"),
    Case("gate: its task removed by -k, skip-missing in ini", (*SHAPES, *FEW, "-k", "existence",
         "--mllm-gate=shapes.color>=0.1"), OK, "not run", ini="mllm_gate_skip_missing = true"),
    Case("gate: below its threshold", (*SHAPES, *FEW, "--mllm-gate=shapes.accuracy>=0.99"), FAILED,
         "gate failed: shapes.accuracy"),
    Case("gate: unknown metric", (*SHAPES, *FEW, "--mllm-gate=shapes.bleu>=0.5"), USAGE, "no metric 'bleu'"),
    Case("gate: --mllm-max-drop without a baseline", (*SHAPES, "--mllm-max-drop=0.1"), USAGE,
         "--mllm-max-drop needs a baseline"),
    Case("gate: --mllm-max-drop invalid", (*SHAPES, "--mllm-baseline={tmp}/b.json", "--mllm-max-drop=a lot"), USAGE,
         "invalid --mllm-max-drop"),
    Case("gate: baseline missing", (*SHAPES, "--mllm-baseline={tmp}/nope.json"), USAGE, "--mllm-baseline:"),
    Case("gate: baseline not JSON", (*SHAPES, "--mllm-baseline={tmp}/b.json"), USAGE, "--mllm-baseline:",
         files(**{"b.json": "<html>"})),
    Case("gate: baseline not a results file", (*SHAPES, "--mllm-baseline={tmp}/b.json"), USAGE,
         "expected a --mllm-json file", files(**{"b.json": "[1, 2]"})),
    Case("gate: baseline not UTF-8", (*SHAPES, "--mllm-baseline={tmp}/b.json"), USAGE, "--mllm-baseline:",
         files(**{"b.json": b'{"benchmarks": "caf\xe9"}'})),
    # -- replay files -------------------------------------------------------------------------------
    Case("replay: file missing", ("--mllm=replay:{tmp}/nope.jsonl", "--mllm-bench=shapes", *FEW), USAGE,
         "nope.jsonl"),
    Case("replay: not UTF-8", ("--mllm=replay:{tmp}/p.jsonl", "--mllm-bench=shapes", *FEW), USAGE, "p.jsonl",
         files(**{"p.jsonl": b'{"id": "x", "response": "caf\xe9"}\n'})),
    Case("replay: a line not JSON", ("--mllm=replay:{tmp}/p.jsonl", "--mllm-bench=shapes", *FEW), USAGE, "p.jsonl",
         files(**{"p.jsonl": "{oops\n"})),
    # -- gate and limit metric paths, other tools' names, the Markdown summary: checked before the run ----
    Case("gate path: misspelled task", (*SHAPES, "--mllm-gate=shapes.colr>=0.1"), USAGE,
         "gate 'shapes.colr>=0.1': benchmark 'shapes' has no metric 'colr'; did you mean 'color'"),
    Case("gate path: misspelled metric of a task", (*SHAPES, "--mllm-gate=shapes.color.acc>=0.9"), USAGE,
         "no metric 'color.acc'; did you mean 'color.accuracy'"),
    Case("gate path: misspelled metric of a category", (*SHAPES, "--mllm-gate=shapes.category.shape.acc>=0.5"),
         USAGE, "did you mean 'category.shape.accuracy'"),
    Case("gate path: category metric of a benchmark without categories",
         (YES, "--mllm-bench={tmp}/mine.yaml", "--mllm-gate=mine.category.x.accuracy>=0.5"), USAGE,
         "benchmark 'mine' has no metric 'category.x.accuracy'", jsonl_bench()),
    Case("gate path: misspelled in ini", SHAPES, USAGE, "did you mean 'accuracy'",
         ini='mllm_gates = ["shapes.acuracy>=0.5"]'),
    Case("gate path: regression limit misspelled", (*SHAPES, "--mllm-baseline={tmp}/b.json",
         "--mllm-max-drop=shapes.perceptoin=0.1"), USAGE, "did you mean 'perception'",
         files(**{"b.json": '{"benchmarks": {}}'})),
    Case("gate path: a task the data names", (YES, "--mllm-bench={tmp}/mine.yaml", "--mllm-gate=mine.colour>=0.5"),
         OK, "mine.colour>=0.5", jsonl_bench('{"id": "a", "task": "colour", "image": "ok.png", "question": "Red?", '
                                             '"answer": "yes"}\n')),
    Case("gate path: a task the data does not name", (YES, "--mllm-bench={tmp}/mine.yaml",
         "--mllm-gate=mine.color>=0.5"), USAGE, "did you mean 'colour'",
         jsonl_bench('{"id": "a", "task": "colour", "image": "ok.png", "question": "Red?", "answer": "yes"}\n')),
    Case("bench: another tool's name, misspelled", (YES, "--mllm-bench=MMBench_DEV"), USAGE,
         "did you mean 'MMBench_DEV_EN'"),
    Case("output: --mllm-markdown is a folder", (*SHAPES, "--mllm-markdown={tmp}/out"), USAGE, "--mllm-markdown=",
         files(out="<dir>")),
    Case("output: $GITHUB_STEP_SUMMARY is appended to", (*SHAPES, *FEW), OK, "job summary written to",
         env={"GITHUB_STEP_SUMMARY": "{tmp}/summary.md"}),
    # -- served models and replay checks (issue 28, items 6 to 8) -----------------------------------
    Case("replay: lmms-eval doc_ids shifted by one", ("--mllm=replay:{tmp}/s.jsonl", "--mllm-bench=pope",
                                                      f"--mllm-data={POPE_DATA}"), COLLECTION,
         "s.jsonl: its rows do not match the pope samples they answer: the recorded questions or "
         "targets agree for 0 of 27 (0.0 %, under --mllm-replay-min-match=0.9); first mismatch: line 1 (doc_id 1) for "
         "sample pope::adversarial::2: target 'Yes' is not the sample's answer 'No'.",
         lambda tmp: (tmp / "s.jsonl").write_text(shifted_lmms_eval())),
    Case("replay: a VLMEvalKit file of another benchmark", ("--mllm=replay:{tmp}/Model_Other.tsv", "--mllm-bench=mmbench",
                                                            f"--mllm-data={MMBENCH_DATA}"), COLLECTION,
         "agree for 0 of 67 (0.0 %, under --mllm-replay-min-match=0.9); first mismatch: row 2 (index 101) for sample "
         "mmbench::dev::101: question 'How many people are in the picture?' is not the sample's question "
         "'What colour is the square?'", lambda tmp: (tmp / "Model_Other.tsv").write_text(other_vlmevalkit_file())),
    Case("replay: the threshold stated stricter", ("--mllm=replay:{tmp}/s.jsonl", "--mllm-bench=pope",
                                                   f"--mllm-data={POPE_DATA}", "--mllm-replay-min-match=1"), COLLECTION,
         "(0.0 %, under --mllm-replay-min-match=1)", lambda tmp: (tmp / "s.jsonl").write_text(shifted_lmms_eval())),
    Case("replay: min match above 1", ("--mllm-replay-min-match=1.5", *SHAPES, *FEW), USAGE,
         "--mllm-replay-min-match must be a share from 0 to 1 (e.g. 0.9), got 1.5"),
    Case("replay: min match negative", ("--mllm-replay-min-match=-0.1", *SHAPES, *FEW), USAGE,
         "--mllm-replay-min-match must be a share from 0 to 1 (e.g. 0.9), got -0.1"),
    Case("replay: min match nan", ("--mllm-replay-min-match=nan", *SHAPES, *FEW), USAGE,
         "--mllm-replay-min-match must be a share from 0 to 1 (e.g. 0.9), got nan"),
    Case("replay: min match not a number", ("--mllm-replay-min-match=most", *SHAPES, *FEW), USAGE,
         "--mllm-replay-min-match: invalid float value: 'most'"),
    Case("served: a revision for a local model", ("--mllm-model-revision=v2", *SHAPES, *FEW), USAGE,
         "--mllm-model-revision is for a served model (--mllm=openai:NAME), not 'baseline:yes': a local model's "
         "identity is its files; leave the option out"),
    Case("served: an empty revision", ("--mllm=openai:m", "--mllm-base-url=http://127.0.0.1:9/v1",
                                       "--mllm-model-revision= ", "--mllm-bench=shapes", *FEW), USAGE,
         "--mllm-model-revision must be 1 to 200 printable characters (a checkpoint name, a commit, a date), got 1 "
         "characters"),
    Case("served: a revision with a control character", ("--mllm=openai:m", "--mllm-base-url=http://127.0.0.1:9/v1",
                                                         "--mllm-model-revision=v2\x1b[2J", "--mllm-bench=shapes", *FEW),
         USAGE, "--mllm-model-revision must be 1 to 200 printable characters"),
    # -- issue 28: outputs never touch inputs ----------------------------------------------------------
    Case("output: --mllm-json is the benchmark's data file", ("{tmp}/mine.yaml", YES, "--mllm-json={tmp}/data/b.jsonl"),
         USAGE, "--mllm-json={tmp}/data/b.jsonl: that is the data file of benchmark 'mine'", jsonl_bench()),
    Case("output: --mllm-html is the benchmark's data file", ("{tmp}/mine.yaml", YES, "--mllm-html={tmp}/data/b.jsonl"),
         USAGE, "that is the data file of benchmark 'mine'", jsonl_bench()),
    Case("output: --mllm-json is the spec", ("--mllm-bench={tmp}/mine.yaml", YES, "--mllm-json={tmp}/mine.yaml"),
         USAGE, "that is the benchmark spec mine.yaml", jsonl_bench()),
    Case("output: --mllm-json is an image of the data", ("{tmp}/mine.yaml", YES, "--mllm-json={tmp}/data/ok.png"),
         USAGE, "that file is inside the data folder of benchmark 'mine'", jsonl_bench()),
    Case("output: --mllm-json is a symbolic link to the data file", ("{tmp}/mine.yaml", YES,
         "--mllm-json={tmp}/out.json"), USAGE, "that is the data file of benchmark 'mine'",
         both(jsonl_bench(), linked("data/b.jsonl", "out.json"))),
    Case("output: --mllm-json is a hard link to the data file", ("{tmp}/mine.yaml", YES,
         "--mllm-json={tmp}/out.json"), USAGE, "that is the data file of benchmark 'mine'",
         both(jsonl_bench(), linked("data/b.jsonl", "out.json", hard=True))),
    Case("output: --mllm-json and --mllm-html are one file", (*SHAPES, "--mllm-json={tmp}/r", "--mllm-html={tmp}/r"),
         USAGE, "--mllm-json and --mllm-html both name"),
    Case("output: --mllm-json and --mllm-vrp-radar are one file", (*SHAPES, "--mllm-json={tmp}/r.png",
         "--mllm-vrp-radar={tmp}/r.png"), USAGE, "--mllm-json and --mllm-vrp-radar both name"),
    Case("output: --mllm-json is the baseline", (*SHAPES, "--mllm-baseline={tmp}/b.json", "--mllm-json={tmp}/b.json"),
         USAGE, "that is the --mllm-baseline file", files(**{"b.json": '{"benchmarks": {}}'})),
    Case("output: --mllm-json is the replayed recording", ("--mllm=replay:{tmp}/p.jsonl", "--mllm-bench=shapes",
         "--mllm-json={tmp}/p.jsonl"), USAGE, "that is the recording --mllm=replay:",
         files(**{"p.jsonl": '{"id": "x", "response": "yes"}\n'})),
    Case("output: --mllm-mme-results is the replayed MME results folder", ("--mllm=replay:{tmp}/res",
         "--mllm-bench=shapes", "--mllm-mme-results={tmp}/res"), USAGE, "that is the recording --mllm=replay:",
         files(**{"res__existence.txt": "a.png\tIs it?\tYes\tyes\n"})),
    Case("output: --mllm-json is the --mllm-prompts file", (*SHAPES, "--mllm-prompts={tmp}/p.yaml",
         "--mllm-json={tmp}/p.yaml"), USAGE, "that is the --mllm-prompts file", files(**{"p.yaml": "x: 1\n"})),
    Case("output: --mllm-json is the response cache", ("--mllm=tiny-llava", "--mllm-bench=shapes",
         "--mllm-cache-dir={tmp}/c", "--mllm-json={tmp}/c/responses.sqlite3"), USAGE, "that is the response cache"),
    Case("output: --mllm-optimize is the spec", ("--mllm-bench={tmp}/mine.yaml", YES, "--mllm-optimize={tmp}/mine.yaml",
         "--mllm-optimizer=openai:o", "--mllm-optimizer-base-url=http://127.0.0.1:9/v1"), USAGE,
         "--mllm-optimize={tmp}/mine.yaml: that is the benchmark spec", jsonl_bench()),
    Case("output: --mllm-json under /proc", (*SHAPES, "--mllm-json=/proc/results.json"), USAGE,
         "--mllm-json=/proc/results.json: the folder /proc is not writable"),
    Case("output: --mllm-html under /proc", (*SHAPES, "--mllm-html=/proc/r.html"), USAGE,
         "--mllm-html=/proc/r.html: the folder /proc is not writable"),
    Case("output: --mllm-mme-results under /proc", (*SHAPES, "--mllm-mme-results=/proc/mme"), USAGE,
         "--mllm-mme-results=/proc/mme: cannot create the folder"),
    Case("output: --mllm-json in the data folder, a new file, is written", ("{tmp}/mine.yaml", YES,
         "--mllm-json={tmp}/data/results.json"), OK, "results written to", jsonl_bench()),
    Case("output: --mllm-json over an earlier results file in the data folder", ("{tmp}/mine.yaml", YES,
         "--mllm-json={tmp}/data/results.json"), OK, "results written to",
         both(jsonl_bench(), files(**{"data__results.json": '{\n "pytest_mllm": "0.1.0",\n "records": []\n}\n'})),
         changes=("data/results.json",)),
    Case("output: the final write fails, one error", (*SHAPES, *FEW, "--mllm-json={tmp}/out/r.json"), USAGE,
         "pytest-mllm: error: cannot write the results {tmp}/out/r.json (File exists)",
         files(**{"conftest.py": FOLDER_GONE_AT_THE_END})),
    Case("output: the HTML report's final write fails, one error", (*SHAPES, *FEW, "--mllm-html={tmp}/out/r.html"),
         USAGE, "pytest-mllm: error: cannot write the HTML report", files(**{"conftest.py": FOLDER_GONE_AT_THE_END})),
    # -- issue 28: merge and compare outputs -------------------------------------------------------------
    Case("merge: the output forgotten (a shard would be replaced)", ("{tmp}/s1.json", "{tmp}/s1.json", "{tmp}/s2.json"),
         2, "pytest-mllm-merge: error: OUT={tmp}/s1.json: that is shard file 1 (s1.json)",
         files(**{"s1.json": "{}", "s2.json": "{}"}), tool="merge"),
    Case("merge: --html is the output", ("{tmp}/m.json", "{tmp}/s1.json", "--html={tmp}/m.json"), 2,
         "OUT and --html both name", files(**{"s1.json": "{}"}), tool="merge"),
    Case("merge: --html is the baseline", ("{tmp}/m.json", "{tmp}/s1.json", "--baseline={tmp}/b.json",
         "--html={tmp}/b.json"), 2, "--html={tmp}/b.json: that is the --baseline file",
         files(**{"s1.json": "{}", "b.json": "{}"}), tool="merge"),
    Case("merge: output under /proc", ("/proc/merged.json", "{tmp}/s1.json"), 2,
         "OUT=/proc/merged.json: the folder /proc is not writable", files(**{"s1.json": "{}"}), tool="merge"),
    Case("merge: output is a folder", ("{tmp}/out", "{tmp}/s1.json"), 2, "OUT={tmp}/out: is a folder",
         files(**{"s1.json": "{}", "out": "<dir>"}), tool="merge"),
    Case("compare: --html is a results file", ("{tmp}/a.json", "{tmp}/b.json", "--html={tmp}/b.json"), 2,
         "--html={tmp}/b.json: that is results file 2 (b.json)", files(**{"a.json": "{}", "b.json": "{}"}),
         tool="compare"),
    Case("compare: --json and --html are one file", ("{tmp}/a.json", "{tmp}/b.json", "--json={tmp}/c",
         "--html={tmp}/c"), 2, "--json and --html both name", files(**{"a.json": "{}", "b.json": "{}"}),
         tool="compare"),
    Case("compare: --json under /proc", ("{tmp}/a.json", "{tmp}/b.json", "--json=/proc/c.json"), 2,
         "--json=/proc/c.json: the folder /proc is not writable", files(**{"a.json": "{}", "b.json": "{}"}),
         tool="compare"),
    # -- issue 28: file names from data ----------------------------------------------------------------
    Case("task name: a relative path out of the folder", ("{tmp}/mine.yaml", YES), COLLECTION,
         "task name '../../x' (sample '../../x::a') holds '/', which would leave its folder",
         jsonl_bench(rows='{"id": "a", "task": "../../x", "question": "Q?", "answer": "yes"}\n')),
    Case("task name: an absolute path", ("{tmp}/mine.yaml", YES), COLLECTION, "task name '/tmp/x'",
         jsonl_bench(rows='{"id": "a", "task": "/tmp/x", "question": "Q?", "answer": "yes"}\n')),
    Case("task name: '..'", ("{tmp}/mine.yaml", YES), COLLECTION, "task name '..' (sample '..::a') is empty, '.' or '..'",
         jsonl_bench(rows='{"id": "a", "task": "..", "question": "Q?", "answer": "yes"}\n')),
    Case("task name: a terminal escape, shown escaped", ("{tmp}/mine.yaml", YES), OK, "   \\x1b[2J ",
         jsonl_bench(rows='{"id": "a", "task": "\\u001b[2J", "question": "Q?", "answer": "yes"}\n')),
    Case("task name: from a TSV category column", ("{tmp}/mine.yaml", YES), COLLECTION, "task name 'a/b'",
         both(files(**{"data__b.tsv": "index\tquestion\tanswer\tcategory\timage_path\n1\tQ?\tyes\ta/b\tok.png\n",
                       "data__ok.png": OK_PNG}),
              spec("name: mine\nloader: tsv\ndata: {root: data, file: b.tsv}\nloader_options: {task_column: category}\n"))),
    # -- issue 28: images only from an allow-list of formats -------------------------------------------
    Case("image: EPS named .png, no Ghostscript", ("{tmp}/mine.yaml", YES), FAILED,
         "image error: {tmp}/data/x.png is a PostScript (EPS/PS) file, not an image format that is decoded here",
         one_image("x.png", EPS)),
    Case("image: PostScript", ("{tmp}/mine.yaml", YES), FAILED, "x.ps is a PostScript file", one_image("x.ps", POSTSCRIPT)),
    Case("image: PDF", ("{tmp}/mine.yaml", YES), FAILED, "x.pdf is a PDF file", one_image("x.pdf", PDF)),
    Case("image: SVG", ("{tmp}/mine.yaml", YES), FAILED, "x.svg is an SVG file", one_image("x.svg", SVG)),
    Case("image: ICO, a format Pillow reads but not allowed", ("{tmp}/mine.yaml", YES), FAILED, "x.png is an ICO file",
         one_image("x.png", image_bytes("ICO"))),
    Case("image: JPEG, GIF, BMP, WebP and TIFF decode", ("{tmp}/mine.yaml", YES), OK, "5 passed",
         both(jsonl_bench(rows="".join(json.dumps({"id": k, "image": f"x.{k}", "question": "Red?", "answer": "yes"}) + "\n"
                                       for k in ("jpeg", "gif", "bmp", "webp", "tiff"))),
              files(**{f"data__x.{k}": image_bytes(k.upper()) for k in ("jpeg", "gif", "bmp", "webp", "tiff")}))),
    # -- issue 28: bounded messages and hostile YAML -----------------------------------------------------
    Case("spec: an alias bomb", ("{tmp}/mine.yaml", YES), COLLECTION, "more than the 1,000,000 allowed (an alias bomb?)",
         spec(f"name: mine\nloader: jsonl\ndescription: {alias_bomb()}\n")),
    Case("spec: a small alias bomb, shown bounded", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'description': list [[[...], [...], [...], [...], ...]", spec(f"name: mine\nloader: jsonl\n"
                                                                             f"description: {alias_bomb(4)}\n")),
    Case("spec: 20,000 levels deep", ("{tmp}/mine.yaml", YES), COLLECTION, "is nested more than 200 levels deep",
         spec(f"name: mine\nloader: jsonl\ndescription: {DEEP_YAML}\n")),
    Case("spec: a value inside itself", ("{tmp}/mine.yaml", YES), COLLECTION, "an alias refers to a value that contains it",
         spec("name: mine\nloader: jsonl\ndescription: &a [1, *a]\n")),
    Case("spec: a number of 5,000 digits", ("{tmp}/mine.yaml", YES), COLLECTION,
         "is not valid YAML: a value cannot be read (Exceeds the limit (4300 digits)",
         spec(GOOD_SPEC + "max_new_tokens: " + "9" * 5000 + "\n")),
    Case("judge prompts: an alias bomb", (*SHAPES, "--mllm-judge=openai:j", "--mllm-judge-base-url=http://127.0.0.1:9/v1",
         "--mllm-judge-prompts={tmp}/j.yaml"), USAGE, "--mllm-judge-prompts: {tmp}/j.yaml: not valid YAML: its aliases expand",
         files(**{"j.yaml": f"prompts: {alias_bomb()}\n"})),
    Case("judge prompts: 20,000 levels deep", (*SHAPES, "--mllm-judge=openai:j",
         "--mllm-judge-base-url=http://127.0.0.1:9/v1", "--mllm-judge-prompts={tmp}/j.yaml"), USAGE,
         "not valid YAML: it is nested more than 200 levels deep", files(**{"j.yaml": f"prompts: {DEEP_YAML}\n"})),
    Case("prompts file: an alias bomb", (*SHAPES, "--mllm-prompts={tmp}/p.yaml"), USAGE,
         "is not valid YAML: its aliases expand", files(**{"p.yaml": f"format: {alias_bomb()}\n"})),
    Case("data: YAML samples, an alias bomb", ("{tmp}/mine.yaml", YES), COLLECTION, "not valid YAML: its aliases expand",
         jsonl_bench(rows=f"- {alias_bomb()}\n", data_file="b.yaml")),
    Case("data: a JSONL row 20,000 levels deep errors alone", ("{tmp}/mine.yaml", YES), FAILED,
         "not valid JSON: nested too deeply", jsonl_bench(rows='{"id": "a", "image": "ok.png", "question": "Red?", '
                                                         '"answer": "yes"}\n' + "[" * 20_000 + "]" * 20_000 + "\n")),
    Case("data: a sample id with a terminal escape, shown escaped", ("{tmp}/mine.yaml", "--mllm=baseline:no"), OK,
         "mine::mine::a\\x1b[2J\\x07: Q 'Red?'", jsonl_bench(rows='{"id": "a\\u001b[2J\\u0007", "image": "ok.png", '
                                                             '"question": "Red?", "answer": "yes"}\n')),
    Case("data: a duplicate id with a terminal escape, shown escaped", ("{tmp}/mine.yaml", YES), COLLECTION,
         "duplicate sample id 'mine::\\x1b[31m'",
         jsonl_bench(rows='{"id": "\\u001b[31m", "question": "Q?", "answer": "yes"}\n' * 2)),
    Case("gate: a baseline 20,000 levels deep", (*SHAPES, "--mllm-baseline={tmp}/b.json"), USAGE,
         "--mllm-baseline: cannot read baseline results {tmp}/b.json: maximum recursion depth exceeded",
         files(**{"b.json": DEEP_JSON})),
    Case("replay: a recording 20,000 levels deep", ("--mllm=replay:{tmp}/p.json", "--mllm-bench=shapes", *FEW), USAGE,
         "p.json:1: nested too deeply to read", files(**{"p.json": DEEP_JSON})),
    Case("merge: a shard 20,000 levels deep", ("{tmp}/m.json", "{tmp}/s1.json"), 2,
         "s1.json: not a pytest-mllm results file (not JSON: maximum recursion depth exceeded",
         files(**{"s1.json": DEEP_JSON}), tool="merge"),
    Case("compare: a results file 20,000 levels deep", ("{tmp}/a.json", "{tmp}/b.json"), 2,
         "a.json: not a pytest-mllm results file (not JSON: maximum recursion depth exceeded",
         files(**{"a.json": DEEP_JSON, "b.json": "{}"}), tool="compare"),
    Case("replay: an xlsx entity bomb", ("--mllm=replay:{tmp}/p.xlsx", "--mllm-bench=shapes", *FEW), USAGE,
         "the first sheet cannot be read (ParseError", xlsx_entity_bomb),
    Case("replay: a folder without MME results files", ("--mllm=replay:{tmp}/res", "--mllm-bench=shapes", *FEW), USAGE,
         "no MME results files (<subtask>.txt)", files(res="<dir>")),
    Case("replay: an MME results line of 3 columns", ("--mllm=replay:{tmp}/res", "--mllm-bench=shapes", *FEW), USAGE,
         "expected 4 tab-separated columns", files(**{"res__existence.txt": "a.png\tIs it?\tYes\n"})),
    # -- issue 28: strict values ----------------------------------------------------------------------
    Case("loader_options: TSV 'spilt'", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'loader_options.spilt': unknown option of the tsv loader; did you mean 'split'?",
         both(files(**{"data__b.tsv": "index\tquestion\tanswer\tsplit\timage_path\n1\tQ?\tyes\tdev\tok.png\n",
                       "data__ok.png": OK_PNG}),
              spec("name: mine\nloader: tsv\ndata: {root: data, file: b.tsv}\nloader_options: {spilt: dev}\n"))),
    Case("loader_options: JSONL takes none", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'loader_options.split': unknown option of the jsonl loader (it takes none)",
         jsonl_bench(spec_extra="loader_options: {split: dev}\n")),
    Case("loader_options: parquet 'colums'", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'loader_options.colums': unknown option of the parquet loader; did you mean 'columns'?",
         both(parquet_bench("A", ["x", "y"]), spec("name: mine\nloader: parquet\ndata: {root: data, file: test.parquet}\n"
                                                  "loader_options: {colums: {question: q}}\n"))),
    Case("loader_options: shapes 'images_per_tsk'", ("--mllm-bench={tmp}/mine.yaml", YES), COLLECTION,
         "did you mean 'images_per_task'?", spec("name: mine\nloader: shapes\nloader_options: {images_per_tsk: 2}\n")),
    Case("loader_options: MME takes none", ("{tmp}/mine.yaml", YES), COLLECTION, "unknown option of the mme loader (it takes none)",
         both(files(data="<dir>"), spec("name: mine\nloader: mme\ndata: {root: data}\nloader_options: {task: x}\n"))),
    Case("headline: not a value of the metrics", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'headline': 'nosuch' is not a value these metrics report", jsonl_bench(spec_extra="headline: nosuch\n")),
    Case("headline: misspelled", ("{tmp}/mine.yaml", YES), COLLECTION, "did you mean 'accuracy'?",
         jsonl_bench(spec_extra="headline: acuracy\n")),
    Case("headline: a metric not declared", ("{tmp}/mine.yaml", YES), COLLECTION, "'f1' is not a value these metrics",
         jsonl_bench(spec_extra="headline: f1\n")),
    Case("headline: a metric declared", ("{tmp}/mine.yaml", YES), OK, "passed",
         jsonl_bench(spec_extra="metrics: [accuracy, pope]\nheadline: f1\n")),
    Case("parquet: answer '2' of ['5', '2', '7'] is its index by default", ("{tmp}/mine.yaml", YES), OK,
         "expected 'C', got 'Yes'", parquet_bench("2", ["5", "2", "7"])),
    Case("parquet: answer '2' of ['5', '2', '7'] with option text read is ambiguous", ("{tmp}/mine.yaml", YES), FAILED,
         "answer '2' is ambiguous (option C by its index, option B by its text)",
         parquet_bench("2", ["5", "2", "7"], spec_extra="deviations: [answer_option_text]\n")),
    Case("parquet: answer_is: index reads it", ("{tmp}/mine.yaml", YES), OK, "expected 'C', got 'Yes'",
         parquet_bench("2", ["5", "2", "7"], ", answer_is: index")),
    Case("parquet: answer_is: text reads it", ("{tmp}/mine.yaml", YES), OK, "expected 'B', got 'Yes'",
         parquet_bench("2", ["5", "2", "7"], ", answer_is: text")),
    Case("parquet: answer_is unknown", ("{tmp}/mine.yaml", YES), COLLECTION,
         "field 'loader_options.answer_is': 'position' is not one of letter, index, text",
         parquet_bench("2", ["5", "2", "7"], ", answer_is: position")),
    Case("option: --mllm-max-new-tokens=1e20", (*SHAPES, "--mllm-max-new-tokens=1e20"), USAGE,
         "argument --mllm-max-new-tokens: invalid int value: '1e20'"),
    Case("option: --mllm-max-new-tokens=10**20", (*SHAPES, f"--mllm-max-new-tokens={10 ** 20}"), USAGE,
         "--mllm-max-new-tokens must be at most 1048576 tokens"),
    Case("option: ini mllm_max_new_tokens = 1e20", SHAPES, USAGE, "mllm_max_new_tokens (ini) must be a whole number",
         ini='mllm_max_new_tokens = "1e20"'),
    Case("option: --mllm-timeout=inf", (*SHAPES, "--mllm-timeout=inf"), USAGE,
         "--mllm-timeout must be a number of seconds above 0, got inf"),
    Case("option: --mllm-timeout=nan", (*SHAPES, "--mllm-timeout=nan"), USAGE, "--mllm-timeout must be a number of"),
    Case("option: --mllm-timeout=1e9", (*SHAPES, "--mllm-timeout=1e9"), USAGE, "--mllm-timeout must be at most 86400"),
    Case("option: --mllm-judge-temperature=nan", (*SHAPES, "--mllm-judge-temperature=nan"), USAGE,
         "--mllm-judge-temperature must be 0 or more, got nan"),
    Case("option: --mllm-concurrency=100000", (*SHAPES, "--mllm-concurrency=100000"), USAGE,
         "--mllm-concurrency must be at most 4096"),
    Case("option: --mllm-max-retries=1000", (*SHAPES, "--mllm-max-retries=1000"), USAGE,
         "--mllm-max-retries must be at most 100"),
    Case("option: --mllm-batch-size=10**9", (*SHAPES, "--mllm-batch-size=1000000000"), USAGE,
         "--mllm-batch-size must be at most 1048576"),
    Case("spec: max_new_tokens 10**20", ("{tmp}/mine.yaml", YES), COLLECTION,
         f"field 'max_new_tokens': {10 ** 20} must be a positive integer, at most 1048576",
         spec(GOOD_SPEC + f"max_new_tokens: {10 ** 20}\n")),
    # -- issue 28: a broken cache warns and the run goes on ----------------------------------------------
    Case("cache: the right version, the wrong columns", (*COUNTING, *SHAPES[1:], *FEW), OK,
         "its responses table has the columns key, text, expected key, response, model, created, latency_s",
         both(cache_file("key TEXT PRIMARY KEY, text TEXT"), files(**{"conftest.py": "DISK_FULL = False\n" + CACHED_MODEL})),
         changes=("cache/responses.sqlite3",)),  # moved aside, a new cache in its place
    Case("cache: not a database", (*COUNTING, *SHAPES[1:], *FEW), OK, "was unusable",
         files(**{"cache__responses.sqlite3": b"not sqlite" * 100, "conftest.py": "DISK_FULL = False\n" + CACHED_MODEL}),
         changes=("cache/responses.sqlite3",)),
    Case("cache: its disk fills up mid-run", (*COUNTING, *SHAPES[1:], *FEW), OK,
         "a write failed (database or disk is full); the cache is off for the rest of this run",
         files(**{"conftest.py": "DISK_FULL = True\n" + CACHED_MODEL})),
    # -- a run that is not a full run: no gate passes, and it says why ----------------------------------
    Case("interrupted: SIGTERM mid-run, a gate its value passes is not passed",
         ("--mllm=terminated", "--mllm-bench=shapes", *FEW, "--mllm-batch-size=1", "--mllm-gate=shapes.accuracy>=0.1",
          "--mllm-json={tmp}/out/r.json"), COLLECTION,
         "gate failed: shapes.accuracy 0.5 >= 0.1, not passed: the run was interrupted: SIGTERM after 2 of 9 tests",
         files(**{"conftest.py": TERMINATED_MODEL})),
    Case("stopped: -x after the first wrong answer, a gate its value passes is not passed",
         (*SHAPES, *FEW, "--mllm-strict", "-x", "--mllm-gate=shapes.accuracy>=0.1"), FAILED,
         "not passed: the run was stopped early (stopping after 1 failures) after 2 of 9 tests"),
    Case("limit: a gate on a limited run is not passed", (*SHAPES, "--mllm-limit=2", "--mllm-gate=shapes.accuracy>=0.1"),
         FAILED, "not passed: the run was limited to 2 samples per task (10 of 360 sample tests)"),
    Case("limit: a regression limit on a limited run is not passed",
         (*SHAPES, "--mllm-limit=2", "--mllm-baseline={tmp}/b.json", "--mllm-max-drop=shapes.accuracy=0.5"), FAILED,
         "gate failed: shapes.accuracy 0.4 >= 0, not passed: the run was limited to 2 samples per task",
         files(**{"b.json": '{"benchmarks": {"shapes": {"metrics": {"accuracy": 0.5}}}}'})),
    Case("limit: a limit that leaves no sample out is a full run", (*SHAPES, *FEW, "--mllm-limit=1000",
         "--mllm-gate=shapes.accuracy>=0.1"), OK, "All 1 gates passed"),
    Case("gates: none of them ran, and the summary says so, not 'passed'",
         ("{tmp}/test_unit.py", YES, "--mllm-gate=shapes.accuracy>=0.5", "--mllm-gate=shapes.f1>=0.5",
          "--mllm-gate-skip-missing"), OK, "pytest-mllm: 0 of 2 gates ran",
         files(**{"test_unit.py": "def test_unit():\n    pass\n"})),
]

_TABLE: list[tuple[str, int, str]] = []


def _first_line(output: str, culprit: str) -> str:
    for line in output.splitlines():
        if culprit in line:
            return line.strip()
    return next((line.strip() for line in output.splitlines() if line.startswith("ERROR")), "")


@pytest.fixture(scope="module", autouse=True)
def _table(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    if not os.environ.get("BAD_INPUTS_TABLE") or not _TABLE:
        return
    rows = ["| case | exit status | first line of the message |", "|---|---|---|"]
    rows += [f"| {case} | {status} | `{line.replace('|', '/')}` |" for case, status, line in _TABLE]
    path = Path(os.environ.get("BAD_INPUTS_TABLE_PATH", "/tmp/work/bad_inputs_table.md"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    reporter = request.config.pluginmanager.getplugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        for row in rows:
            reporter.write_line(row)


def test_the_table_is_large_and_its_cases_distinct() -> None:
    assert len(CASES) >= 150
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case: Case, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    run_case(case, pytester, monkeypatch)


def run_case(case: Case, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> str:
    """Build and run `case`; check its status, its message, that nothing went wrong on the way and that no file
    the case built changed (but those it names in `changes`). Returns the output."""
    tmp = pytester.path
    case.build(tmp)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value.replace("{tmp}", str(tmp)))
    if case.ini:
        pytester.makepyprojecttoml(f"[tool.pytest.ini_options]\n{case.ini}\n")
    inputs = sha256_of_files(tmp)
    args = [arg.replace("{tmp}", str(tmp)) for arg in case.args]
    if case.tool:
        status, output = _run_tool(case.tool, args)
    else:
        result = pytester.runpytest(*BASE, *args)
        status, output = int(result.ret), result.stdout.str() + "\n" + result.stderr.str()
    culprit = case.culprit.replace("{tmp}", str(tmp))
    _TABLE.append((case.id, status, _first_line(output, culprit).replace(str(tmp), "<tmp>")))
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert not re.search(r"pytest_mllm/\S+\.py:\d+", output), output  # no plugin frames above the message
    assert culprit in output, output
    assert "\x1b[2J" not in output and "\x1b[31m" not in output, output  # data's terminal escapes are shown escaped
    if case.status is not None:
        assert status == case.status, output
    after = sha256_of_files(tmp)
    changed = sorted(name for name, digest in inputs.items() if after.get(name) != digest and name not in case.changes)
    assert not changed, f"inputs changed by the run: {changed}\n{output}"
    return output


def sha256_of_files(folder: Path) -> dict[str, str]:
    """{path relative to `folder`: sha256} of every regular file under it (links and special files left out)."""
    import hashlib

    found = {}
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def _run_tool(tool: str, args: list[str]) -> tuple[int, str]:
    """(exit status, stdout and stderr) of pytest-mllm-merge, -compare or -curate run in this process."""
    from pytest_mllm.curation import cli as curate
    from pytest_mllm.report import compare, merge

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = {"merge": merge.main, "compare": compare.main, "curate": curate.main}[tool](args)
        except SystemExit as exc:  # argparse
            status = exc.code if isinstance(exc.code, int) else 2
    return status, out.getvalue() + "\n" + err.getvalue()


CRASHING_CONFTEST = '''
import os
from pytest_mllm.sample import Response

class Crashes:
    name = "crashes"
    needs_images = False

    def generate(self, requests):
        if any(r.sample.id == "existence::img_001.png::q1" for r in requests):
            os._exit(3)  # the worker dies mid-test, as on a segfault or the OOM killer
        return [Response("yes") for _ in requests]

def pytest_mllm_make_model(spec, config):
    return Crashes() if spec == "crashes" else None
'''


def test_a_crashed_workers_sample_is_an_error_in_json_scores_and_html(pytester: pytest.Pytester) -> None:
    import json

    pytester.makeconftest(CRASHING_CONFTEST)
    out, html = pytester.path / "out.json", pytester.path / "report.html"
    result = pytester.runpytest_subprocess(
        *BASE, "-n", "2", "--mllm=crashes", "--mllm-bench=shapes", "--mllm-batch-size=1", "-k",
        "existence and (img_000 or img_001 or img_002)", f"--mllm-json={out}", f"--mllm-html={html}",
        "--mllm-gate=shapes.accuracy>=0.99")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, output
    assert "INTERNALERROR" not in output
    result.stdout.fnmatch_lines(["*crashed while running*existence::img_001.png::q1*"])
    assert result.outlines[-1].startswith("gate failed: shapes.accuracy 0.4 < 0.99"), result.outlines[-3:]
    document = json.loads(out.read_text())
    records = document["records"] if "records" in document else [
        r for b in document["benchmarks"].values() for r in b.get("records", [])]
    crashed = [r for r in records if r["id"] == "existence::img_001.png::q1"]
    assert len(crashed) == 1 and crashed[0]["status"] == "error" and "crashed" in crashed[0]["error"]
    assert crashed[0]["question"] and crashed[0]["task"] == "existence"
    overall = document["benchmarks"]["shapes"]["metrics"]
    assert (overall["count"], overall["errors"]) == (5, 1), overall  # 6 samples: 5 scored, 1 error
    assert len(records) == 6
    assert "existence::img_001.png::q1" in html.read_text()


def test_the_last_line_names_the_failed_gates_and_titles_say_the_version(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*BASE, *SHAPES, *FEW, "--mllm-gate=shapes.accuracy>=0.99",
                                "--mllm-gate=shapes.yes_ratio<=0.5", "--mllm-gate=shapes.count>=1")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    last = result.outlines[-1]
    assert last.startswith("gate failed: shapes.accuracy 0.") and "< 0.99" in last, result.outlines[-3:]
    assert "gate failed: shapes.yes_ratio 1 > 0.5" in last and "shapes.count" not in last
    assert re.search(r"\d+ passed", result.outlines[-2])  # pytest's own line stays just above
    result.stdout.fnmatch_lines(["shapes (v1) · headline: accuracy*"])


def test_help_lists_every_bundled_benchmark_and_model_form(pytester: pytest.Pytester) -> None:
    from pytest_mllm.engine.spec import bundled_specs
    from pytest_mllm.models.registry import BUILTIN_FORMS

    help_text = " ".join(pytester.runpytest("--help").stdout.str().split())
    for name in bundled_specs():
        assert name in help_text.split("--mllm-bench=NAME", 1)[1].split("--mllm-data", 1)[0], name
    for form in BUILTIN_FORMS:
        assert " ".join(form.split()) in help_text, form
    assert "--mllm-gate-skip-missing" in help_text


def test_max_image_pixels_above_pillows_own_limit_decodes(monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    from pytest_mllm.engine.images import ImageError, load_image
    from pytest_mllm.sample import ImageRef

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100)  # Pillow refuses over 2x this: 24x24 = 576 pixels
    ref = ImageRef("path", "ok.png", root=FIXTURES / "bad")
    assert load_image(ref, max_pixels=1000).size == (24, 24)
    with pytest.raises(ImageError, match="over the limit of 500"):
        load_image(ref, max_pixels=500)
