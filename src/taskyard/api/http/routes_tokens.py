"""``/api/v1/tokens`` (admin): create (the secret is in the answer, once), list, revoke."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from anyio import to_thread
from fastapi import APIRouter, Path, Request

from taskyard.api.http.auth import ADMIN
from taskyard.api.http.context import YardDep, errors
from taskyard.api.http.jsonio import answer, read_model
from taskyard.api.http.schemas import TokenCreatedOut, TokenIn, TokenListOut, TokenOut, body_of
from taskyard.api.http.tokens import TokenChecker, mint_token
from taskyard.store.transitions.tokens import list_tokens, revoke_token

router = APIRouter(prefix="/api/v1/tokens", tags=["tokens"], dependencies=[ADMIN])


@router.get("", response_model=TokenListOut, responses=errors(), summary="Tokens (no secrets)")
def list_(yard: YardDep) -> Any:
    return answer({"items": [t.to_json() for t in list_tokens(yard.store)]})


@router.post("", status_code=201, response_model=TokenCreatedOut,
             responses=errors(409, 413, 415, 422), openapi_extra=body_of(TokenIn),
             summary="Create a token; its secret is shown once")
async def create(request: Request, yard: YardDep) -> Any:
    body = await read_model(request, TokenIn)
    secret, record = await to_thread.run_sync(partial(
        mint_token, yard.store, body.name, body.scope, body.expires))
    _checker(request).forget()
    return answer({**record.to_json(), "token": secret}, 201)


# ``{name:path}``: a token's name may hold a slash (``ci/deploy``), like any name.
@router.post("/{name:path}/revoke", response_model=TokenOut, responses=errors(404),
             summary="Revoke a token (at once on this server, within a second on others)")
async def revoke(name: Annotated[str, Path(min_length=1, max_length=200)], request: Request,
                 yard: YardDep) -> Any:
    record = await to_thread.run_sync(revoke_token, yard.store, name)
    _checker(request).forget()
    return answer(record.to_json())


def _checker(request: Request) -> TokenChecker:
    checker: TokenChecker = request.app.state.tokens
    return checker
