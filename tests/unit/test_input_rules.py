"""The rules every layer applies to user input (core/limits.py, core/handlers.py): bounds
of whole numbers, names, text in args, shell jobs that could not start, and how much of a
value an error line quotes. Both stores call these, so they refuse alike."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.handlers import SHELL_TEXT_MAX, HandlerSpecError, check_shell_job
from taskyard.core.limits import (
    COUNT_MAX,
    LINE_MAX,
    PRIORITY_MAX,
    LimitError,
    check_name,
    check_text,
    encode_args,
    one_line,
    quoted,
    whole,
)


@pytest.mark.parametrize(("value", "message"), [
    (True, "retries must be a whole number"),
    (1.0, "retries must be a whole number"),
    ("3", "retries must be a whole number"),
    (-1, "retries must be a whole number from 0 to 1000000"),
    (COUNT_MAX + 1, "retries must be a whole number from 0 to 1000000"),
    (10**30, "retries must be a whole number from 0 to 1000000"),
])
def test_whole_numbers_outside_their_bounds_are_refused(value: object, message: str) -> None:
    with pytest.raises(LimitError, match=f"^{message}$"):
        whole(value, "retries")


def test_whole_numbers_within_their_bounds_pass() -> None:
    assert whole(0, "retries") == 0
    assert whole(COUNT_MAX, "retries") == COUNT_MAX
    assert whole(-PRIORITY_MAX, "priority", minimum=-PRIORITY_MAX) == -PRIORITY_MAX


@pytest.mark.parametrize(("value", "message"), [
    (3, "pool name must be text"),
    ("", "pool name must not be empty"),
    ("x" * 201, "pool name 'xxxx"),
    ("a\x00b", r"pool name 'a\\x00b' holds a NUL character"),
    ("a\nb", r"holds the character U\+000A"),
    ("a\x7fb", r"holds the character U\+007F"),
    ("a\ud800b", r"holds the character U\+D800"),
])
def test_names_hold_no_control_characters(value: object, message: str) -> None:
    with pytest.raises(LimitError, match=message):
        check_name(value, "pool name")


def test_names_may_be_empty_when_said_and_hold_any_other_text() -> None:
    assert check_name("", "routing", empty=True) == ""
    assert check_name("déploiement-東京 1", "pool name") == "déploiement-東京 1"


def test_a_long_name_is_not_echoed_whole() -> None:
    with pytest.raises(LimitError) as caught:
        check_name("x" * 1_000_000, "label")
    assert len(str(caught.value)) < 150
    assert "(1000000 characters)" in str(caught.value)


def test_text_holds_no_nul_and_no_lone_surrogate() -> None:
    assert check_text("line 1\nline\t2 é", "description") == "line 1\nline\t2 é"
    with pytest.raises(LimitError, match=r"description holds a NUL character \(at character 1\)"):
        check_text("a\x00", "description")
    with pytest.raises(LimitError, match=r"U\+DC00"):
        check_text("\udc00", "description")


@pytest.mark.parametrize("args", [
    {"s": "a\x00b"}, {"s": "\ud800"}, {"a\x00": 1}, {"deep": [{"x": ["\udfff"]}]},
])
def test_args_text_with_nul_or_lone_surrogates_is_refused(args: dict[str, object]) -> None:
    with pytest.raises(LimitError, match=r"job 0: args holds .*NUL characters or lone surrogates"):
        encode_args(args, where="job 0")


def test_args_with_escaped_but_valid_text_pass() -> None:
    # Astral characters are written as surrogate pairs in JSON, a backslash-u as text.
    text = encode_args({"emoji": "😀", "path": "C:\\users", "é": ["ü"]}, where="job 0")
    assert "\\ud83d\\ude00" in text


@given(st.text())
def test_quoted_values_are_short_and_start_like_their_repr(value: str) -> None:
    text = quoted(value)
    assert text == repr(value) or (text.startswith(repr(value)[:59]) and "…" in text)
    assert len(text) <= 60 + len(f" ({len(value)} characters)")


def test_quoted_says_the_length_of_long_text_only() -> None:
    assert quoted("abc") == "'abc'"
    assert quoted(list(range(100))).endswith("…")


def test_one_line_joins_and_cuts() -> None:
    assert one_line("a\n  b\tc") == "a b c"
    long = one_line("x " * LINE_MAX)
    assert len(long) == LINE_MAX and long.endswith("…")


def test_a_shell_job_whose_args_lack_a_placeholder_is_refused() -> None:
    check_shell_job("echo {name}", {"name": "x", "other": 1}, '{"name":"x","other":1}')
    check_shell_job("echo hello", {}, "{}")
    with pytest.raises(HandlerSpecError, match="the job's args have no 'a', 'b'"):
        check_shell_job("echo {b} {a} {c}", {"c": 1}, '{"c":1}')


def test_a_shell_job_too_large_to_start_is_refused() -> None:
    big = "x" * SHELL_TEXT_MAX
    with pytest.raises(HandlerSpecError, match=r"in \$TASKYARD_ARGS, at most 130048 bytes"):
        check_shell_job("echo hi", {"s": big}, encode_args({"s": big}, where="job 0"))
    # Args that fit give a command that fits, whatever its placeholders: their values
    # are passed in the environment, not in the command (3 of 40 kB each here).
    args = {"a": "y" * 40_000, "b": "y" * 40_000, "c": "y" * 40_000}
    check_shell_job("echo {a} {b}\n{c} {a}", args, encode_args(args, where="job 0"))
