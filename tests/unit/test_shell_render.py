"""Shell handlers' placeholders (issue 36, F7): each ``{arg}`` becomes a quoted reference
to an environment variable holding the value, whatever quotes it stands in, so that
no value is ever read as shell code."""

from __future__ import annotations

import pytest

from taskyard.core.handlers import HandlerSpecError, arg_variable, render_shell, shell_arg_env

HOSTILE = {"a": "x\"; touch pwned; echo \"$(id)'`id`'", "n": 3}


@pytest.mark.parametrize(("template", "rendered"), [
    ("echo {a}", 'echo "${TASKYARD_ARG_a}"'),
    ('echo "hello {a}!"', 'echo "hello ${TASKYARD_ARG_a}!"'),
    ("echo 'hello {a}!'", "echo 'hello '\"${TASKYARD_ARG_a}\"'!'"),
    ('echo "it\\"s {a}"', 'echo "it\\"s ${TASKYARD_ARG_a}"'),
    ("echo \\'{a}", 'echo \\\'"${TASKYARD_ARG_a}"'),
    ("echo \"'{a}'\"", "echo \"'${TASKYARD_ARG_a}'\""),
    ("echo '\"{a}\"'", "echo '\"'\"${TASKYARD_ARG_a}\"'\"'"),
    ("sleep {n}; echo {a}\\", 'sleep "${TASKYARD_ARG_n}"; echo "${TASKYARD_ARG_a}"\\'),
    ('echo "$(echo "{a}") {a}"', 'echo "$(echo "${TASKYARD_ARG_a}") ${TASKYARD_ARG_a}"'),
    ("echo `echo {a}` {a}", 'echo `echo "${TASKYARD_ARG_a}"` "${TASKYARD_ARG_a}"'),
    ('echo "`echo {a}`"', 'echo "`echo "${TASKYARD_ARG_a}"`"'),
    ("(cd /; echo {a}) {a}", '(cd /; echo "${TASKYARD_ARG_a}") "${TASKYARD_ARG_a}"'),
    ("echo $(( ({n}) * 2 )) {a}", 'echo $(( (${TASKYARD_ARG_n}) * 2 )) "${TASKYARD_ARG_a}"'),
    ("echo $(( {n} ) {a}", "echo $(( ${TASKYARD_ARG_n} ) ${TASKYARD_ARG_a}"),
    ("case x in x) echo {a};; esac", 'case x in x) echo "${TASKYARD_ARG_a}";; esac'),
])
def test_a_placeholder_becomes_a_quoted_reference(template: str, rendered: str) -> None:
    assert render_shell(template, HOSTILE) == rendered


def test_the_values_go_in_the_environment() -> None:
    assert shell_arg_env("echo {a} {n} {a}", HOSTILE) == {
        "TASKYARD_ARG_a": HOSTILE["a"], "TASKYARD_ARG_n": "3"}
    assert shell_arg_env("echo {gone}", {}) == {}


def test_a_name_the_shell_cannot_spell_is_hex() -> None:
    assert arg_variable("é_x") == "TASKYARD_ARG__" + "é_x".encode().hex()
    assert arg_variable("x1") == "TASKYARD_ARG_x1"


def test_a_missing_arg_is_named() -> None:
    with pytest.raises(HandlerSpecError, match="'b'"):
        render_shell("echo {a} {b}", {"a": 1})
