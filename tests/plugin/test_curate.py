"""`pytest-mllm-curate`: LIME-M curation with a panel of offline judges whose answers are known.

The end-to-end test runs the real command (one pytest run per judge) on fixtures/curation with
baselines and replay recordings built to give each unit a known number of correct judges, then
runs the curated spec. The other tests feed `--from-json` documents written here, so every
class, drop and count is asserted exactly without a pytest run per judge.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from chat_stub import ChatStub

from pytest_mllm.curation.cli import main
from pytest_mllm.curation.review import VERDICTS

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestAssertRewriteWarning")

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "curation"
BENCH = FIXTURE / "bench.yaml"
CAPTIONS = FIXTURE / "captions.yaml"
COMMAND = Path(sys.executable).with_name("pytest-mllm-curate")
SAMPLES = [json.loads(line) for line in (FIXTURE / "bench.jsonl").read_text().splitlines()]
TASK = {s["id"]: s["task"] for s in SAMPLES}
ANSWER = {s["id"]: s["answer"] for s in SAMPLES}


def sid(short: str) -> str:
    """The sample id of a fixture entry ("p1a" → "pairs::p1a")."""
    return f"{TASK[short]}::{short}"


def ids(*shorts: str) -> list[str]:
    return [sid(s) for s in shorts]


# -- judges with known answers -------------------------------------------------------------

# Per unit, whether replay judges A, B and C answer it right (1), wrong (0) or not at all (E: the
# replay has no answer, so the sample errors). The baselines yes and no are wrong on every unit:
# each pair has a "no" and a "yes" question, and neither word is an option letter or a caption.
PATTERN = {  # unit: (A, B, C)
    "p1": "111", "p2": "110", "p3": "100", "p4": "000",
    "c1": "11E", "c2": "110", "c3": "100", "c4": "00E", "c5": "100", "c6": "110",
    "k1": "110", "k2": "100", "k3": "111", "k4": "000",
}
TEXT_ONLY_RIGHT = {"p3", "c2", "k1"}  # the text-only judge's right units: p3, c2 leak; k1's task shows one text


def members(unit: str) -> list[str]:
    return [f"{unit}a", f"{unit}b"] if unit.startswith("p") else [unit]


def response(short: str, right: bool) -> str:
    """A response the fixture's parsers score as right or wrong."""
    answer = ANSWER[short]
    if TASK[short] == "pairs":
        return answer.capitalize() if right else ("No" if answer == "yes" else "Yes")
    if TASK[short] == "choice":
        return answer if right else "D"
    return answer if right else "a purple triangle"


