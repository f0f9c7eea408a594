"""``$subs`` and ``$result`` markers in a graph task's args (TaskCluster's payload
substitution): finding the labels they name, and replacing them — job ids at
submission, results at dispatch. Pure, and without recursion (args nest up to the
limits' depth)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


class SubstitutionError(ValueError):
    """A ``$subs`` marker that names no ``taskId:LABEL``."""


def _walk(value: Any, visit: Callable[[Mapping[str, Any]], Any]) -> Any:
    """Rebuild ``value`` without recursion. ``visit`` gets each mapping and returns it
    unchanged (keep and descend) or any other object (the replacement, not descended)."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, parent, key = stack.pop()
        if isinstance(item, Mapping):
            replaced = visit(item)
            if replaced is not item:
                parent[key] = replaced
                continue
            new: dict[str, Any] = {}
            parent[key] = new
            stack.extend((v, new, k) for k, v in item.items())
        elif isinstance(item, list):
            new_list: list[Any] = [None] * len(item)
            parent[key] = new_list
            stack.extend((v, new_list, i) for i, v in enumerate(item))
        else:
            parent[key] = item
    return root[0]


def _marker(item: Mapping[str, Any], name: str) -> Any:
    if len(item) == 1 and name in item:
        return item[name]
    return None


def references(args: Any) -> set[str]:
    """Labels named by ``{$subs: "taskId:LABEL"}`` markers."""
    found: set[str] = set()

    def visit(item: Mapping[str, Any]) -> Any:
        target = _marker(item, "$subs")
        if isinstance(target, str) and target.startswith("taskId:"):
            found.add(target[len("taskId:"):])
            return 0
        if target is not None:
            raise SubstitutionError(f"$subs {target!r}: expected 'taskId:LABEL'")
        return item

    _walk(args, visit)
    return found


def result_references(args: Any) -> set[str]:
    """Labels named by ``{$result: LABEL}`` markers."""
    found: set[str] = set()

    def visit(item: Mapping[str, Any]) -> Any:
        target = _marker(item, "$result")
        if isinstance(target, str):
            found.add(target)
            return 0
        return item

    _walk(args, visit)
    return found


def substitute_ids(args: Any, ids: Mapping[str, int]) -> Any:
    """Replace ``{$subs: "taskId:LABEL"}`` with that label's job id (at submission)."""

    def visit(item: Mapping[str, Any]) -> Any:
        target = _marker(item, "$subs")
        if isinstance(target, str) and target.startswith("taskId:"):
            return ids[target[len("taskId:"):]]
        return item

    return _walk(args, visit)


def substitute_results(args: Any, results: Mapping[str, Any]) -> Any:
    """Replace ``{$result: LABEL}`` with that label's job result (at dispatch)."""

    def visit(item: Mapping[str, Any]) -> Any:
        target = _marker(item, "$result")
        if isinstance(target, str) and target in results:
            return results[target]
        return item

    return _walk(args, visit)
