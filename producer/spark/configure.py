"""Configure once: the options the ``kafka-share`` source and the Spark writer get from one
``ExactlyOnce``, and the refusals that keep them consistent.

``ExactlyOnce`` holds the bootstrap servers, the checkpoint location, the transactional-id
prefix and the client security settings; ``ExactlyOnce.read_stream`` and
``ExactlyOnce.write_stream`` pass them to the source, the sink and Spark, so none is given
twice.  An option that would contradict them is refused before the query starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from producer.security import SECURITY_KEYS
from producer.spark.errors import SparkConfigError

#: Source options the ExactlyOnce object decides (given once, to the object).
OWNED_SOURCE_OPTIONS = ("kafka.bootstrap.servers", "checkpointLocation", "transactional.id.prefix")

CONNECT_REFUSAL = (
    "Spark Connect is not supported: the exactly-once sink decides each batch's commit in "
    "the driver's Python process (a StreamingQueryListener reads Spark's commits/N and "
    "completes the prepared transactions), and under Spark Connect foreachBatch and listeners "
    "run in separate server-side Python processes that share no state with this one. Run the "
    "query with a classic SparkSession (pyspark without .remote()); docs/spark.md, 'Limits'"
)


def is_connect_session(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session (``SparkSession.builder.remote(...)``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def refuse_connect(spark: object) -> None:
    if is_connect_session(spark):
        raise SparkConfigError(CONNECT_REFUSAL)


def _topics(subscribe: str | Iterable[str]) -> str:
    names = [subscribe] if isinstance(subscribe, str) else list(subscribe)
    joined = ",".join(n.strip() for name in names for n in name.split(",") if n.strip())
    if not joined:
        raise SparkConfigError("read_stream: subscribe names no topic")
    return joined


def source_options(
    *,
    bootstrap_servers: str,
    checkpoint: str,
    prefix: str,
    client_config: Mapping[str, Any],
    subscribe: str | Iterable[str],
    group_id: str,
    extra: Mapping[str, Any],
) -> dict[str, str]:
    """Every option of the ``kafka-share`` source of an ExactlyOnce query."""
    options = {
        "kafka.bootstrap.servers": bootstrap_servers,
        "checkpointLocation": checkpoint,
        "transactional.id.prefix": prefix,
        "group.id": group_id,
        "subscribe": _topics(subscribe),
    }
    for key, value in client_config.items():
        if key in SECURITY_KEYS:
            options[f"kafka.{key}"] = str(value)
    for key, value in extra.items():
        text = str(value)
        if key in ("group.id", "subscribe"):
            msg = f"read_stream: pass {key} as its keyword argument, not as an option"
            raise SparkConfigError(msg)
        if key in OWNED_SOURCE_OPTIONS or key.lower().removeprefix("kafka.") in SECURITY_KEYS:
            given = options.get(key)
            if given != text:
                msg = (
                    f"read_stream: option {key!r}={text!r} contradicts the ExactlyOnce "
                    f"configuration ({given!r}); it is given once, to ExactlyOnce(...)"
                )
                raise SparkConfigError(msg)
            continue
        options[key] = text
    return options


def writer_options(checkpoint: str, extra: Mapping[str, Any]) -> dict[str, str]:
    """The options of the query's writer: the checkpoint is ExactlyOnce's."""
    options = {"checkpointLocation": checkpoint}
    for key, value in extra.items():
        text = str(value)
        if key == "checkpointLocation" and text != checkpoint:
            msg = (
                f"write_stream: checkpointLocation {text!r} is not the ExactlyOnce checkpoint "
                f"{checkpoint!r}; the sink and the source read Spark's commits/N there, so the "
                "query must use the same location (leave the option out)"
            )
            raise SparkConfigError(msg)
        options[key] = text
    return options
