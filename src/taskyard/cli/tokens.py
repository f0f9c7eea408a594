"""``taskyard token create|list|revoke``: bearer tokens of the HTTP API."""

from __future__ import annotations

import click

from taskyard.cli.main import POSITIVE_DURATION, State
from taskyard.cli.output import json_option, print_json, print_table, when
from taskyard.model.records import SCOPES


@click.group("token")
def token() -> None:
    """Tokens for the HTTP API and the dashboard (read < write < admin)."""


@token.command("create")
@click.option("--name", required=True, help="A name to list and revoke it by.")
@click.option("--scope", type=click.Choice(SCOPES), required=True,
              help="read: GET; write: also submit, cancel, retry; admin: also task types, "
                   "schedules and tokens.")
@click.option("--expires", type=POSITIVE_DURATION, metavar="DURATION",
              help="Refused after this long (30d, 12h, seconds) [default: never].")
@click.pass_obj
def create(state: State, name: str, scope: str, expires: float | None) -> None:
    """Create a token; prints only the token, once (it is stored hashed)."""
    from taskyard.api.http.tokens import mint_token  # noqa: PLC0415 - start-up time

    secret, _ = mint_token(state.yard.store, name, scope, expires)
    click.echo(secret)


@token.command("list")
@json_option
@click.pass_obj
def list_(state: State, as_json: bool) -> None:
    """Tokens (never their secrets), revoked ones included."""
    from taskyard.store.transitions.tokens import list_tokens  # noqa: PLC0415 - start-up time

    found = list_tokens(state.yard.store)
    if as_json:
        print_json([t.to_json() for t in found])
        return
    print_table(["name", "scope", "created", "last used", "expires", "revoked"],
                ([t.name, t.scope, when(t.created_at), when(t.last_used_at),
                  when(t.expires_at), when(t.revoked_at)] for t in found), empty="no tokens")


@token.command("revoke")
@click.argument("name")
@click.pass_obj
def revoke(state: State, name: str) -> None:
    """Revoke the live token NAME (servers refuse it within a second)."""
    from taskyard.store.transitions.tokens import revoke_token  # noqa: PLC0415 - start-up time

    revoke_token(state.yard.store, name)
    click.echo(f"token {name} revoked")


def register(group: click.Group) -> None:
    group.add_command(token)
