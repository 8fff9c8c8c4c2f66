"""Log capture for sample tests: the records that reach the root logger, at a fraction of pytest's cost.

Once torch is imported, pytest's log capture costs a sample test about 0.6 ms, a fifth of a whole
answer from the tiny model: in each of the three phases it attaches two handlers to the root
logger and to every logger that does not propagate (torch makes 57), walking all ~400 loggers to
find them, and detaches them afterwards. So sample tests call their setup, call and teardown
hooks without the logging plugin (a hook relay that leaves it out), and their call phase attaches
one handler to the root logger instead: what a model's libraries log still appears under
"Captured log call" when a sample fails (transformers' own logger, which does not propagate,
writes to stderr, which pytest captures too). `--log-file` is unchanged: pytest attaches it
once for the whole run. With `--log-level` or live logging (`--log-cli-level`, or the
`log_level` / `log_cli` ini) asked for, sample tests capture logs exactly as every other test
does. Other tests are not touched.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

PHASE_HOOKS = ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown")
LOGGING_PLUGIN = "logging-plugin"  # the name pytest registers its LoggingPlugin under


class SampleHookRelay:
    """The hook relay pytest gives tests at one path, with `left_out` dropped from the phase hooks."""

    def __init__(self, relay: Any, pluginmanager: pytest.PytestPluginManager, left_out: object) -> None:
        self._relay = relay
        for name in PHASE_HOOKS:
            active = {impl.plugin for impl in getattr(relay, name).get_hookimpls()}
            # conftests pytest leaves out at this path stay out; the logging plugin leaves too
            dropped = [impl.plugin for impl in getattr(pluginmanager.hook, name).get_hookimpls()
                       if impl.plugin not in active or impl.plugin is left_out]
            setattr(self, name, pluginmanager.subset_hook_caller(name, remove_plugins=dropped))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._relay, name)


class _Lines(logging.Handler):
    """Formats each record it is handed into a line, until taken."""

    def __init__(self, formatter: logging.Formatter) -> None:
        super().__init__()
        self.setFormatter(formatter)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))

    def take(self) -> list[str]:
        lines, self.lines = self.lines, []
        return lines


class SampleLogCapture:
    """The hooks sample tests call (one relay per spec file) and the capture around their call phase."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._relays: dict[Path, Any] = {}

    @cached_property
    def _root_handler(self) -> _Lines | None:
        """The one root handler sample tests capture with; None where pytest's own capture stays on."""
        config = self.config
        if config.pluginmanager.get_plugin(LOGGING_PLUGIN) is None:  # `-p no:logging`: nothing to replace
            return None
        asked = (config.getoption("log_level") is not None or config.getini("log_level")
                 or config.getoption("log_cli_level") is not None or config.getini("log_cli"))
        if asked:  # the user wants logs: pytest's capture, live sections and all
            return None
        formatter = logging.Formatter(config.getoption("log_format") or config.getini("log_format"),
                                      config.getoption("log_date_format") or config.getini("log_date_format"))
        return _Lines(formatter)

    def hook_relay(self, item: pytest.Item) -> Any:
        relay = self._relays.get(item.path)
        if relay is None:
            relay = item.session.gethookproxy(item.path)
            if self._root_handler is not None:
                plugins = self.config.pluginmanager
                relay = SampleHookRelay(relay, plugins, plugins.get_plugin(LOGGING_PLUGIN))
            self._relays[item.path] = relay
        return relay

    @contextmanager
    def call_phase(self, item: pytest.Item) -> Iterator[None]:
        """Around a sample test's call: the records reaching the root logger go into its report."""
        handler = self._root_handler
        if handler is None:
            yield
            return
        root = logging.getLogger()
        root.addHandler(handler)
        try:
            yield
        finally:
            root.removeHandler(handler)
            lines = handler.take()
            if lines:
                item.add_report_section("call", "log", "\n".join(lines))
