"""taskyard's HTTP API: REST under ``/api/v1``, an event stream, ``/metrics`` and the
dashboard. ``create_app`` (in :mod:`taskyard.api.http.app`) builds the ASGI application;
importing this package itself loads no web framework (the CLI's ``token`` commands use
:mod:`taskyard.api.http.tokens` alone)."""

MAX_BODY = 32 * 1024 * 1024
"""Default request body limit (bytes): a 100,000-task graph document is about 10 MB."""
