"""A Python package's source read as syntax trees, never imported: its modules, classes, imports and the
values of constant expressions (dict, list and string literals, names bound to them, f-strings of them,
`{**a, **b}`, `dict(...)`, and `X.update(Y)` statements)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Unresolved(Exception):
    """An expression whose value the source alone does not give (a call, a comprehension, …)."""


@dataclass
class ClassInfo:
    """One class as written: its module, bases (as names in its module), its body's constant assignments
    (`X.update(...)` applied in order) and the methods it defines."""

    name: str
    module: Module
    node: ast.ClassDef
    bases: list[str]
    assigned: dict[str, ast.expr] = field(default_factory=dict)
    updates: dict[str, list[ast.expr]] = field(default_factory=dict)
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return self.module.path, self.name


@dataclass
class Module:
    """One module: its path relative to the source root, its tree, top-level names and imports."""

    path: str
    tree: ast.Module
    assigned: dict[str, ast.expr] = field(default_factory=dict)
    updates: dict[str, list[ast.expr]] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str]] = field(default_factory=dict)  # local name → (module path, name)


def _update_target(statement: ast.stmt) -> tuple[str, ast.expr] | None:
    """`NAME.update(EXPR)` as (NAME, EXPR)."""
    if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute) and statement.value.func.attr == "update"
            and isinstance(statement.value.func.value, ast.Name) and len(statement.value.args) == 1):
        return statement.value.func.value.id, statement.value.args[0]
    return None


def _assignments(body: list[ast.stmt], assigned: dict[str, ast.expr], updates: dict[str, list[ast.expr]]) -> None:
    for statement in body:
        if isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    assigned[target.id] = statement.value
                    updates.pop(target.id, None)
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            assigned[statement.target.id] = statement.value
            updates.pop(statement.target.id, None)
        elif (update := _update_target(statement)) is not None:
            updates.setdefault(update[0], []).append(update[1])


class Source:
    """The modules of a source tree, read on demand (paths relative to `root`, "/"-separated)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._modules: dict[str, Module] = {}

    def module(self, path: str) -> Module:
        if path not in self._modules:
            tree = ast.parse((self.root / path).read_text(encoding="utf-8"), filename=path)
            module = Module(path, tree)
            _assignments(tree.body, module.assigned, module.updates)
            for statement in tree.body:
                if isinstance(statement, ast.ClassDef):
                    info = ClassInfo(statement.name, module, statement, [ast.unparse(b) for b in statement.bases])
                    _assignments(statement.body, info.assigned, info.updates)
                    info.methods = {f.name: f for f in statement.body if isinstance(f, ast.FunctionDef)}
                    module.classes[statement.name] = info
                elif isinstance(statement, ast.FunctionDef):
                    module.functions[statement.name] = statement
                elif isinstance(statement, ast.ImportFrom):
                    target = self._import_path(path, statement)
                    for alias in statement.names:
                        if target is not None:
                            module.imports[alias.asname or alias.name] = (target, alias.name)
            self._modules[path] = module
        return self._modules[path]

    def _import_path(self, importer: str, statement: ast.ImportFrom) -> str | None:
        """The module file a `from X import …` names, when it lies in this tree."""
        parts = importer.split("/")[:-1]
        if statement.level:
            parts = parts[:len(parts) - statement.level + 1]
        elif statement.module:
            parts = []
        dotted = (statement.module or "").split(".") if statement.module else []
        base = "/".join([*parts, *dotted])
        for candidate in (f"{base}.py", f"{base}/__init__.py"):
            if (self.root / candidate).is_file():
                return candidate
        return None

    def resolve_class(self, module: Module, name: str) -> ClassInfo | None:
        """The class `name` as seen from `module`: defined there or imported (through re-exports)."""
        seen: set[tuple[str, str]] = set()
        while (module.path, name) not in seen:
            seen.add((module.path, name))
            if name in module.classes:
                return module.classes[name]
            if name not in module.imports:
                return None
            path, name = module.imports[name]
            module = self.module(path)
        return None

    def resolve_name(self, module: Module, name: str) -> tuple[Module, ast.expr, list[ast.expr]] | None:
        """A module-level constant `name` as seen from `module` (through imports): where it is bound, its
        expression and the `.update(...)` arguments applied to it after."""
        seen: set[tuple[str, str]] = set()
        while (module.path, name) not in seen:
            seen.add((module.path, name))
            if name in module.assigned:
                return module, module.assigned[name], module.updates.get(name, [])
            if name not in module.imports:
                return None
            path, name = module.imports[name]
            module = self.module(path)
        return None

    def mro(self, info: ClassInfo) -> list[ClassInfo]:
        """The class and its bases in Python's method resolution order (C3), as far as the tree holds them."""
        bases = [b for b in (self.resolve_class(info.module, name) for name in info.bases) if b is not None]
        sequences = [self.mro(b) for b in bases] + [bases]
        order = [info]
        while any(sequences):
            for sequence in sequences:
                if not sequence:
                    continue
                head = sequence[0]
                if not any(head.key in [c.key for c in s[1:]] for s in sequences):
                    break
            else:
                raise Unresolved(f"no consistent method resolution order for {info.name}")
            order.append(head)
            sequences = [s[1:] if s and s[0].key == head.key else s for s in sequences]
        return order


