"""Parse YAML safely: the one place that imports PyYAML, so a scan whose catalogue comes from the cache
(``cache.py``) never imports it (about 15 ms of a scan's start-up, most of it PyYAML compiling its
regexes).

``parse_yaml`` loads safe types only, with libyaml's C loader where PyYAML was built with it, refuses a
key given twice and a document whose aliases expand too far.
"""

from __future__ import annotations

from typing import Any, Dict

import yaml

from ..errors import ConfigError
from . import schema
from .schema import show

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _BoundedLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """``yaml.safe_load`` that refuses a key given twice and a document that aliases expand too far.

    YAML would silently keep the last of two equal keys. Aliases share one object, so loading a
    "billion laughs" is cheap, but anything that walks or prints the result is not: its size with
    aliases expanded is checked on the node graph before any Python object is built.
    """

    def construct_document(self, node: Any) -> Any:
        _check_expanded_size(node)
        return super().construct_document(node)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen = set()
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:  # "<<: *base": the base class merges; a key may override it
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key; the base class reports it
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {show(key)}", key_node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


class _TooBig(yaml.YAMLError):
    pass


def _check_expanded_size(root: Any) -> None:
    """Raise ``_TooBig`` when the node graph, aliases expanded, exceeds ``schema.MAX_YAML_SIZE``.

    Sizes are computed once per node (aliases point at the same node object), without recursion.
    """
    sizes: Dict[int, int] = {}
    limit = schema.MAX_YAML_SIZE
    stack = [(root, False)]
    open_nodes = set()
    while stack:
        node, done = stack.pop()
        ident = id(node)
        if ident in sizes:
            continue
        if isinstance(node, yaml.ScalarNode):
            sizes[ident] = 1 + len(node.value)
            continue
        children = node.value
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        if not done:
            if ident in open_nodes:
                raise _TooBig("an alias refers to the collection that holds it")
            open_nodes.add(ident)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        open_nodes.discard(ident)
        total = 1
        for child in children:
            if id(child) not in sizes:
                raise _TooBig("an alias refers to the collection that holds it")
            total += sizes[id(child)]
            if total > limit:
                raise _TooBig(
                    f"more than {limit:,} nodes and characters once its aliases (*name) are expanded"
                )
        sizes[ident] = total


def parse_yaml(text: str, source: str) -> Any:
    """The data in YAML ``text`` (safe types only); raises ``ConfigError`` naming ``source`` and the line."""
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except _TooBig as err:
        raise ConfigError(source, "document", f"too big: {err}") from None
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f"line {mark.line + 1}" if mark is not None else "document"
        problem = " ".join(" ".join(str(p).split()) for p in (err.context, err.problem) if p)
        raise ConfigError(source, where, f"invalid YAML: {schema.problem_text(problem or err)}") from None
    except (yaml.YAMLError, ValueError, OverflowError, RecursionError, TypeError, MemoryError) as err:
        # ValueError: an impossible date such as 2024-13-45; RecursionError: absurd nesting.
        raise ConfigError(source, "document", f"invalid YAML: {schema.problem_text(err)}") from None
