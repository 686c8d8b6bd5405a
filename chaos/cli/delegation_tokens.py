"""``sharetxn delegation-tokens``: create, renew, expire and describe delegation tokens, like
kafka-delegation-tokens.sh (KIP-48, KIP-373).

    sharetxn delegation-tokens --create [--max-life-time-period MS] [--renewer-principal P ...]
        [--owner-principal P] [--execute]
    sharetxn delegation-tokens --renew --hmac HMAC [--renew-time-period MS] [--execute]
    sharetxn delegation-tokens --expire --hmac HMAC [--expiry-time-period MS] [--execute]
    sharetxn delegation-tokens --describe [--owner-principal P ...]

The changing actions (create, renew, expire) only print their plan unless ``--execute`` is
given.  The broker accepts these requests only from an authenticated connection that did not
itself log in with a token (``--command-config`` with ``security.protocol=SASL_*``).  A token's
HMAC is printed in base64, the password a client logs in with (SCRAM, ``tokenauth="true"``).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import datetime
import sys
from typing import Any

from rich.console import Console

from chaos.cli.support import (
    EXIT_CODES_HELP,
    CliError,
    ExitCode,
    UsageExitParser,
    add_actions,
    add_command_options,
    add_execute_options,
    emit,
    emit_json,
    plan_note,
    run_admin_action,
)
from producer.admin import Admin, DelegationToken

EXAMPLES = f"""examples:
  sharetxn delegation-tokens --command-config alice.properties --create \\
      --max-life-time-period -1 --renewer-principal User:bob --execute
  sharetxn delegation-tokens --command-config bob.properties --renew \\
      --hmac 'ABCDEFGHIJK...' --renew-time-period -1 --execute
  sharetxn delegation-tokens --command-config alice.properties --expire \\
      --hmac 'ABCDEFGHIJK...' --expiry-time-period -1 --execute
  sharetxn delegation-tokens --command-config alice.properties --describe \\
      --owner-principal User:alice

