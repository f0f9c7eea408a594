"""Reading graph files (YAML or JSON) for ``taskyard graph submit|add-tasks``, with the
duplicate-keeping loaders of :mod:`taskyard.api.documents`. Imported when such a command
runs (YAML takes time to load)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml

from taskyard.api.documents import check_duplicates, load_json_document, load_yaml_document
from taskyard.core.limits import too_deep
from taskyard.model.errors import InvalidInput


def load(path: Path) -> Any:
    """YAML or JSON; a label or key given twice fails naming it (a validation error,
    exit 1); a file that cannot be parsed is a bad argument (exit 2)."""
    try:
        text = path.read_text()
        doc = (load_json_document(text) if path.suffix == ".json"
               else load_yaml_document(text))
    except (yaml.YAMLError, ValueError) as exc:
        detail = " ".join(str(exc).split())
        raise click.BadParameter(f"cannot read {path}: {detail}", param_hint="FILE") from None
    except RecursionError:  # nested far beyond the limit: the limit's own message
        raise InvalidInput(str(too_deep(str(path)))) from None
    check_duplicates(doc, str(path))
    return doc
