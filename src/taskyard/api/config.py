"""Where taskyard's database is, when nobody says: kept apart from :mod:`taskyard.api.yard`
so that the CLI can read it without loading the database stack."""

from __future__ import annotations

import os

DEFAULT_URL = "sqlite:///taskyard.db"


def default_url() -> str:
    """``$TASKYARD_DB``, else ``sqlite:///taskyard.db`` in the current folder."""
    return os.environ.get("TASKYARD_DB") or DEFAULT_URL
