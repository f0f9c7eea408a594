"""The dashboard: plain HTML, CSS and JavaScript shipped in the package (no build step,
no CDN). The files hold no data and are served without a token; every request the page
makes for data carries the token the user signed in with."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from starlette.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"


def install(app: FastAPI) -> None:
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
