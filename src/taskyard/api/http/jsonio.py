"""JSON in and out of the API.

In: a request body is parsed here, not by the framework, so that a key given twice is
refused (parsers keep the last one without a word), ``NaN``/``Infinity`` are refused
(not JSON), and a large body is parsed on a thread instead of the event loop (a
32 MiB graph takes a second to parse: every other request would wait for it).

Out: answers are encoded with orjson (a tenth of the standard library's time); a value
orjson cannot hold (an integer past 64 bits, from a handler's result) falls back to the
standard encoder. Non-finite floats, which no JSON holds, are written as null.
"""

from __future__ import annotations

import json
import math
from typing import Any, TypeVar

import orjson
from anyio import to_thread
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from taskyard.api.http.errors import ApiError, first_error

OFF_LOOP = 64 * 1024
"""Bodies (and answers) larger than this many bytes are parsed (encoded) on a thread."""
M = TypeVar("M", bound=BaseModel)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"the key {key[:60]!r} is given twice in one object")
            seen.add(key)
    return found


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def load_json(raw: bytes | str) -> Any:
    """Strict JSON: ValueError for malformed text, a duplicate key, NaN or Infinity."""
    return json.loads(raw, object_pairs_hook=_pairs, parse_constant=_constant)


async def read_json(request: Request) -> Any:
    """The request's body as strict JSON; ApiError 400 naming what is wrong."""
    raw = await request.body()
    if not raw:
        raise ApiError(400, "body: a JSON document is required")
    try:
        if len(raw) > OFF_LOOP:
            return await to_thread.run_sync(load_json, raw)
        return load_json(raw)
    except RecursionError:
        raise ApiError(400, "body is not valid JSON: nested too deep") from None
    except ValueError as exc:
        raise ApiError(400, f"body is not valid JSON: {exc}") from None


async def read_model(request: Request, model: type[M]) -> M:
    """The body as ``model`` (its JSON shape: fields, types, integer ranges); ApiError
    400 naming the first field that does not fit."""
    data = await read_json(request)
    try:
        if len(await request.body()) > OFF_LOOP:
            return await to_thread.run_sync(model.model_validate, data)
        return model.model_validate(data)
    except ValidationError as exc:
        raise ApiError(400, first_error(exc.errors())) from None


def dumps(data: Any) -> bytes:
    """``data`` as JSON bytes (see the module docstring)."""
    try:
        return orjson.dumps(data)
    except TypeError:  # an integer past 64 bits
        return json.dumps(_finite(data), separators=(",", ":"), allow_nan=False).encode()


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


class JsonAnswer(Response):
    """A JSON response encoded by :func:`dumps`."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dumps(content)


def answer(data: Any, status: int = 200) -> Response:
    """A JSON answer, sent as built: the records' ``to_json`` already gives the documented
    shape, and re-validating a 100,000-job graph on its way out would take seconds."""
    return JsonAnswer(data, status_code=status)


async def answer_off_loop(data: Any, status: int = 200) -> Response:
    """:func:`answer` for what may be large (a graph with its jobs): encoded on a thread."""
    body = await to_thread.run_sync(dumps, data)
    return Response(body, status_code=status, media_type="application/json")
