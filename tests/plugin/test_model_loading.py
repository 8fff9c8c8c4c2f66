"""Loading the model under test, as a user sees it: a model that cannot be had stops the run before
any sample with one message and exit status 4; a load that fails stops the run at the first sample;
`loading …`/`loaded … in N s` lines, the load time kept out of the sample's own time; loading
arguments (--mllm-model-args) reaching transformers, a typo refused by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pytest_mllm.models.tiny import ensure_tiny_llava

BASE = ("-p", "no:cacheprovider", "--mllm-cache=off")
FEW = ("--mllm-bench=shapes", "-k", "existence and img_00")  # 20 samples


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ensure_tiny_llava(tmp_path_factory.mktemp("tiny") / "tiny-llava")


@pytest.fixture(scope="module")
def broken(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real model folder whose weights file is corrupt inside (its header names a tensor type no reader
    knows), whole in size: only loading shows it (a weights file cut short is named before any sample:
    test_bad_outputs_and_answers.py)."""
    folder = tmp_path_factory.mktemp("broken") / "model"
    shutil.copytree(tiny, folder)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes().replace(b'"dtype":"F32"', b'"dtype":"Q32"', 1))
    return folder


@pytest.mark.parametrize(("model", "message"), [
    ("hf:{tmp}/no-such-model", "ERROR: --mllm=hf:{tmp}/no-such-model: the model folder {tmp}/no-such-model does not "
                               "exist; pass the folder that save_pretrained() wrote"),
    ("hf:{tmp}", "ERROR: --mllm=hf:{tmp}: {tmp} holds no config.json, so it is not a transformers model folder"),
])
def test_a_model_that_is_not_there_stops_the_run_before_any_sample(pytester: pytest.Pytester, model: str,
                                                                   message: str) -> None:
    tmp = str(pytester.path)
    result = pytester.runpytest(*BASE, f"--mllm={model.format(tmp=tmp)}", *FEW)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.lines[0].startswith(message.format(tmp=tmp)), result.stderr.lines
    assert len(result.stdout.lines) + len(result.stderr.lines) <= 3  # was 1,117 lines: an ERROR per sample


def test_a_load_that_fails_stops_the_run_at_the_first_sample(pytester: pytest.Pytester, broken: Path) -> None:
    result = pytester.runpytest(*BASE, f"--mllm=hf:{broken}", *FEW)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stdout.str().count("ERROR shapes::") == 1  # one sample errors; the others never run
    result.stdout.fnmatch_lines([f"pytest-mllm: loading hf:{broken} …",
                                 "pytest-mllm: the model could not be loaded: *(the run stopped at the first sample "
                                 "that needed it)", "*Interrupted: the model could not be loaded*", "*1 error in*"])
    assert len(result.stdout.lines) < 40


