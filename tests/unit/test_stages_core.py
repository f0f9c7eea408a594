"""Stage names, stage results and the shell handlers' stage-report lines (pure core)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskyard.core.stages import (
    MAX_STAGE_RESULT_BYTES,
    StageError,
    StageReport,
    check_stage_name,
    encode_stage_result,
    parse_stage_line,
    shell_done_names,
)

NAMES = st.from_regex(r"[A-Za-z0-9_.:-]{1,100}", fullmatch=True)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@pytest.mark.parametrize("name", ["build", "a", "x" * 100, "step-1.part_2:final"])
def test_a_valid_stage_name_is_returned_as_is(name: str) -> None:
    assert check_stage_name(name) == name


@pytest.mark.parametrize("name", ["", "x" * 101, "two words", "tab\there", "é", "a/b", 7, None])
def test_a_bad_stage_name_is_refused_naming_it(name: object) -> None:
    with pytest.raises(StageError) as caught:
        check_stage_name(name)
    assert str(caught.value) == (
        f"stage name {name!r}: use 1-100 letters, digits or _ . : -")


@given(JSON_VALUES)
def test_a_stage_result_encodes_to_json_that_reads_back_equal(value: object) -> None:
    text = encode_stage_result("build", value)
    assert json.loads(text) == value
    assert text == json.dumps(value, separators=(",", ":"))  # compact: the size counts


@pytest.mark.parametrize("value", [{1, 2}, object(), float("nan"), float("inf"), [float("-inf")]])
def test_a_result_that_is_not_json_is_refused_naming_the_stage(value: object) -> None:
    with pytest.raises(StageError, match=r"^stage 'build': the result is not JSON: "):
        encode_stage_result("build", value)


def test_a_result_may_take_the_whole_limit_but_not_one_byte_more() -> None:
    # A JSON string of n characters encodes as n + 2 bytes (its quotes).
    at_limit = "x" * (MAX_STAGE_RESULT_BYTES - 2)
    assert len(encode_stage_result("big", at_limit)) == MAX_STAGE_RESULT_BYTES
    with pytest.raises(StageError, match=rf"^stage 'big': the result is over "
                                         rf"{MAX_STAGE_RESULT_BYTES} bytes$"):
        encode_stage_result("big", at_limit + "x")


def test_the_limit_counts_encoded_bytes_not_characters() -> None:
    # json.dumps escapes non-ASCII: "é" is 6 bytes (\u00e9), so far fewer fit.
    fits = "é" * ((MAX_STAGE_RESULT_BYTES - 2) // 6)
    assert len(encode_stage_result("s", fits).encode()) <= MAX_STAGE_RESULT_BYTES
    with pytest.raises(StageError, match="over"):
        encode_stage_result("s", fits + "é")


@pytest.mark.parametrize(("line", "report"), [
    ("begin build", StageReport("build", "running")),
    ("  begin   build  \n", StageReport("build", "running")),
    ("begin build ignored words", StageReport("build", "running")),
    ("end build", StageReport("build", "succeeded")),
    ("end build 42", StageReport("build", "succeeded", 42)),
    ('end build {"artifact": "x.tar", "n": [1, 2.5]}',
     StageReport("build", "succeeded", {"artifact": "x.tar", "n": [1, 2.5]})),
    ('end build "quoted"', StageReport("build", "succeeded", "quoted")),
    ("end build null", StageReport("build", "succeeded", None)),
    ("end build built x.tar", StageReport("build", "succeeded", "built x.tar")),
    ("end build {broken", StageReport("build", "succeeded", "{broken")),
    ("fail build", StageReport("build", "failed")),
    ("fail build  disk full ", StageReport("build", "failed", error="disk full")),
])
def test_stage_lines_are_read_as_the_protocol_says(line: str, report: StageReport) -> None:
    assert parse_stage_line(line) == report


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999", "[1, -1e400]"])
def test_a_result_json_cannot_hold_is_kept_as_text(constant: str) -> None:
    # Python's JSON reader takes these, but no stage result can hold them: the stage
    # would be refused when stored (and run again). Kept as the text instead.
    report = parse_stage_line(f"end build {constant}")
    assert report == StageReport("build", "succeeded", constant)
    assert json.loads(encode_stage_result("build", report.result)) == constant


@pytest.mark.parametrize(("line", "message"), [
    ("start build", "stage report 'start build': begin with begin, end or fail"),
    ("  BEGIN build ", "stage report 'BEGIN build': begin with begin, end or fail"),
    ("", "stage report '': begin with begin, end or fail"),
    ("begin", "stage name '': use 1-100 letters"),
    ("end b/c 1", "stage name 'b/c': use 1-100 letters"),
])
def test_a_bad_stage_line_is_refused_saying_why(line: str, message: str) -> None:
    with pytest.raises(StageError) as caught:
        parse_stage_line(line)
    assert str(caught.value).startswith(message)


@given(NAMES, JSON_VALUES)
def test_an_encoded_result_written_on_an_end_line_reads_back(name: str, value: object) -> None:
    report = parse_stage_line(f"end {name} {encode_stage_result(name, value)}")
    assert report.name == name and report.state == "succeeded"
    # An empty string encodes as "" and reads back as the empty string; null is no result.
    assert report.result == value


def test_done_names_are_sorted_and_space_separated() -> None:
    assert shell_done_names({"test": 1, "build": None, "deploy:eu": [1]}) == \
        "build deploy:eu test"
    assert shell_done_names({}) == ""
