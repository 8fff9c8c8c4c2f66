"""YAML text read safely: `yaml.safe_load`, with two limits a hostile file could otherwise break.

- Aliases: a few hundred bytes of anchors and aliases (`&a [*b, *b, …]`, "billion laughs") expand
  to billions of items once any code walks the value. The composed document's expanded size is
  counted (each shared node once, so counting is cheap) and a document over `MAX_ITEMS` is refused.
- Nesting: a document nested more than `MAX_DEPTH` levels deep is refused as it is composed, long
  before Python's stack would overflow; so is a number Python will not convert (thousands of digits).

Both problems are `yaml.YAMLError`s, which every reader already reports as an invalid file.
"""

from __future__ import annotations

import functools
from typing import Any

MAX_ITEMS = 1_000_000  # scalars, sequences and mappings of the document once its aliases are expanded
MAX_DEPTH = 200  # levels of nesting (a spec needs a handful)


def load_yaml(text: str) -> Any:
    """The value of a YAML document, as `yaml.safe_load` reads it, within the limits above."""
    import yaml

    loader = _loader_class()(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = _expanded_size(node)
        if size > MAX_ITEMS:
            raise yaml.YAMLError(f"its aliases expand to {size:,} values, more than the {MAX_ITEMS:,} allowed "
                                 "(an alias bomb?); write the values out")
        return loader.construct_document(node)
    except RecursionError:  # nesting inside a scalar's tag or a key, deeper than the composer counts
        raise yaml.YAMLError(f"it is nested more than {MAX_DEPTH} levels deep; flatten it") from None
    except ValueError as exc:  # a scalar Python will not convert, such as an integer of thousands of digits
        raise yaml.YAMLError(f"a value cannot be read ({exc}); quote it") from None
    finally:
        loader.dispose()


@functools.cache
def _loader_class() -> type:
    """yaml.SafeLoader counting how deep the node being composed is: past MAX_DEPTH it stops, long before
    Python's stack would."""
    import yaml

    class DepthLimitedLoader(yaml.SafeLoader):
        _depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self._depth += 1
            try:
                if self._depth > MAX_DEPTH:
                    raise yaml.YAMLError(f"it is nested more than {MAX_DEPTH} levels deep; flatten it")
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

    return DepthLimitedLoader


def _expanded_size(root: Any) -> int:
    """How many nodes `root` stands for once every alias is expanded; each distinct node is counted once,
    without recursion (a deep document is not walked on the stack)."""
    import yaml

    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # entered, their children not yet counted
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        if not children_done and id(node) in open_nodes:
            raise yaml.YAMLError("an alias refers to a value that contains it (a value inside itself); "
                                 "write the values out")
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            sizes[id(node)] = 1
            continue
        if children_done:
            sizes[id(node)] = 1 + sum(sizes.get(id(child), 0) for child in children)
            open_nodes.discard(id(node))
            continue
        open_nodes.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in children if id(child) not in sizes)
    return sizes[id(root)]