def write_replay(path: Path, verdicts: dict[str, str]) -> Path:
    """A replay recording answering each unit right ("1"), wrong ("0") or not at all ("E")."""
    lines = []
    for unit, verdict in verdicts.items():
        if verdict == "E":
            continue
        shorts = members(unit)
        for n, short in enumerate(shorts):
            right = verdict == "1" or (len(shorts) == 2 and n == 0)  # a wrong pair: the first right, the second wrong
            lines.append(json.dumps({"id": short, "response": response(short, right)}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def judges(folder: Path) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = {name: write_replay(folder / f"{name}.jsonl", {u: p[n] for u, p in PATTERN.items()})
           for n, name in enumerate("ABC")}
    out["T"] = write_replay(folder / "T.jsonl", {u: "1" if u in TEXT_ONLY_RIGHT else "0" for u in PATTERN})
    return out


# -- results documents for --from-json ---------------------------------------------------------

def document(path: Path, model: str, statuses: dict[str, str], *, benchmark: str = "curation_mini",
             withheld: bool = False, latency: float = 0.5) -> Path:
    """A --mllm-json file: `statuses` maps a fixture id to c (correct), i (incorrect) or e (error)."""
    names = {"c": "correct", "i": "incorrect", "e": "error"}
    records = [{"id": sid(short), "benchmark": benchmark, "task": TASK[short], "status": names[s],
                "response": "r", "parsed": "r", "error": "model error: boom" if s == "e" else None,
                "latency_s": None if s == "e" else latency, "variant": None, "order": n}
               for n, (short, s) in enumerate(statuses.items())]
    path.write_text(json.dumps({"settings": {"model": model, "images_withheld": withheld},
                                "benchmarks": {}, "records": records}), encoding="utf-8")
    return path


def unit_statuses(pattern: dict[str, str]) -> dict[str, str]:
    """Per-sample statuses from per-unit ones (c, i, e), every member alike."""
    return {short: s for unit, s in pattern.items() for short in members(unit)}


def curate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str, Path]:
    out = tmp_path / "out"
    code = main([str(a) for a in args] + ["--out", str(out)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err, out


def manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "manifest.json").read_text())


def dropped(m: dict[str, Any]) -> dict[str, set[str]]:
    reasons: dict[str, set[str]] = {}
    for entry in m["dropped"]:
        reasons.setdefault(entry["reason"], set()).add(entry["id"])
    return reasons


# -- the real command, end to end ----------------------------------------------------------------

def test_curation_end_to_end_with_offline_judges(tmp_path: Path) -> None:
    replays = judges(tmp_path / "replays")
    out = tmp_path / "out"
    command = [COMMAND, BENCH, "--panel", "baseline:yes", "--panel", "baseline:no",
               *(arg for n in "ABC" for arg in ("--panel", f"replay:{replays[n]}")),
               "--text-only", f"replay:{replays['T']}", "--leak-threshold", "0", "--target", "5", "--seed", "1",
               "--out", out]
    assert COMMAND.exists(), f"{COMMAND} is missing: install the package (pip install -e .)"
    done = subprocess.run([str(c) for c in command], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "18 samples in 3 task(s); panel of 5 judges" in done.stdout and "6 pytest run(s) to make" in done.stdout
    assert "[6/6] text-only: replay:" in done.stdout

    m = manifest(out)
    classes = {e["id"]: e["class"] for e in m["dropped"] + m["kept"]}
    expected = {"p1": "easy", "p2": "middle", "p3": "hard", "p4": "unanswered", "c1": "unknown", "c2": "middle",
                "c3": "hard", "c4": "unknown", "c5": "hard", "c6": "middle", "k1": "middle", "k2": "hard",
                "k3": "easy", "k4": "unanswered"}
    assert classes == {sid(s): expected[u] for u in expected for s in members(u)}
    assert dropped(m) == {"easy": set(ids("p1a", "p1b", "k3")), "unanswered": set(ids("p4a", "p4b", "k4")),
                          "unknown": set(ids("c1", "c4")), "leakage": set(ids("p3a", "p3b", "c2")),
                          "sampled-out": set(ids("p2a", "p2b"))}
    kept = ids("c3", "c5", "c6", "k1", "k2")
    assert [e["id"] for e in m["kept"]] == kept
    c1 = next(e for e in m["dropped"] if e["id"] == sid("c1"))
    assert (c1["correct"], c1["unknown"]) == (2, 1)  # C errored on it: unknown, not wrong
    assert m["settings"]["thresholds"]["easy_min"] == 3 and m["settings"]["thresholds"]["hard_max"] == 1
    assert m["counts"]["samples_before"] == 18 and m["counts"]["samples_after"] == 5
    assert any("2 errored sample(s) count as unknown, not wrong" in w for w in m["warnings"])
    leakage = {t["task"]: t for t in m["leakage"]}
    assert leakage["pairs"]["dropped_samples"] == 2 and leakage["choice"]["dropped_samples"] == 1
    assert leakage["caption"]["action"] == "skipped" and "same text ('Describe the image.')" in leakage["caption"]["note"]
    assert [json.loads(line)["id"] for line in (out / "review.jsonl").read_text().splitlines()] == ids("p4a", "p4b", "k4")
    assert (out / "curated_ids.txt").read_text().splitlines()[1:] == kept
    assert "Leakage, task caption: skipped" in (out / "report.md").read_text()

    result = tmp_path / "curated.json"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--mllm=replay:{replays['A']}",
                          f"--mllm-bench={out / 'curated.yaml'}", f"--mllm-json={result}"],
                         cwd=tmp_path / "replays", capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    records = json.loads(result.read_text())["records"]
    assert [r["id"] for r in records] == kept and {r["benchmark"] for r in records} == {"curation_mini_curated"}
    assert all(r["status"] == "correct" for r in records)


def test_a_failing_judge_run_stops_curation_with_its_output(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, text, err, out = curate(tmp_path, capsys, BENCH, "--panel", "no-such-model", "--panel", "baseline:yes")
    assert code == 1
    # withholding images from a judge that never looks at them is said to mean nothing
    assert "note: judges that never look at images (baseline:yes) answer as before" in " ".join(text.split())
    assert "the run of no-such-model failed (a usage error)" in err and "unknown model 'no-such-model'" in err
    assert not (out / "manifest.json").exists()


# -- bad input -----------------------------------------------------------------------------------

def test_a_panel_of_one_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err, _ = curate(tmp_path, capsys, BENCH, "--panel", "baseline:yes")
    assert code == 2
    assert "a panel of 1 model (baseline:yes) cannot grade difficulty" in err
    assert "LIME-M used 9-10 judges" in err and "--panel MODEL_A --panel MODEL_B" in err
    one = document(tmp_path / "one.json", "m", unit_statuses({u: "c" for u in PATTERN}))
    assert curate(tmp_path, capsys, BENCH, "--from-json", one)[0] == 2
    blind = document(tmp_path / "blind.json", "m", unit_statuses({u: "c" for u in PATTERN}), withheld=True)
    code, _, err, _ = curate(tmp_path, capsys, BENCH, "--from-json", one, "--from-json", blind)
    assert code == 2 and "the panel has 1 judge(s)" in err and "text-only" in err


@pytest.mark.parametrize("args, message", [
    ([], "no judge given: pass the panel as --panel MODEL"),
    (["--panel", "baseline:yes", "--panel", "baseline:yes"], "--panel baseline:yes is given twice"),
    (["--panel", "a", "--panel", "b", "--easy-min", "3"], "--easy-min 3 must be between 1 and the panel's 2 judges"),
    (["--panel", "a", "--panel", "b", "--leak-threshold", "some"], "--leak-threshold must be 'auto' or a whole number"),
    (["--panel", "a", "--panel", "b", "--review-llm", "gpt-4o"], "--review-llm must be openai:MODEL"),
    (["--panel", "a", "--panel", "b", "--target", "0"], "--target must be at least 1"),
])
def test_other_bad_input_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                          message: str) -> None:
    code, _, err, _ = curate(tmp_path, capsys, BENCH, *args)
    assert code == 2 and message in err


def test_the_same_judge_twice_in_files_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    statuses = unit_statuses({u: "c" for u in PATTERN})
    files = [document(tmp_path / f"{n}.json", "same-model", statuses) for n in range(2)]
    code, _, err, _ = curate(tmp_path, capsys, BENCH, "--from-json", files[0], "--from-json", files[1])
    assert code == 2 and "panel judge 'same-model' appears twice" in err


def test_a_file_without_the_benchmark_names_what_it_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    statuses = unit_statuses({u: "c" for u in PATTERN})
    files = [document(tmp_path / f"{n}.json", f"m{n}", statuses, benchmark="other") for n in range(2)]
    code, _, err, _ = curate(tmp_path, capsys, BENCH, "--from-json", files[0], "--from-json", files[1])
    assert code == 2 and "no records of benchmark 'curation_mini' (it holds: other)" in err


# -- a judge that errors ---------------------------------------------------------------------------

def test_a_judge_that_errors_leaves_samples_unknown_not_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Nine judges, the code preset as published (easy 5-9, middle 3-4, hard 1-2). The last errors on p1, c1-c4.
    rows = {  # unit: statuses of judges 1-9
        "p1": "cccciiiie",  # 4 right + 1 unknown: middle or easy → unknown
        "c1": "ccciiiiie",  # 3 + 1: middle either way → middle (an error counted wrong would also say middle)
        "c2": "cciiiiiie",  # 2 + 1: hard or middle → unknown
        "c3": "ccccciiie",  # 5 + 1: easy either way → dropped as easy, not unknown
        "c4": "iiiiiiiie",  # 0 + 1: unanswered or hard → unknown (not sent to review)
        "c5": "ciiiiiiii",  # 1: hard
    }
    rows.update({u: "ccccccccc" for u in PATTERN if u not in rows})
    files = [document(tmp_path / f"j{n}.json", f"judge{n}", unit_statuses({u: s[n] for u, s in rows.items()}))
             for n in range(9)]
    code, out_text, _, out = curate(tmp_path, capsys, BENCH, *(a for f in files for a in ("--from-json", f)),
                                    "--no-leakage")
    assert code == 0
    m = manifest(out)
    assert dropped(m)["unknown"] == set(ids("p1a", "p1b", "c2", "c4"))
    assert {e["id"]: e["class"] for e in m["kept"]} == {sid("c1"): "middle", sid("c5"): "hard"}
    c3 = next(e for e in m["dropped"] if e["id"] == sid("c3"))
    assert (c3["reason"], c3["correct"], c3["unknown"]) == ("easy", 5, 1)
    assert not (out / "review.jsonl").read_text()  # c4 might have been answered: it is unknown, not unanswered
    last = next(r for r in m["report"]["models"] if r["model"] == "judge8")
    assert last["accuracy_before"] == pytest.approx(11 / 12)  # its 6 errors are left out, not counted wrong
    assert "judge judge8: 6 errored sample(s) count as unknown, not wrong" in out_text
    assert "easy 5-9 · middle 3-4 · hard 1-2 · unanswered 0 (correct judges of 9)" in out_text


# -- sampling to a target ----------------------------------------------------------------------------

def _mixed_panel(tmp_path: Path) -> list[str]:
    """Four judges giving middle and hard units across the tasks (easy ≥ 3, middle 2, hard 1 of 4)."""
    rows = {"p1": "ccii", "p2": "ciii", "p3": "ccii", "p4": "ciii", "c1": "ccii", "c2": "ciii", "c3": "ccii",
            "c4": "ciii", "c5": "cccc", "c6": "iiii", "k1": "ccii", "k2": "ciii", "k3": "ccii", "k4": "ciii"}
    files = [document(tmp_path / f"m{n}.json", f"m{n}", unit_statuses({u: s[n] for u, s in rows.items()}),
                      latency=0.25 * (n + 1)) for n in range(4)]
    return [a for f in files for a in ("--from-json", str(f))]


def test_a_target_larger_than_what_remains_keeps_everything_and_says_so(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out_text, _, out = curate(tmp_path, capsys, BENCH, *_mixed_panel(tmp_path), "--target", "1000")
    assert code == 0
    m = manifest(out)
    assert m["counts"]["samples_after"] == 16 and "sampled-out" not in dropped(m)
    assert "Warning: --target 1000 is not below the 16 samples that passed the filters: kept all 16." in out_text
    assert "--target 1000 is not below the 16 samples" in (out / "report.md").read_text()


def test_sampling_to_a_target_is_seeded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    panel = _mixed_panel(tmp_path)
    kept = []
    for seed in ("1", "1", "2"):
        code, out_text, _, out = curate(tmp_path, capsys, BENCH, *panel, "--target", "8", "--seed", seed)
        assert code == 0
        kept.append((out / "curated_ids.txt").read_text().splitlines()[1:])
    assert kept[0] == kept[1] and len(kept[0]) == 8 and kept[0] != kept[2]
    m = manifest(out)
    assert m["counts"]["by_class"]["middle"]["after"] + m["counts"]["by_class"]["hard"]["after"] == 8
    assert "Evaluation time" in out_text and "Spread of the panel's scores" in out_text


# -- the leakage pass explains itself ------------------------------------------------------------

def test_leakage_on_a_benchmark_without_text_only_answerable_field(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    rows = {"k1": "ccii", "k2": "ciii", "k3": "ciii", "k4": "ccii"}  # middle, hard, hard, middle
    panel = [document(tmp_path / f"m{n}.json", f"m{n}", unit_statuses({u: s[n] for u, s in rows.items()}),
                      benchmark="captions_only") for n in range(4)]
    blind = document(tmp_path / "blind.json", "llm", {"k1": "c", "k2": "c", "k3": "c", "k4": "c"},
                     benchmark="captions_only", withheld=True)
    code, out_text, _, out = curate(tmp_path, capsys, CAPTIONS, *(a for f in panel for a in ("--from-json", f)),
                                    "--from-json", blind)
    assert code == 0
    line = ("Leakage, task caption: skipped — every sample shows the same text ('Describe the image.'); a text-only "
            "answer cannot depend on the sample, so it cannot reveal leakage.")
    assert line in " ".join(out_text.split())
    assert line in (out / "report.md").read_text()
    m = manifest(out)
    assert m["counts"]["samples_after"] == 4 and m["settings"]["text_only"][0]["images_withheld"]
    assert m["leakage"] == [{"task": "caption", "action": "skipped", "note": line[len("Leakage, task caption: skipped — "):-1],
                             "threshold": None, "chance": 0.0, "units": 4, "dropped_units": 0, "dropped_samples": 0}]


def test_leakage_lines_relate_the_threshold_to_chance(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    panel = _mixed_panel(tmp_path)
    text = document(tmp_path / "t.json", "text-llm", unit_statuses({u: "c" if u in ("p1", "c1") else "i"
                                                                    for u in PATTERN}))
    code, out_text, _, out = curate(tmp_path, capsys, BENCH, *panel, "--text-only-json", text)
    assert code == 0
    notes = {t["task"]: t["note"] for t in manifest(out)["leakage"]}
    assert "with 1 text-only answer(s) and a 25% chance per guess" in notes["pairs"]  # a pair: ½ · ½
    assert "cannot be told from guessing" in notes["choice"]
    assert "leakage" not in dropped(manifest(out))
    code, _, _, out = curate(tmp_path, capsys, BENCH, *panel, "--text-only-json", text, "--leak-threshold", "0")
    m = manifest(out)
    assert dropped(m)["leakage"] == set(ids("p1a", "p1b", "c1"))
    notes = {t["task"]: t["note"] for t in m["leakage"]}
    assert notes["pairs"].startswith("dropped when more than 0 of 1 text-only answers are right; a guess is right 25% "
                                     "of the time, so guessing alone would pass this for 25.0% of units")


def test_no_text_only_answers_from_files_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out_text, _, out = curate(tmp_path, capsys, BENCH, *_mixed_panel(tmp_path))
    assert code == 0
    assert "Leakage, task pairs: skipped — no text-only answers were given" in " ".join(out_text.split())


# -- the review list and its LLM -----------------------------------------------------------------

def _review(body: dict[str, Any]) -> str:
    """Fault injector's reply: a verdict for every review request but the one about purple."""
    text = body["messages"][0]["content"][-1]["text"]
    return "Verdict: reference wrong\nThe shape is not that colour." if "purple" not in text else "no idea"


@pytest.fixture
def reviewer() -> Iterator[ChatStub]:
    with ChatStub(_review) as stub:
        yield stub


def test_review_llm_gets_the_image_and_never_decides(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch, reviewer: ChatStub) -> None:
    secret = "sk-curate-test-5ecret"
    monkeypatch.setenv("CURATE_REVIEW_KEY", secret)
    code, out_text, _, out = curate(tmp_path, capsys, BENCH, *_mixed_panel(tmp_path), "--review-llm", "openai:rev",
                                    "--review-base-url", reviewer.base_url, "--review-api-key-env", "CURATE_REVIEW_KEY")
    assert code == 0
    entries = [json.loads(line) for line in (out / "review.jsonl").read_text().splitlines()]
    assert [e["id"] for e in entries] == ids("c6")
    assert entries[0]["answer"] == "A" and entries[0]["choices"]["A"] == "16 by 16" and len(entries[0]["judges"]) == 4
    assert entries[0]["llm"]["verdict"] == "reference wrong" and "not that colour" in entries[0]["llm"]["reply"]
    [request] = reviewer.requests
    assert request["auth"] == f"Bearer {secret}" and request["body"]["model"] == "rev"
    image = request["body"]["messages"][0]["content"][0]["image_url"]["url"]
    assert image.startswith("data:image/png;base64,") and base64.b64decode(image.split(",", 1)[1])[:4] == b"\x89PNG"
    m = manifest(out)
    assert sid("c6") in dropped(m)["unanswered"]  # the LLM's word drops nothing and keeps nothing
    assert m["review"] == {"file": "review.jsonl", "samples": 1, "llm_verdicts": {"reference wrong": 1}}
    assert m["settings"]["review"]["api_key_env"] == "CURATE_REVIEW_KEY"
    for path in out.rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
    assert secret not in out_text


def test_keep_unanswered_keeps_the_review_list_in_the_curated_set(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, _, out = curate(tmp_path, capsys, BENCH, *_mixed_panel(tmp_path), "--keep-unanswered")
    assert code == 0
    assert sid("c6") in (out / "curated_ids.txt").read_text().splitlines()
    assert [json.loads(line)["id"] for line in (out / "review.jsonl").read_text().splitlines()] == ids("c6")


def test_review_llm_against_a_real_small_model(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               request: pytest.FixtureRequest) -> None:
    """SmolLM2-135M-Instruct served by `transformers serve` (text only: it takes no images)."""
    for module in ("fastapi", "uvicorn", "gguf"):
        pytest.importorskip(module, reason="needs the serve and test extras: pip install 'pytest-mllm[test]'")
    server = request.getfixturevalue("smollm2_server")
    code, _, _, out = curate(tmp_path, capsys, BENCH, *_mixed_panel(tmp_path), "--review-llm",
                             f"openai:{server.model}", "--review-base-url", server.base_url, "--review-text-only",
                             "--review-max-tokens", "48")
    assert code == 0
    [entry] = [json.loads(line) for line in (out / "review.jsonl").read_text().splitlines()]
    llm = entry["llm"]
    assert llm["model"] == server.model and llm["note"] == "image not sent (--review-text-only)"
    assert (llm["error"] is None and isinstance(llm["reply"], str)) or llm["error"].startswith(("Endpoint", "Malformed"))
    assert llm["verdict"] in (*VERDICTS, None)
    assert sid("c6") in dropped(manifest(out))["unanswered"]


def test_help_describes_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    text = capsys.readouterr().out
    assert info.value.code == 0 and "LIME-M" in text and "at most 5% of samples" in text and "--from-json" in text
