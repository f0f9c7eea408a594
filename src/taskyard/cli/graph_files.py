"""Reading graph files (YAML or JSON) for ``taskyard graph submit|add-tasks``: a key or
label given twice is an error, where loaders would keep the last one silently. Imported
when such a command runs (YAML takes time to load)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import click
import yaml

from taskyard.core.limits import too_deep
from taskyard.model.errors import InvalidInput


class _Mapping(dict[Any, Any]):
    """A mapping read from a graph file, with the keys it gave more than once.

    Loaders keep the last of two equal keys without a word, which would hide a
    duplicate label; the duplicates are kept here and reported by
    :func:`_check_duplicates`, which knows whether a key is a label or a task field.
    """

    __slots__ = ("duplicates",)

    def __init__(self, pairs: list[tuple[Any, Any]],
                 duplicates: list[tuple[Any, int | None]]) -> None:
        super().__init__(pairs)
        self.duplicates = duplicates


def _from_pairs(pairs: list[tuple[Any, Any]]) -> _Mapping:
    """``object_pairs_hook`` for JSON (which gives no line numbers)."""
    seen: set[Any] = set()
    duplicates: list[tuple[Any, int | None]] = []
    for key, _ in pairs:
        if key in seen:
            duplicates.append((key, None))
        seen.add(key)
    return _Mapping(pairs, duplicates)


class _GraphLoader(yaml.SafeLoader):
    """A safe YAML loader whose mappings remember their duplicate keys and lines."""


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> _Mapping:
    seen: set[Any] = set()
    duplicates: list[tuple[Any, int | None]] = []
    # Only the keys written in this mapping count: keys a `<<` merge brings in may be
    # overridden, as YAML intends.
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG:
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            if key in seen:
                duplicates.append((key, key_node.start_mark.line + 1))
            seen.add(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found unhashable key",
                key_node.start_mark) from None
    loader.flatten_mapping(node)
    return _Mapping(loader.construct_pairs(node, deep=True), duplicates)


_GraphLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _nested_mappings(value: Any) -> Iterator[_Mapping]:
    """Every mapping in ``value``, itself included, outermost first (no recursion). A
    part the YAML repeats by alias is looked at once: its keys were read once, and a
    file of aliases of aliases would otherwise take exponential time."""
    stack = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            if isinstance(item, _Mapping):
                yield item
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))


def _check_duplicates(doc: Any, path: Path) -> None:
    """A key given twice fails the file (exit 1), naming the label it concerns."""

    def fail(what: str, key: Any, line: int | None) -> NoReturn:
        at = "" if line is None else f" (line {line})"
        raise click.ClickException(f"{path}: duplicate {what} {key!r}{at}")

    if not isinstance(doc, _Mapping):
        return
    for key, line in doc.duplicates:
        fail("key", key, line)
    tasks = doc.get("tasks")
    for key, line in tasks.duplicates if isinstance(tasks, _Mapping) else ():
        fail("label", key, line)
    for key, value in doc.items():
        if key == "tasks" and isinstance(value, dict):
            for label, body in value.items():
                for mapping in _nested_mappings(body):
                    for dup, line in mapping.duplicates:
                        fail(f"key {dup!r} in task", label, line)
            continue
        for mapping in _nested_mappings(value):
            for dup, line in mapping.duplicates:
                fail(f"key {dup!r} in", key, line)


def load(path: Path) -> Any:
    """YAML or JSON; a label or key given twice fails naming it (a validation error,
    exit 1); a file that cannot be parsed is a bad argument (exit 2)."""
    try:
        text = path.read_text()
        doc = (json.loads(text, object_pairs_hook=_from_pairs) if path.suffix == ".json"
               else yaml.load(text, Loader=_GraphLoader))
    except (yaml.YAMLError, ValueError) as exc:
        detail = " ".join(str(exc).split())
        raise click.BadParameter(f"cannot read {path}: {detail}", param_hint="FILE") from None
    except RecursionError:  # nested far beyond the limit: the limit's own message
        raise InvalidInput(str(too_deep(str(path)))) from None
    _check_duplicates(doc, path)
    return doc