{EXIT_CODES_HELP}"""

ACTIONS = {
    "create": "create a delegation token",
    "renew": "renew a delegation token (by its HMAC)",
    "expire": "expire a delegation token (by its HMAC)",
    "describe": "describe the delegation tokens the caller may see",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_command_options(parser, EXAMPLES)
    add_actions(parser, ACTIONS)
    parser.add_argument(
        "--max-life-time-period",
        type=int,
        default=-1,
        metavar="MS",
        help="--create: the token's maximum life (-1: the broker's delegation.token.max."
        "lifetime.ms)",
    )
    parser.add_argument(
        "--renewer-principal",
        action="append",
        default=[],
        metavar="PRINCIPAL",
        help="--create: a user who may renew the token, as User:name (repeatable)",
    )
    parser.add_argument(
        "--owner-principal",
        action="append",
        default=[],
        metavar="PRINCIPAL",
        help="--create: the token's owner (default: the caller; needs CREATE_TOKENS on the "
        "user); --describe: only the tokens of these owners (repeatable)",
    )
    parser.add_argument("--hmac", metavar="HMAC", help="--renew/--expire: the token's HMAC")
    parser.add_argument(
        "--renew-time-period",
        type=int,
        default=-1,
        metavar="MS",
        help="--renew: the renewal period (-1: delegation.token.expiry.time.ms)",
    )
    parser.add_argument(
        "--expiry-time-period",
        type=int,
        default=-1,
        metavar="MS",
        help="--expire: expire in MS (-1: now, the token is removed)",
    )
    add_execute_options(parser, "print the plan, change nothing (the default)")


def run(args: argparse.Namespace) -> int:
    return run_admin_action(args, "sharetxn-delegation-tokens", _check_usage, _dispatch)


def _check_principal(text: str, option: str) -> None:
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        msg = f"{option}: expected TYPE:NAME (User:alice), got {text!r}"
        raise CliError(msg, ExitCode.USAGE)


def _check_usage(args: argparse.Namespace) -> None:
    problem = None
    if (args.renew or args.expire) and not args.hmac:
        problem = "--renew and --expire need --hmac"
    elif args.create and len(args.owner_principal) > 1:
        problem = "--create takes at most one --owner-principal"
    elif args.renewer_principal and not args.create:
        problem = "--renewer-principal goes with --create"
    elif args.hmac and not (args.renew or args.expire):
        problem = "--hmac goes with --renew or --expire"
    if problem is not None:
        raise CliError(problem, ExitCode.USAGE)
    for p in args.renewer_principal:
        _check_principal(p, "--renewer-principal")
    for p in args.owner_principal:
        _check_principal(p, "--owner-principal")


def _hmac(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        msg = f"--hmac: not base64: {text[:12]!r}..."
        raise CliError(msg, ExitCode.USAGE) from None


def _date(ms: int) -> str:
    """A timestamp as kafka-delegation-tokens.sh prints it (yyyy-MM-ddTHH:mm, UTC here)."""
    when = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return when.strftime("%Y-%m-%dT%H:%M")


def _row(token: DelegationToken) -> dict[str, Any]:
    return {
        "token_id": token.token_id,
        "hmac": token.hmac_base64,
        "owner": token.owner,
        "requester": token.requester,
        "renewers": ", ".join(token.renewers) or "-",
        "issue_date": _date(token.issue_timestamp_ms),
        "expiry_date": _date(token.expiry_timestamp_ms),
        "max_date": _date(token.max_timestamp_ms),
    }


def _dispatch(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    if args.describe:
        owners = list(args.owner_principal) or None
        rows = [_row(t) for t in admin.describe_delegation_tokens(owners)]
        emit(args, console, rows, "delegation tokens")
        return ExitCode.OK
    if args.create:
        return _create(admin, args, console)
    return _renew_or_expire(admin, args, console)


def _create(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    owner = args.owner_principal[0] if args.owner_principal else None
    if not args.execute:
        plan = {
            "owner": owner or "(the caller)",
            "renewers": ", ".join(args.renewer_principal) or "-",
            "max_life_time_period_ms": args.max_life_time_period,
        }
        emit(args, console, [plan], f"create a delegation token{plan_note(args)}")
        return ExitCode.OK
    token = admin.create_delegation_token(
        renewers=list(args.renewer_principal),
        owner=owner,
        max_lifetime_ms=args.max_life_time_period,
    )
    if args.json:
        emit_json(_row(token))
    else:
        console.print(f"Created delegation token with tokenId : {token.token_id}")
        emit(args, console, [_row(token)], "delegation token")
    return ExitCode.OK


def _renew_or_expire(admin: Admin, args: argparse.Namespace, console: Console) -> int:
    hmac = _hmac(args.hmac)
    verb = "renew" if args.renew else "expire"
    period = args.renew_time_period if args.renew else args.expiry_time_period
    if not args.execute:
        known = [t for t in admin.describe_delegation_tokens() if t.hmac == hmac]
        plan = {
            "token_id": known[0].token_id if known else "(not visible to the caller)",
            "expiry_date": _date(known[0].expiry_timestamp_ms) if known else "-",
            f"{verb}_time_period_ms": period,
        }
        emit(args, console, [plan], f"{verb} a delegation token{plan_note(args)}")
        return ExitCode.OK
    if args.renew:
        expiry_ms = admin.renew_delegation_token(hmac, period)
    else:
        expiry_ms = admin.expire_delegation_token(hmac, period)
    if args.json:
        emit_json({"operation": verb, "expiry_timestamp_ms": expiry_ms})
    else:
        console.print(f"Completed {verb} operation. New expiry date : {_date(expiry_ms)}")
    return ExitCode.OK


def main(argv: list[str] | None = None) -> int:
    parser = UsageExitParser(prog="sharetxn delegation-tokens", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
