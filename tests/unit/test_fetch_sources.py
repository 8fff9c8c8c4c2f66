"""`engine/fetch.py`'s pure parts and the specs' data sources: the records a spec or a catalogue entry gives,
the data cache's layout and settings, a split's files, and every name a benchmark answers to."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_mllm.engine.fetch import (
    DataCache,
    FileSource,
    HubSource,
    default_folder,
    offline_by_environment,
    source_from_record,
    split_files,
)
from pytest_mllm.engine.spec import SpecError, _validate, bundled_specs, find_spec, load_spec

# VLMEvalKit's DATASET_URL and DATASET_MD5 for the bundled TSV specs, read from open-compass/VLMEvalKit at
# e8e78f05f3080fe28154f2130321f17951c3be94 (vlmeval/dataset/image_mcq.py: ImageMCQDataset, MMMUDataset;
# image_yorn.py: ImageYORNDataset; image_vqa.py: ImageVQADataset, OCRBench), by
# `git show e8e78f05:vlmeval/dataset/<file>` and reading the two dictionaries' entries.
VLMEVALKIT = {
    "mmbench": ("https://opencompass.openxlab.space/utils/benchmarks/MMBench/MMBench_DEV_EN.tsv",
                "b6caf1133a01c6bb705cf753bb527ed8"),
    "mmmu_tsv": ("https://opencompass.openxlab.space/utils/VLMEval/MMMU_DEV_VAL.tsv", "585e8ad75e73f75dcad265dfd0417d64"),
    "seedbench": ("https://opencompass.openxlab.space/utils/benchmarks/SEEDBench/SEEDBench_IMG.tsv",
                  "68017231464752261a2526d6ca3a10c0"),
    "hallusionbench": ("https://opencompass.openxlab.space/utils/VLMEval/HallusionBench.tsv",
                       "0c23ac0dc9ef46832d7a24504f2a0c7c"),
    "pope": ("https://opencompass.openxlab.space/utils/VLMEval/POPE.tsv", "c12f5acb142f2ef1f85a26ba2fbe41d5"),
    "ai2d": ("https://opencompass.openxlab.space/utils/VLMEval/AI2D_TEST.tsv", "0f593e0d1c7df9a3d69bf1f947e71975"),
    "chartqa": ("https://opencompass.openxlab.space/utils/VLMEval/ChartQA_TEST.tsv", "c902e0aa9be5582a7aad6dcf52734b42"),
    "docvqa": ("https://opencompass.openxlab.space/utils/VLMEval/DocVQA_VAL.tsv", "d5ee77e1926ff10690d469c56b73eabf"),
    "mmstar": ("https://opencompass.openxlab.space/utils/VLMEval/MMStar.tsv", "e1ecd2140806c1b1bbf54b43372efb9e"),
    "mmt_bench": ("https://opencompass.openxlab.space/utils/benchmarks/MMT-Bench/MMT-Bench_VAL.tsv",
                  "8dd4b730f53dbf9c3aed90ca31c928e0"),
    "ocrbench": ("https://opencompass.openxlab.space/utils/VLMEval/OCRBench.tsv", "e953d98a987cc6e26ef717b61260b778"),
    "realworldqa": ("https://opencompass.openxlab.space/utils/VLMEval/RealWorldQA.tsv", "4de008f55dc4fd008ca9e15321dc44b7"),
    "scienceqa": ("https://opencompass.openxlab.space/utils/benchmarks/ScienceQA/ScienceQA_TEST.tsv",
                  "e42e9e00f9c59a80d8a5db35bc32b71f"),
    "textvqa": ("https://opencompass.openxlab.space/utils/VLMEval/TextVQA_VAL.tsv", "b233b31f551bbf4056f2f955da3a92cd"),
    "mathvista": ("https://opencompass.openxlab.space/utils/VLMEval/MathVista_MINI.tsv",
                  "f199b98e178e5a2a20e7048f5dcb0464"),
    "mmvet": ("https://opencompass.openxlab.space/utils/VLMEval/MMVet.tsv", "748aa6d4aa9d4de798306a63718455e3"),
    "llavabench": ("https://opencompass.openxlab.space/utils/VLMEval/LLaVABench.tsv", "d382a093f749a697820d3dadd61c8428"),
}


def test_every_bundled_tsv_spec_fetches_vlmevalkits_file_with_its_md5() -> None:
    found = {}
    for key, path in bundled_specs().items():
        spec = load_spec(path)
        if spec.loader == "tsv":
            assert isinstance(spec.download, FileSource), key
            assert spec.download.filename == spec.data_file
            found[key] = (spec.download.url, spec.download.md5)
    assert found == VLMEVALKIT


def test_every_bundled_parquet_spec_fetches_its_hub_dataset_and_split() -> None:
    for key, path in bundled_specs().items():
        spec = load_spec(path)
        if spec.loader == "parquet":
            assert isinstance(spec.download, HubSource), key
            assert spec.download.split == spec.loader_options["split"]
            assert f"hf download {spec.download.repo} " in spec.about.source


def _spec(tmp_path: Path, data: dict, **more: object) -> object:
    return _validate(tmp_path / "bench.yaml", {"name": "bench", "loader": "tsv", "data": data, **more})


def test_a_spec_names_its_download_by_url_and_md5_or_by_hub(tmp_path: Path) -> None:
    spec = _spec(tmp_path, {"file": "B.tsv", "url": "https://host/x/B.tsv", "md5": "a" * 32})
    assert spec.download == FileSource(name="bench", url="https://host/x/B.tsv", md5="a" * 32, filename="B.tsv")
    spec = _spec(tmp_path, {"hub": {"repo": "org/bench", "revision": "0" * 40}}, loader_options={"split": "val"})
    assert spec.download == HubSource(name="bench", repo="org/bench", revision="0" * 40, split="val")
    assert _spec(tmp_path, {"file": "B.tsv"}).download is None
    unpublished = _spec(tmp_path, {"file": "B.tsv", "url": "https://host/x/B.tsv"})  # a publisher giving no MD5
    assert unpublished.download == FileSource(name="bench", url="https://host/x/B.tsv", md5=None, filename="B.tsv")


def test_every_catalogue_spec_fetches_its_entrys_file_and_answers_to_lmms_evals_names() -> None:
    from pytest_mllm.engine import catalogue

    specs = [load_spec(path) for path in sorted(catalogue.specs_folder().glob("*.yaml"))]
    assert len(specs) > 80
    for spec in specs:
        entry = catalogue.vlmevalkit_entry(spec.name)
        assert spec.download == FileSource(name=spec.name, url=entry.url, md5=entry.md5, filename=entry.file)
    seed = load_spec(find_spec("seedbench_2_plus"))  # lmms-eval's task name for VLMEvalKit's SEEDBench2_Plus
    assert seed.names == ("SEEDBench2_Plus", "seedbench_2_plus")
    assert seed.env_vars == ("MLLM_DATA_SEEDBENCH2_PLUS", "MLLM_DATA_SEEDBENCH_2_PLUS")


@pytest.mark.parametrize("data, message", [
    ({"file": "B.tsv", "md5": "a" * 32}, "field 'data.url': md5 is the digest of the file at url: give url too"),
    ({"url": "ftp://host/B.tsv", "md5": "a" * 32}, "field 'data.url': 'ftp://host/B.tsv' must be an http(s) URL"),
    ({"url": "https://host/B.tsv", "md5": "ABC"}, "field 'data.md5': 'ABC' must be an MD5 digest"),
    ({"url": "https://host/B.tsv", "md5": "a" * 32, "hub": {"repo": "o/n"}}, "field 'data.hub': give url (and md5), or hub"),
    ({"hub": {"repo": "no-owner"}}, "field 'data.hub.repo': 'no-owner' must be a dataset repository id"),
    ({"hub": {"repo": "o/n", "rev": "x"}}, "field 'data.hub.rev': unknown field; allowed fields: repo, revision"),
])
def test_a_bad_data_source_names_its_field(tmp_path: Path, data: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _spec(tmp_path, data)


def test_catalogue_records_of_either_peer_become_sources() -> None:
    vlmevalkit = {"name": "MMBench_DEV_EN_V11", "file": "MMBench_DEV_EN_V11.tsv", "md5": "30c05be8f2f347a50be25aa067248184",
                  "url": "https://opencompass.openxlab.space/utils/benchmarks/MMBench/MMBench_DEV_EN_V11.tsv"}
    assert source_from_record(vlmevalkit) == FileSource("MMBench_DEV_EN_V11", vlmevalkit["url"], vlmevalkit["md5"],
                                                        "MMBench_DEV_EN_V11.tsv")
    unchecked = source_from_record({**vlmevalkit, "md5": None})
    assert isinstance(unchecked, FileSource) and unchecked.md5 is None
    lmms_eval = {"name": "ai2d", "dataset_path": "lmms-lab/ai2d", "revision": None, "split": "test"}
    assert source_from_record(lmms_eval) == HubSource("ai2d", "lmms-lab/ai2d", "main", "test")
    with pytest.raises(ValueError, match="needs a url"):
        source_from_record({"name": "x"})
    with pytest.raises(ValueError, match="not an MD5 digest"):
        source_from_record({**vlmevalkit, "md5": "xyz"})


def test_the_data_cache_layout(tmp_path: Path) -> None:
    cache = DataCache(folder=tmp_path, offline=False)
    assert cache.location(FileSource("m", "https://h/M.tsv", "b" * 32, "M.tsv")) == tmp_path / "files" / ("b" * 32)
    assert cache.location(FileSource("m", "https://h/M.tsv", None, "M.tsv")).parent == tmp_path / "files"
    assert cache.location(HubSource("m", "Lin-Chen/MMStar", "main", "val")) == (
        tmp_path / "hub" / "Lin-Chen__MMStar" / "main" / "split-val")
    assert cache.location(HubSource("m", "o/n", "refs/pr/1")) == tmp_path / "hub" / "o__n" / "refs_pr_1" / "all-splits"


def test_the_data_cache_folder_and_offline_come_from_the_environment(tmp_path: Path) -> None:
    assert default_folder({"PYTEST_MLLM_DATA_CACHE": str(tmp_path), "XDG_CACHE_HOME": "/x"}) == tmp_path
    assert default_folder({"XDG_CACHE_HOME": "/x"}) == Path("/x/pytest-mllm/data")
    assert default_folder({}) == Path.home() / ".cache" / "pytest-mllm" / "data"
    assert [offline_by_environment({"HF_HUB_OFFLINE": v}) for v in ("1", "true", "YES", "on", "0", "", "no")] == [
        True, True, True, True, False, False, False]


def test_a_splits_files_are_told_by_their_names() -> None:
    repo = ["README.md", "data/val-00000-of-00001.parquet", "data/test-00000-of-00002.parquet",
            "data/test-00001-of-00002.parquet", "Art/validation-00000-of-00001.parquet", "Art/dev-00000-of-00001.parquet",
            "test/0.parquet", "testdev.parquet", "test_extra/x.parquet", ".gitattributes"]
    assert split_files(repo, "val") == {"README.md", "data/val-00000-of-00001.parquet"}
    assert split_files(repo, "test") == {"README.md", "data/test-00000-of-00002.parquet",
                                         "data/test-00001-of-00002.parquet", "test/0.parquet"}
    assert split_files(repo, "validation") == {"README.md", "Art/validation-00000-of-00001.parquet"}
    assert split_files(repo, "image") == set(repo)  # no name shows the split (a card maps it): every file
    assert split_files(repo, None) == set(repo)


def test_a_benchmark_answers_to_its_peers_names() -> None:
    mmbench = load_spec(find_spec("mmbench"))
    assert mmbench.names == ("mmbench", "mmbench_en_dev", "MMBench_DEV_EN")
    assert mmbench.env_vars == ("MLLM_DATA_MMBENCH", "MLLM_DATA_MMBENCH_EN_DEV", "MLLM_DATA_MMBENCH_DEV_EN")
    assert load_spec(find_spec("ai2d_parquet")).names == ("ai2d_parquet",)  # lmms-eval's "ai2d" is the TSV spec's name
    assert mmbench.data_override({"MMBench_DEV_EN": "/a", "": "/b"}) == "/a"
    assert mmbench.data_override({"pope": "/a", "": "/b"}) == "/b"


def test_a_benchmark_is_fetched_only_when_no_data_root_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    mmbench = load_spec(find_spec("mmbench"))
    for variable in mmbench.env_vars:
        monkeypatch.delenv(variable, raising=False)
    assert mmbench.needs_fetch(None) and not mmbench.needs_fetch("/data")
    monkeypatch.setenv("MLLM_DATA_MMBENCH_EN_DEV", "/data")
    assert not mmbench.needs_fetch(None)
    assert not load_spec(find_spec("mme")).needs_fetch(None)  # no released download: --mllm-data it is
