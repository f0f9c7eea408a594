"""``/api/v1/tokens`` (admin): create (the secret is in the answer, once), list, revoke."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path

from taskyard.api.http.auth import ADMIN
from taskyard.api.http.context import YardDep, answer, errors
from taskyard.api.http.schemas import TokenCreatedOut, TokenIn, TokenListOut, TokenOut
from taskyard.api.http.tokens import mint_token
from taskyard.store.transitions.tokens import list_tokens, revoke_token

router = APIRouter(prefix="/api/v1/tokens", tags=["tokens"], dependencies=[ADMIN])


@router.get("", response_model=TokenListOut, responses=errors(), summary="Tokens (no secrets)")
def list_(yard: YardDep) -> Any:
    return answer({"items": [t.to_json() for t in list_tokens(yard.store)]})


@router.post("", status_code=201, response_model=TokenCreatedOut, responses=errors(409, 422),
             summary="Create a token; its secret is shown once")
def create(body: TokenIn, yard: YardDep) -> Any:
    secret, record = mint_token(yard.store, body.name, body.scope)
    return answer({**record.to_json(), "token": secret}, 201)


@router.post("/{name}/revoke", response_model=TokenOut, responses=errors(404),
             summary="Revoke a token (at once)")
def revoke(name: Annotated[str, Path(min_length=1, max_length=200)], yard: YardDep) -> Any:
    return answer(revoke_token(yard.store, name).to_json())
