"""Shell handlers run by the real /bin/sh: a placeholder's value, whatever it holds, is
printed as given and runs nothing (issue 36, F7: ``shell:echo "{name}"`` let a write
token run ``$(…)``)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from taskyard.core.handlers import render_shell, shell_arg_env

TEMPLATES = ['printf "%s" {v}', 'printf "%s" "{v}"', "printf \"%s\" '{v}'",
             'printf "%s" "<{v}>"', "printf '%s' '[{v}]'", 'printf "%s" "$(printf %s {v})"',
             "printf '%s' \"`printf %s {v}`\"x", 'printf "%s" "$(printf "%s" "({v})")"']
EXPECTED = ["{}", "{}", "{}", "<{}>", "[{}]", "{}", "{}x", "({})"]
# $(…) and `…` drop the trailing newlines of what they capture, as shells do: the value's,
# where it ends the capture (not in the last template, whose capture ends with ")").
STRIPPED = [False, False, False, False, False, True, True, False]
# Text a shell would run if it read it as code.
NASTY = st.sampled_from(["$(touch {m})", "`touch {m}`", "\"; touch {m}; \"",
                         "'; touch {m}; '", "$(touch {m})'\"`touch {m}`", "\\", "\\'", "\\\""])


@example(["\n"])  # a newline inside "$(printf "%s" "({v})")" stays: ")" ends the capture
@settings(max_examples=60, deadline=None)
@given(st.lists(NASTY | st.text(st.characters(blacklist_categories=["Cs"],
                                              blacklist_characters="\x00"), max_size=20),
                min_size=1, max_size=4))
def test_a_value_is_text_in_every_quoting(tmp_path_factory: object, parts: list[str]) -> None:
    folder: Path = tmp_path_factory.mktemp("sh")  # type: ignore[attr-defined]
    marker = folder / "pwned"
    value = "".join(parts).replace("{m}", str(marker))
    for template, expected, stripped in zip(TEMPLATES, EXPECTED, STRIPPED, strict=True):
        args = {"v": value}
        env = {**os.environ, **shell_arg_env(template, args)}
        out = subprocess.run(["/bin/sh", "-c", render_shell(template, args)], env=env,
                             capture_output=True, check=True).stdout
        shown = value.rstrip("\n") if stripped else value
        assert out.decode() == expected.format(shown), template
        assert not marker.exists(), (template, value)


def test_arithmetic_reads_a_number() -> None:
    template, args = "echo $(( {n} + 1 )) {n}", {"n": 41}
    env = {**os.environ, **shell_arg_env(template, args)}
    out = subprocess.run(["/bin/sh", "-c", render_shell(template, args)], env=env,
                         capture_output=True, check=True, text=True).stdout
    assert out == "42 41\n"
