"""``client.quota.callback.class`` names a Java class: the broker refuses to start with it
set, with Kafka's message for a class its ConfigDef cannot load."""

from __future__ import annotations

import pytest

from txn.config import BrokerConfig
from txn.errors import InvalidConfigError


@pytest.mark.parametrize("value", ["com.example.Quota", ""])
def test_a_quota_callback_class_is_refused_as_kafka_refuses_one_it_cannot_load(
    value: str,
) -> None:
    config = BrokerConfig({"client.quota.callback.class": value})
    with pytest.raises(InvalidConfigError) as err:
        config.validate()
    assert err.value.message == (
        f"Invalid value {value} for configuration client.quota.callback.class:"
        f" Class {value} could not be found."
    )


def test_unset_is_accepted() -> None:
    BrokerConfig({}).validate()