@pytest.fixture(scope="module")
def answers_nothing(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real model folder whose generation settings forbid every token but the special ones: it loads, and
    answers '' to everything (as a family whose answers are cut at the wrong place would)."""
    folder = tmp_path_factory.mktemp("silent") / "model"
    shutil.copytree(tiny, folder)
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    special = {token["id"] for token in tokenizer["added_tokens"]}
    settings = json.loads((folder / "generation_config.json").read_text())
    settings["suppress_tokens"] = sorted(set(tokenizer["model"]["vocab"].values()) - special)
    (folder / "generation_config.json").write_text(json.dumps(settings))
    return folder


@pytest.fixture(scope="module")
def fails_every_sample(tiny: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real model folder whose image processor crops images larger than its vision tower takes: it loads, and
    every request fails (its vision tower refuses the image)."""
    folder = tmp_path_factory.mktemp("mismatched") / "model"
    shutil.copytree(tiny, folder)
    settings = json.loads((folder / "processor_config.json").read_text())
    settings["image_processor"]["crop_size"] = {"height": 64, "width": 64}
    settings["image_processor"]["size"] = {"shortest_edge": 64}
    (folder / "processor_config.json").write_text(json.dumps(settings))
    return folder


@pytest.mark.parametrize(("fixture", "reason"), [
    ("answers_nothing", "loaded but answered '' to a first test question"),
    ("fails_every_sample", "loaded but failed on a first test question (ValueError: Input image size (64*64)"),
])
def test_a_model_that_would_fail_every_sample_stops_the_run_at_the_first(
        pytester: pytest.Pytester, request: pytest.FixtureRequest, fixture: str, reason: str) -> None:
    folder = request.getfixturevalue(fixture)
    result = pytester.runpytest(*BASE, f"--mllm=hf:{folder}", *FEW)
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # no score of empty answers or of errors
    assert result.stdout.str().count("ERROR shapes::") == 1
    result.stdout.fnmatch_lines([f"pytest-mllm: the model could not be loaded: '{folder}' {reason}*"])


def test_under_xdist_each_worker_stops_at_its_first_sample(pytester: pytest.Pytester, broken: Path) -> None:
    result = pytester.runpytest_subprocess(*BASE, f"--mllm=hf:{broken}", *FEW, "-n", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["pytest-mllm: the model could not be loaded: *", "*Interrupted*"])
    assert result.stdout.str().count("ERROR shapes::") <= 2  # at most one per worker, not 20
    assert len(result.stdout.lines) < 60


def test_the_load_is_announced_and_kept_out_of_the_first_samples_time(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        import time
        from pytest_mllm.sample import Response

        class SlowToLoad:  # a user's own model whose loading takes a second
            name = "slow-to-load"
            needs_images = False
            def __init__(self):
                time.sleep(1.0)
            def generate(self, requests):
                return [Response("Yes") for _ in requests]

        def pytest_mllm_make_model(spec, config):
            return SlowToLoad() if spec == "slow" else None
    """)
    result = pytester.runpytest(*BASE, "--mllm=slow", *FEW, "--mllm-json=out.json")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["pytest-mllm: loading slow …", "pytest-mllm: loaded slow in 1.* s"])
    document = json.loads((pytester.path / "out.json").read_text())
    [load] = document["settings"]["model_loads"]
    assert load["model"] == "slow" and load["seconds"] >= 1.0 and load["worker"] is None and load["placement"] is None
    first = document["records"][0]
    assert first["duration_s"] < 0.5  # the load's second is not the first sample's


def test_loading_arguments_reach_transformers_and_a_misspelt_setting_is_named(pytester: pytest.Pytester,
                                                                             tiny: Path) -> None:
    result = pytester.runpytest(*BASE, f"--mllm=hf:{tiny}", *FEW, "--mllm-model-args=revision=main,patch_sise=9")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["pytest-mllm: the model could not be loaded: --mllm-model-args: 'patch_sise' is "
                                 "neither a loading argument nor a setting of LlavaProcessor; did you mean "
                                 "'patch_size'?*"])


def test_a_model_split_between_memory_and_disk_answers_as_the_whole(pytester: pytest.Pytester, tiny: Path) -> None:
    whole = pytester.runpytest(*BASE, f"--mllm=hf:{tiny}", *FEW, "--mllm-json=whole.json")
    split = pytester.runpytest(*BASE, f"--mllm=hf:{tiny}", *FEW, "--mllm-json=split.json",
                               '--mllm-model-args=max_memory={"cpu": "600KB"},offload_folder=' + str(pytester.path / "off"))
    assert whole.ret == split.ret == pytest.ExitCode.OK
    answers = {name: [r["response"] for r in json.loads((pytester.path / f"{name}.json").read_text())["records"]]
               for name in ("whole", "split")}
    assert len(answers["whole"]) == 20 and answers["split"] == answers["whole"]
    settings = json.loads((pytester.path / "split.json").read_text())["settings"]
    assert settings["model_args"] == {"max_memory": {"cpu": "600KB"}, "offload_folder": str(pytester.path / "off")}
    [load] = settings["model_loads"]
    assert "cpu: " in load["placement"] and "disk: " in load["placement"]  # one model, in memory and on disk
    split.stdout.fnmatch_lines([f"pytest-mllm: loaded hf:{tiny} in * s (cpu: * modules, disk: * modules)"])
