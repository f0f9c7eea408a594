"""CompactJson (core/json_text.py) writes what json.dumps with the same options writes,
and refuses what it refuses with the same error, an error leaving nothing behind."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskyard.core import json_text
from taskyard.core.json_text import CompactJson

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(),
                    st.text(max_size=8))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4),
    st.tuples(inner, inner)), max_leaves=20)


def reference(value: Any, allow_nan: bool) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), sort_keys=True, allow_nan=allow_nan)
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def encoded(encode: CompactJson, value: Any) -> str:
    try:
        return encode(value)
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=300, deadline=None)
@given(VALUES, st.booleans())
def test_the_text_and_the_errors_are_json_dumps(value: Any, allow_nan: bool) -> None:
    encode = CompactJson(allow_nan=allow_nan)
    assert encoded(encode, value) == reference(value, allow_nan)
    assert encoded(encode, value) == reference(value, allow_nan)  # the encoder again


def test_an_error_midway_leaves_no_mark_behind() -> None:
    """The C encoder marks each container it enters and, on an error, leaves the marks:
    kept, the same container encoded next would be refused as a circular reference."""
    encode = CompactJson(allow_nan=False)
    inner: list[Any] = [1, object()]
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode({"a": inner})
    inner[1] = 2
    assert encode({"a": inner}) == '{"a":[1,2]}'
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference"):
        encode(looped)
    assert encode([inner, inner]) == "[[1,2],[1,2]]"  # twice, not circular


class _Yielding(dict):  # type: ignore[type-arg]
    """A dict whose items() lets other threads run (the encoder calls it, sorting keys)."""

    def items(self) -> Any:
        time.sleep(0)  # gives up the GIL
        return super().items()


def test_threads_encode_the_same_value_at_once() -> None:
    """Each thread its own encoder: with one shared, a thread entering a list another
    is inside sees that one's mark and refuses it as a circular reference."""
    encode = CompactJson(allow_nan=True)
    shared = [[_Yielding(a=i)] for i in range(20)]
    want = reference(shared, True)
    errors: list[str] = []

    def run() -> None:
        for _ in range(50):
            got = encoded(encode, shared)
            if got != want:
                errors.append(got)

    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_without_the_c_accelerator_it_is_json_dumps_still(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(json_text, "c_make_encoder", None)
    value = {"b": [1.5, None, "é"], "a": True}
    assert CompactJson(allow_nan=False)(value) == reference(value, False)
    assert encoded(CompactJson(allow_nan=False), float("nan")) == reference(float("nan"), False)
