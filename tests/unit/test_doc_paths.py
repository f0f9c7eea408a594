"""Every source file the documentation names exists: a page that points readers at a
module that was moved or removed (as the PostgreSQL page did after the store's driver
was redrawn) sends them to nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([*ROOT.glob("docs/**/*.md"), ROOT / "README.md"])
PATH = re.compile(r"`((?:[A-Za-z_.-]+/)+[A-Za-z_]+\.py)(?::[A-Za-z_][A-Za-z_0-9.]*)?`")


def _named() -> list[tuple[str, str]]:
    return sorted({(page.relative_to(ROOT).as_posix(), found) for page in PAGES
                   for found in PATH.findall(page.read_text())})


def _exists(path: str) -> bool:
    """Relative to the repository, or to the package (as the pages write store paths)."""
    return any((base / path).is_file() for base in (ROOT, ROOT / "src" / "taskyard"))


def test_the_pages_name_many_files() -> None:
    assert len(_named()) > 100


@pytest.mark.parametrize(("page", "path"), _named())
def test_every_file_a_page_names_exists(page: str, path: str) -> None:
    assert _exists(path), f"{page} names {path}, which does not exist"