@dataclass
class ClassRef:
    """A class as a value in an expression (`cls`, or a class named in the source): its MRO."""

    mro: list[ClassInfo]


class Evaluator:
    """Values of constant expressions in a module or a class body."""

    def __init__(self, source: Source) -> None:
        self.source = source

    def value(self, node: ast.expr, module: Module, scope: dict[str, Any] | None = None) -> Any:
        scope = scope or {}
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.value(e, module, scope) for e in node.elts]
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for key, item in zip(node.keys, node.values):
                if key is None:
                    out.update(self.value(item, module, scope))
                else:
                    out[self.value(key, module, scope)] = self.value(item, module, scope)
            return out
        if isinstance(node, ast.JoinedStr):
            return "".join(self._formatted(part, module, scope) for part in node.values)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self.value(node.left, module, scope) + self.value(node.right, module, scope)
        if isinstance(node, ast.Name):
            if node.id in scope:
                return scope[node.id]
            found = self.source.resolve_name(module, node.id)
            if found is None:
                info = self.source.resolve_class(module, node.id)
                if info is not None:
                    return ClassRef(self.source.mro(info))
                raise Unresolved(f"name {node.id!r} is not a constant of {module.path}")
            where, expression, updates = found
            result = self.value(expression, where)
            for update in updates:
                result = {**result, **self.value(update, where)}
            return result
        if isinstance(node, ast.Attribute):
            owner = self.value(node.value, module, scope)
            if isinstance(owner, ClassRef):
                found = self.class_attribute(owner.mro, node.attr)
                if found is None:
                    raise Unresolved(f"class {owner.mro[0].name} has no attribute {node.attr}")
                return found[0]
            raise Unresolved(f"{ast.unparse(node)[:80]!r} in {module.path} is not a constant expression")
        if isinstance(node, ast.Call) and not node.keywords and isinstance(node.func, ast.Name):
            if node.func.id in ("list", "sorted") and len(node.args) == 1:
                items = self.value(node.args[0], module, scope)
                return sorted(items) if node.func.id == "sorted" else list(items)
        if (isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Name) and node.func.id == "dict"):
            return {k.arg: self.value(k.value, module, scope) for k in node.keywords if k.arg}
        if (isinstance(node, ast.Call) and not node.args and not node.keywords and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("keys", "values", "items")):
            mapping = self.value(node.func.value, module, scope)
            return list(getattr(mapping, node.func.attr)())
        if isinstance(node, (ast.ListComp, ast.DictComp)) and len(node.generators) == 1:
            return self._comprehension(node, module, scope)
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left = self.value(node.left, module, scope)
            right = self.value(node.comparators[0], module, scope)
            operations = {ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
                          ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}
            if type(node.ops[0]) in operations:
                return operations[type(node.ops[0])](left, right)
        if isinstance(node, ast.BoolOp):
            values = [self.value(v, module, scope) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not self.value(node.operand, module, scope)
        raise Unresolved(f"{ast.unparse(node)[:80]!r} in {module.path} is not a constant expression")

    def _comprehension(self, node: ast.ListComp | ast.DictComp, module: Module, scope: dict[str, Any]) -> Any:
        generator = node.generators[0]
        items = self.value(generator.iter, module, scope)
        out: list[Any] = []
        for item in items:
            inner = dict(scope)
            self._bind(generator.target, item, inner)
            if all(self.value(condition, module, inner) for condition in generator.ifs):
                if isinstance(node, ast.DictComp):
                    out.append((self.value(node.key, module, inner), self.value(node.value, module, inner)))
                else:
                    out.append(self.value(node.elt, module, inner))
        return dict(out) if isinstance(node, ast.DictComp) else out

    def _bind(self, target: ast.expr, item: Any, scope: dict[str, Any]) -> None:
        if isinstance(target, ast.Name):
            scope[target.id] = item
        elif isinstance(target, ast.Tuple) and len(target.elts) == len(item):
            for part, value in zip(target.elts, item):
                self._bind(part, value, scope)
        else:
            raise Unresolved(f"comprehension target {ast.unparse(target)!r}")

    def returned(self, function: ast.FunctionDef, mro: list[ClassInfo]) -> Any:
        """The value a classmethod returns when its body is one `return EXPR` of constants (`cls` is the class)."""
        body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            raise Unresolved(f"{function.name} of {mro[0].name} is not one return of a constant expression")
        return self.value(body[0].value, mro[0].module, {"cls": ClassRef(mro)})

    def _formatted(self, part: ast.expr, module: Module, scope: dict[str, Any]) -> str:
        if isinstance(part, ast.FormattedValue):
            return str(self.value(part.value, module, scope))
        return str(self.value(part, module, scope))

    def class_attribute(self, mro: list[ClassInfo], name: str) -> tuple[Any, ClassInfo] | None:
        """A class attribute's value through the MRO (its class-body `.update(...)` calls applied), and the
        class that binds it; None when no class of the MRO does."""
        for info in mro:
            if name in info.assigned:
                scope: dict[str, Any] = {}
                for other in info.assigned:  # names bound earlier in the same class body
                    if other != name:
                        try:
                            scope[other] = self.value(info.assigned[other], info.module)
                        except Unresolved:
                            pass
                result = self.value(info.assigned[name], info.module, scope)
                for update in info.updates.get(name, []):
                    result = {**result, **self.value(update, info.module, scope)}
                return result, info
        return None
