"""Registries: named entries of one kind (loaders, answer parsers, metrics, model kinds, sections, the
catalogue's templates), each registered where it is defined by a decorator at a module's top level, or,
for an entry that is an object rather than a function, by a declaring call there, such as

    @metric("pope", requires=("pope_undefined",), keys=(...))
    def scope_pope(scope: ScopeView) -> Scope: ...

    register_section("pope", Section(title="POPE", metrics=("pope",), columns=(...)))

Generic code asks a registry for a name and never imports the module that defines it. The registry
knows that module without importing anything: its index is read from the package's source, every
top-level line `@<decorator>("<name>"` or `<declaring call>("<name>"` (`declarations()`), and the module
is imported when one of its entries is first asked for. Adding an entry is one module; the architecture test reads the same index
to check that each entry's module registers exactly what the index says (no import hidden in a string).
Entries registered at run time (a plugin's, a test's) join the index after the package's own.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Generic, TypeVar

PACKAGE = Path(__file__).resolve().parent
_DECLARATION = re.compile(r"""^@?(\w+)\(\s*["']([^"'\s]+)["']""", re.MULTILINE)

E = TypeVar("E")


@dataclass(frozen=True)
class Declaration:
    """One registration found in the package's source: `@decorator("name"` (or a declaring call,
    `register_section("name"`) at the top level of `module`."""

    decorator: str
    name: str
    module: str


@functools.cache
def declarations() -> tuple[Declaration, ...]:
    """Every top-level `@decorator("name"` or `call("name"` line of the package's modules, by module name,
    then in source order (a registry keeps those of its own decorators and calls)."""
    found: list[Declaration] = []
    for module, path in sorted(_sources(str(PACKAGE), PACKAGE.name)):
        with open(path, encoding="utf-8") as source:
            found.extend(Declaration(decorator, name, module) for decorator, name in _DECLARATION.findall(source.read()))
    return tuple(found)


def _sources(folder: str, package: str) -> list[tuple[str, str]]:
    """(module name, path) of each .py file of a package folder and of its subpackages (folders without
    `__init__.py`, such as the shipped model weights, are not walked)."""
    found: list[tuple[str, str]] = []
    for entry in os.scandir(folder):
        if entry.name.endswith(".py") and entry.is_file():
            stem = entry.name[:-3]
            found.append((package if stem == "__init__" else f"{package}.{stem}", entry.path))
        elif entry.is_dir() and os.path.isfile(os.path.join(entry.path, "__init__.py")):
            found.extend(_sources(entry.path, f"{package}.{entry.name}"))
    return found


class UnknownName(KeyError):
    """A name no entry of a registry has; the message lists the known ones."""

    def __str__(self) -> str:
        return str(self.args[0])


class Registry(Generic[E]):
    """The entries of one kind, by name: registered by their modules' decorators, imported on first use."""

    def __init__(self, kind: str, *decorators: str) -> None:
        self.kind = kind  # what an entry is, in messages ("loader", "answer parser", "metric", "model kind")
        self.decorators = decorators  # the decorators that register an entry here
        self._entries: dict[str, E] = {}
        self._modules: dict[str, str] = {}  # name → the module that registered it
        self._loaded: dict[str, ModuleType | None] = {}  # name → that module's object when it did
        self.version = 0  # counts the entries added and removed: what was computed from them is stale when it moves
        self._every: tuple[int, dict[str, E]] | None = None
        self._package: dict[str, str] | None = None  # the package's own entries: its source does not change in a run
        self._index: tuple[int, dict[str, str]] | None = None

    def add(self, name: str, entry: E, module: str) -> None:
        """Register `entry` as `name`, defined in `module` (what the decorators call). A module executed
        again (reloaded, or imported afresh after its removal from `sys.modules`, as pytester's in-process
        runs do) replaces its entries; registering a name twice otherwise is an error. A module of the package
        is not checked against the index (which would read the source at the plugin's start): the
        architecture test holds every name declared once."""
        owner = self._modules.get(name)
        if owner is None and not module.startswith(PACKAGE.name + "."):
            owner = self._package_index().get(name)
        loaded = sys.modules.get(module)
        again = name in self._entries and owner == module and self._loaded[name] is not loaded
        if (name in self._entries and not again) or (owner is not None and owner != module):
            raise ValueError(f"{self.kind} {name!r} is already registered (by {owner})")
        self._entries[name] = entry
        self._modules[name] = module
        self._loaded[name] = loaded
        self.version += 1

    def declare(self, name: str, entry: E) -> E:
        """Register `entry` as `name` for a declaring call (`register_section("name", …)`, which calls this):
        defined in the module making that call."""
        self.add(name, entry, sys._getframe(2).f_globals["__name__"])
        return entry

    def remove(self, name: str) -> None:
        """Forget an entry registered at run time (a test's, once it is done)."""
        if name not in self._modules or name in self._package_index():
            raise ValueError(f"{self.kind} {name!r} was not registered at run time")
        del self._entries[name], self._modules[name], self._loaded[name]
        self.version += 1

    def _package_index(self) -> dict[str, str]:
        if self._package is None:
            self._package = {d.name: d.module for d in declarations() if d.decorator in self.decorators}
        return self._package

    def index(self) -> dict[str, str]:
        """name → the module defining it: the package's entries in order (modules by name, then source
        order), then those registered at run time. Nothing is imported; kept until an entry is added or
        removed, so do not change it."""
        if self._index is None or self._index[0] != self.version:
            package = self._package_index()
            extra = {name: module for name, module in self._modules.items() if name not in package}
            self._index = (self.version, {**package, **extra})
        return self._index[1]

    def names(self) -> list[str]:
        return list(self.index())

    def __contains__(self, name: object) -> bool:
        return name in self._entries or name in self.index()

    def get(self, name: str) -> E:
        """The entry registered as `name`, its module imported if need be; UnknownName lists the known names."""
        if name not in self._entries or self._stale(name):
            module = self.index().get(name)
            if module is None:
                raise UnknownName(self.unknown(name))
            importlib.import_module(module)  # its decorator registers the entry
            if name not in self._entries or self._stale(name):
                raise LookupError(f"{module} declares {self.kind} {name!r} but did not register it")
        return self._entries[name]

    def _stale(self, name: str) -> bool:
        """Whether the package module that registered `name` has left `sys.modules` since (pytester's in-process
        runs drop the modules a run imported): its entry would hand out objects of classes the package's
        modules, imported afresh, no longer have."""
        module = self._modules[name]
        return module.startswith(PACKAGE.name + ".") and sys.modules.get(module) is not self._loaded[name]

    def entries(self) -> dict[str, E]:
        """Every entry, in index order (each defining module imported); kept until an entry is added or
        removed, so do not change it."""
        if self._every is None or self._every[0] != self.version or any(map(self._stale, self._every[1])):
            every = {name: self.get(name) for name in self.names()}
            self._every = (self.version, every)
        return self._every[1]

    def loaded(self) -> dict[str, E]:
        """The entries registered so far, in the order they were; nothing is imported."""
        return dict(self._entries)

    def registered_by(self, module: str) -> dict[str, E]:
        """The entries `module` has registered so far, in the order it did."""
        return {name: self._entries[name] for name, by in self._modules.items() if by == module}

    def unknown(self, name: str) -> str:
        """The message for a name no entry has: the closest known name, then all of them."""
        names = self.names()
        close = difflib.get_close_matches(name, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"unknown {self.kind} {name!r}{hint} (known: {', '.join(sorted(names))})"
