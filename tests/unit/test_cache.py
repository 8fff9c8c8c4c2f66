"""The response cache: keys cover everything that changes an answer; bad files never crash."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pytest_mllm.engine.cache import CacheWarning, ResponseCache, cache_key
from pytest_mllm.sample import ImageRef, Sample

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def sample(image: str = "images/red.png", question: str = "Is it red?") -> Sample:
    ref = ImageRef("path", image, root=FIXTURES / "jsonl")
    return Sample(id="t::q1", benchmark="b", task="t", question=question, answer="yes", images=(ref,))


def test_key_changes_with_model_settings_prompt_and_image_content(tmp_path: Path) -> None:
    base = cache_key("m@sha256:1", {"max_new_tokens": 8}, "Is it red?", sample())
    assert base == cache_key("m@sha256:1", {"max_new_tokens": 8}, "Is it red?", sample())
    assert base != cache_key("m@sha256:2", {"max_new_tokens": 8}, "Is it red?", sample())
    assert base != cache_key("m@sha256:1", {"max_new_tokens": 9}, "Is it red?", sample())
    assert base != cache_key("m@sha256:1", {"max_new_tokens": 8}, "Is it blue?", sample())
    assert base != cache_key("m@sha256:1", {"max_new_tokens": 8}, "Is it red?", sample("images/blue.png"))
    # same content under another name: same key (content hash, not path)
    (tmp_path / "copy.png").write_bytes((FIXTURES / "jsonl" / "images" / "red.png").read_bytes())
    moved = Sample(id="t::q1", benchmark="b", task="t", question="Is it red?", answer="yes",
                   images=(ImageRef("path", "copy.png", root=tmp_path),))
    assert base == cache_key("m@sha256:1", {"max_new_tokens": 8}, "Is it red?", moved)


def test_round_trip_and_refresh(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite3")
    cache.put_many({"k1": "Yes", "k2": "No"}, "m")
    assert cache.get_many(["k1", "k2", "k3"]) == {"k1": "Yes", "k2": "No"}
    cache.close()
    refreshing = ResponseCache(tmp_path / "c.sqlite3", read=False)
    assert refreshing.get_many(["k1"]) == {} and len(refreshing) == 2


def test_corrupt_file_is_set_aside_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.warns(CacheWarning, match="unusable"):
        cache = ResponseCache(path)
    cache.put_many({"k": "v"}, "m")
    assert cache.get_many(["k"]) == {"k": "v"}
    assert len(list(tmp_path.glob("c.sqlite3.unusable-*"))) == 1


def test_older_schema_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE responses (key TEXT, blob BLOB)")
    db.execute("PRAGMA user_version=0")
    db.commit()
    db.close()
    with pytest.warns(CacheWarning, match="schema version 0"):
        cache = ResponseCache(path)
    assert len(cache) == 0


def test_generation_time_is_kept_with_the_answer(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite3")
    cache.put_many({"k1": "Yes", "k2": "No"}, "m", {"k1": 0.25})
    assert cache.get_entries(["k1", "k2", "k3"]) == {"k1": ("Yes", 0.25), "k2": ("No", None)}


def test_a_version_1_cache_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, response TEXT NOT NULL, model TEXT NOT NULL, "
                "created REAL NOT NULL)")
    old.execute("INSERT INTO responses VALUES ('k', 'Yes', 'm', 0)")
    old.execute("PRAGMA user_version=1")
    old.commit()
    old.close()
    cache = ResponseCache(path)
    assert cache.get_many(["k"]) == {"k": "Yes"} and cache.get_entries(["k"]) == {"k": ("Yes", None)}
    cache.put_many({"k2": "No"}, "m", {"k2": 1.5})
    assert cache.get_entries(["k2"]) == {"k2": ("No", 1.5)}
