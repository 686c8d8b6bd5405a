"""Configure once: the source and the writer options an ExactlyOnce query gets, and the
refusals (contradicting options, Spark Connect) that happen before a query starts."""

from __future__ import annotations

import pytest

from producer.spark.configure import (
    is_connect_session,
    refuse_connect,
    source_options,
    writer_options,
)
from producer.spark.errors import SparkConfigError

BASE = {
    "bootstrap_servers": "127.0.0.1:9092",
    "checkpoint": "/chk/orders",
    "prefix": "app",
    "client_config": {"security.protocol": "SASL_PLAINTEXT", "acks": "all"},
}


def test_the_source_gets_servers_checkpoint_prefix_and_security_from_one_place() -> None:
    options = source_options(
        **BASE, subscribe=["orders", "returns"], group_id="g", extra={"startingOffsets": "earliest"}
    )
    assert options == {
        "kafka.bootstrap.servers": "127.0.0.1:9092",
        "checkpointLocation": "/chk/orders",
        "transactional.id.prefix": "app",
        "group.id": "g",
        "subscribe": "orders,returns",
        "kafka.security.protocol": "SASL_PLAINTEXT",  # producer settings are not source options
        "startingOffsets": "earliest",
    }


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("checkpointLocation", "/chk/other"),
        ("transactional.id.prefix", "other"),
        ("kafka.bootstrap.servers", "elsewhere:9092"),
        ("kafka.security.protocol", "PLAINTEXT"),
    ],
)
def test_a_contradicting_source_option_is_refused(key: str, value: str) -> None:
    with pytest.raises(SparkConfigError, match="given once, to ExactlyOnce"):
        source_options(**BASE, subscribe="orders", group_id="g", extra={key: value})


def test_repeating_the_same_value_is_fine_and_keywords_are_not_options() -> None:
    same = source_options(
        **BASE, subscribe="orders", group_id="g", extra={"checkpointLocation": "/chk/orders"}
    )
    assert same["checkpointLocation"] == "/chk/orders"
    with pytest.raises(SparkConfigError, match="keyword argument"):
        source_options(**BASE, subscribe="orders", group_id="g", extra={"group.id": "h"})
    with pytest.raises(SparkConfigError, match="no topic"):
        source_options(**BASE, subscribe=" , ", group_id="g", extra={})


def test_the_writer_uses_the_same_checkpoint_or_refuses() -> None:
    assert writer_options("/chk/orders", {"maxFilesPerTrigger": 1}) == {
        "checkpointLocation": "/chk/orders",
        "maxFilesPerTrigger": "1",
    }
    with pytest.raises(SparkConfigError, match="same location"):
        writer_options("/chk/orders", {"checkpointLocation": "/chk/elsewhere"})


def test_spark_connect_sessions_are_refused_with_the_reason() -> None:
    from pyspark.sql.session import SparkSession as Classic  # noqa: PLC0415

    assert not is_connect_session(object.__new__(Classic))
    refuse_connect(object.__new__(Classic))
    try:
        from pyspark.sql.connect.session import SparkSession as Connect  # noqa: PLC0415
    except Exception as exc:  # PySpark's Connect client needs pandas and grpcio
        pytest.skip(f"Spark Connect's client is not installed: {exc}")
    session = object.__new__(Connect)  # no server needed to tell the kind
    assert is_connect_session(session)
    with pytest.raises(SparkConfigError, match="Spark Connect is not supported"):
        refuse_connect(session)
