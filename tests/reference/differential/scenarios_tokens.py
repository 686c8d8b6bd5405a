"""Delegation tokens (KIP-48, KIP-373): the four APIs as both brokers answer them on the
suite's PLAINTEXT listener, where Kafka refuses them all (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED,
checked before whether tokens are enabled).

Responses are compared byte for byte (their hex): the refusals carry -1 timestamps, which
kio will not decode.  The flows over an authenticated listener (create, renew, expire,
describe, owner mismatch, logging in with a token) are checked against Kafka's own tools in
tests/reference/test_delegation_tokens_against_sharetxn.py.
"""

from __future__ import annotations

import datetime
from typing import Any

from tests.reference.differential.ctx import Ctx
from tests.reference.differential.framework import scenario
from tests.reference.differential.scenarios_config_describe import describe
from txn.api_keys import ApiKey

AREA = "delegation-tokens"
_NO_LIMIT = datetime.timedelta(milliseconds=-1)
BROKER = 4  # DescribeConfigs resource type


def _raw(ctx: Ctx, key: ApiKey, versions: range, body: dict[str, Any]) -> dict[str, str]:
    """The response body of each version, as hex (after the response header)."""
    return {f"v{v}": ctx.w.conn.request_raw(key, v, body).hex() for v in versions}


@scenario(AREA)
def create_on_plaintext(ctx: Ctx) -> Any:
    renewers = [{"principal_type": "User", "principal_name": "bob"}]
    mine = {"renewers": renewers, "max_lifetime": _NO_LIMIT}
    owned = {**mine, "owner_principal_type": "User", "owner_principal_name": "carol"}
    return {
        "own": _raw(ctx, ApiKey.CREATE_DELEGATION_TOKEN, range(1, 4), mine),
        "for another owner": _raw(ctx, ApiKey.CREATE_DELEGATION_TOKEN, range(3, 4), owned),
    }


@scenario(AREA)
def renew_and_expire_on_plaintext(ctx: Ctx) -> Any:
    hmac = bytes(64)
    return {
        "renew": _raw(
            ctx,
            ApiKey.RENEW_DELEGATION_TOKEN,
            range(1, 3),
            {"hmac": hmac, "renew_period": _NO_LIMIT},
        ),
        "expire": _raw(
            ctx,
            ApiKey.EXPIRE_DELEGATION_TOKEN,
            range(1, 3),
            {"hmac": hmac, "expiry_time_period": _NO_LIMIT},
        ),
    }


@scenario(AREA)
def describe_on_plaintext(ctx: Ctx) -> Any:
    owners = [{"principal_type": "User", "principal_name": "alice"}]
    return {
        "all": _raw(ctx, ApiKey.DESCRIBE_DELEGATION_TOKEN, range(1, 4), {"owners": None}),
        "no owner": _raw(ctx, ApiKey.DESCRIBE_DELEGATION_TOKEN, range(1, 4), {"owners": []}),
        "an owner": _raw(ctx, ApiKey.DESCRIBE_DELEGATION_TOKEN, range(1, 4), {"owners": owners}),
    }


@scenario(AREA)
def token_api_versions(ctx: Ctx) -> Any:
    resp = ctx.call(
        ApiKey.API_VERSIONS, {"client_software_name": "d", "client_software_version": "1"}, 3
    )
    keys = {
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        ApiKey.DESCRIBE_DELEGATION_TOKEN,
    }
    return sorted(
        [int(k.api_key), int(k.min_version), int(k.max_version)]
        for k in resp.api_keys
        if int(k.api_key) in keys
    )


@scenario(AREA)
def token_broker_configs(ctx: Ctx) -> Any:
    """DescribeConfigs of the ``delegation.token.*`` broker configs (the key unset here)."""
    keys = [
        "delegation.token.secret.key",
        "delegation.token.max.lifetime.ms",
        "delegation.token.expiry.time.ms",
        "delegation.token.expiry.check.interval.ms",
    ]
    return describe(ctx, BROKER, "1", keys)
