"""The registries: names known from the source without importing, a module imported when one of its
entries is first asked for, one owner per name, and a module executed again replacing its entries."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from pytest_mllm.registry import Registry, UnknownName


def test_names_come_from_the_source_and_a_module_is_imported_on_first_use() -> None:
    code = ("import sys; from pytest_mllm.engine.spec import LOADERS; "
            "names = LOADERS.names(); before = 'pytest_mllm.loaders.tsv' in sys.modules; "
            "LOADERS.get('tsv'); print('tsv' in names, before, 'pytest_mllm.loaders.tsv' in sys.modules, "
            "'pytest_mllm.loaders.parquet' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "True", "False"]


def test_an_unknown_name_is_told_with_the_closest_and_every_known_one() -> None:
    from pytest_mllm.engine.spec import LOADERS

    with pytest.raises(UnknownName, match=r"unknown loader 'tvs'; did you mean 'tsv'\? \(known: .*jsonl, .*mme, "):
        LOADERS.get("tvs")


def test_a_name_has_one_owner_and_a_module_run_again_replaces_its_entries() -> None:
    registry: Registry[str] = Registry("thing", "thing")
    module = types.ModuleType("plugin_things")
    sys.modules["plugin_things"] = module
    try:
        registry.add("a", "first", "plugin_things")
        with pytest.raises(ValueError, match="thing 'a' is already registered"):
            registry.add("a", "again", "plugin_things")
        with pytest.raises(ValueError, match=r"already registered \(by plugin_things\)"):
            registry.add("a", "other", "elsewhere")
        sys.modules["plugin_things"] = types.ModuleType("plugin_things")  # imported afresh (pytester does)
        registry.add("a", "reloaded", "plugin_things")
        assert registry.get("a") == "reloaded" and registry.names() == ["a"]
        assert registry.registered_by("plugin_things") == {"a": "reloaded"}
        registry.remove("a")
        assert "a" not in registry and registry.entries() == {}
    finally:
        del sys.modules["plugin_things"]


def test_the_index_follows_every_entry_added_and_removed() -> None:
    from pytest_mllm.engine.spec import LOADERS

    package = LOADERS.index()
    assert LOADERS.index() is package and "tsv" in LOADERS  # kept while no entry changes
    LOADERS.add("run-time-loader", LOADERS.get("tsv"), "a_plugin")
    try:
        assert list(LOADERS.index()) == [*package, "run-time-loader"] and "run-time-loader" in LOADERS
    finally:
        LOADERS.remove("run-time-loader")
    assert LOADERS.index() == package and "run-time-loader" not in LOADERS


def test_a_package_entry_cannot_be_claimed_by_another_module() -> None:
    from pytest_mllm.scoring.metrics import METRICS

    with pytest.raises(ValueError, match=r"metric 'pope' is already registered \(by pytest_mllm.scoring.pope\)"):
        METRICS.add("pope", METRICS.get("mme_score"), "someone_else")
    with pytest.raises(ValueError, match="was not registered at run time"):
        METRICS.remove("pope")


def test_an_entry_whose_module_left_sys_modules_is_taken_from_the_module_imported_again() -> None:
    """pytester's in-process runs drop the modules a run imported: the next run's entries and classes are those
    of the modules it imports afresh, not the last run's (whose objects its `isinstance` checks would refuse)."""
    code = ("import sys; from pytest_mllm.engine.spec import LOADERS; "
            "first = LOADERS.get('shapes'); del sys.modules['pytest_mllm.loaders.shapes']; "
            "again = LOADERS.get('shapes'); print(first is again, again is LOADERS.entries()['shapes'], "
            "again.load.__module__ in sys.modules, again.load.__globals__ is "
            "vars(sys.modules['pytest_mllm.loaders.shapes']))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.split() == ["False", "True", "True", "True"], out.stderr[-2000:]
