"""The options of ``format("kafka-share")``, validated before a query starts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from producer.security import SECURITY_KEYS
from producer.spark.checkpoint import Checkpoint, local_path
from producer.spark.errors import SparkConfigError

DEFAULT_PREFIX = "sharetxn-spark"
DEFAULT_MAX_RECORDS = 10_000
DEFAULT_POLL_TIMEOUT_MS = 1_000
STARTING_OFFSETS = ("earliest", "latest")
EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
DELIVERY_SEMANTICS = (EXACTLY_ONCE, AT_LEAST_ONCE)
#: options that ExactlyOnce.read_stream sets itself (besides the brokers, the checkpoint
#: and the prefix): the clients' security settings, taken from its producer_config
FIXED_OPTIONS = frozenset(f"kafka.{k}" for k in SECURITY_KEYS)

# Option name -> what it means (used by --help-like error messages and docs/spark.md).
OPTIONS: dict[str, str] = {
    "kafka.bootstrap.servers": "the brokers, host:port[,host:port] (required)",
    "group.id": "the share group to consume as (required)",
    "subscribe": "comma-separated topics (required)",
    "checkpointLocation": "the query's checkpoint location (required: sources are not told it)",
    "maxRecordsPerPartition": f"records per read task and batch (default {DEFAULT_MAX_RECORDS})",
    "numPartitions": "read tasks per batch (default: the subscribed topics' partition count)",
    "transactional.id.prefix": f"prefix of the read transactions' ids (default {DEFAULT_PREFIX})",
    "pollTimeoutMs": f"how long a read task waits for records (default {DEFAULT_POLL_TIMEOUT_MS})",
    "startingOffsets": "earliest|latest: set the group's share.auto.offset.reset; "
    "without it the share group must already exist",
    "deliverySemantics": f"{EXACTLY_ONCE} (default; needs KIP-1289) or {AT_LEAST_ONCE}: "
    "the driver acquires each batch and acknowledges it after Spark's commit, for clusters "
    "without KIP-1289 such as Apache Kafka (docs/spark.md)",
    "sharetxn.checkpointServer": "set by ExactlyOnce.read_stream: the driver's checkpoint "
    "server (host:port) through which the source reaches a checkpoint on any file system",
    "sharetxn.checkpointToken": "set by ExactlyOnce.read_stream: the checkpoint server's secret",
    "kafka.<security config>": "security.protocol, sasl.mechanism, sasl.username, "
    "sasl.password, ssl.ca.location, ssl.certificate.location, ssl.key.location, ... "
    "passed to the clients (docs/security.md)",
}


@dataclass(frozen=True, slots=True)
class SourceOptions:
    bootstrap_servers: str
    group_id: str
    topics: tuple[str, ...]
    #: the location (a local path, or the qualified URI when a checkpoint server is given)
    checkpoint: str
    max_records: int
    num_partitions: int | None
    prefix: str
    poll_timeout_ms: int
    starting_offsets: str | None
    #: ``kafka.``-prefixed security options, passed to every client of the query
    client_config: tuple[tuple[str, str], ...] = ()
    #: (address, secret) of the driver's checkpoint server (``ExactlyOnce.read_stream``)
    checkpoint_server: tuple[str, str] | None = None
    #: ``exactly-once`` (read transactions, KIP-1289) or ``at-least-once`` (acks after commit)
    delivery_semantics: str = EXACTLY_ONCE

    @property
    def at_least_once(self) -> bool:
        return self.delivery_semantics == AT_LEAST_ONCE

    def open_checkpoint(self) -> Checkpoint:
        """The checkpoint on its store: through the driver's server, or a local path."""
        if self.checkpoint_server is None:
            return Checkpoint.local(self.checkpoint)
        from producer.spark.fs_server import RemoteFS  # noqa: PLC0415

        return Checkpoint(self.checkpoint, RemoteFS(*self.checkpoint_server))

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        # Spark passes options case-insensitively; normalise the keys we know.
        known = {k.lower(): k for k in OPTIONS}
        values: dict[str, str] = {}
        client: dict[str, str] = {}
        for key, value in options.items():
            if key.lower().startswith("kafka.") and key.lower()[6:] in SECURITY_KEYS:
                client[key.lower()[6:]] = str(value)
                continue
            canonical = known.get(key.lower())
            if canonical is None and key.lower() != "path":
                hint = ", ".join(sorted(OPTIONS))
                msg = f"kafka-share: unknown option {key!r}; the options are: {hint}"
                raise SparkConfigError(msg)
            if canonical is not None:
                values[canonical] = str(value)
        for required in ("kafka.bootstrap.servers", "group.id", "subscribe"):
            if not values.get(required, "").strip():
                msg = f"kafka-share: option {required!r} is required ({OPTIONS[required]})"
                raise SparkConfigError(msg)
        if not values.get("checkpointLocation", "").strip():
            msg = (
                "kafka-share: option 'checkpointLocation' is required: Spark does not tell "
                "Python sources the query's checkpoint, and exactly-once needs it. Pass the "
                "same path to .option('checkpointLocation', ...) on both readStream and "
                "writeStream"
            )
            raise SparkConfigError(msg)
        topics = tuple(t.strip() for t in values["subscribe"].split(",") if t.strip())
        if not topics:
            msg = "kafka-share: option 'subscribe' names no topic"
            raise SparkConfigError(msg)
        starting = values.get("startingOffsets")
        if starting is not None and starting.lower() not in STARTING_OFFSETS:
            msg = f"kafka-share: startingOffsets must be earliest or latest, not {starting!r}"
            raise SparkConfigError(msg)
        semantics = values.get("deliverySemantics", EXACTLY_ONCE).strip().lower()
        if semantics not in DELIVERY_SEMANTICS:
            msg = (
                f"kafka-share: deliverySemantics must be {EXACTLY_ONCE} or {AT_LEAST_ONCE}, "
                f"not {values['deliverySemantics']!r}"
            )
            raise SparkConfigError(msg)
        num = values.get("numPartitions")
        server = values.get("sharetxn.checkpointServer", "").strip()
        token = values.get("sharetxn.checkpointToken", "").strip()
        if bool(server) != bool(token):
            msg = "kafka-share: sharetxn.checkpointServer and sharetxn.checkpointToken go together"
            raise SparkConfigError(msg)
        location = values["checkpointLocation"].strip()
        if not server:
            location = str(local_path(location))  # refuses a non-local URI with a hint
        return cls(
            bootstrap_servers=values["kafka.bootstrap.servers"].strip(),
            group_id=values["group.id"].strip(),
            topics=topics,
            checkpoint=location,
            max_records=_positive(values, "maxRecordsPerPartition", DEFAULT_MAX_RECORDS),
            num_partitions=None if num is None else _positive(values, "numPartitions", 1),
            prefix=check_prefix(values.get("transactional.id.prefix", DEFAULT_PREFIX)),
            poll_timeout_ms=_positive(values, "pollTimeoutMs", DEFAULT_POLL_TIMEOUT_MS),
            starting_offsets=None if starting is None else starting.lower(),
            client_config=tuple(sorted(client.items())),
            checkpoint_server=(server, token) if server else None,
            delivery_semantics=semantics,
        )


def _positive(values: Mapping[str, str], key: str, default: int) -> int:
    raw = values.get(key)
    if raw is None:
        return default
    try:
        number = int(raw)
    except ValueError:
        number = 0
    if number < 1:
        msg = f"kafka-share: option {key!r} must be a positive integer, not {raw!r}"
        raise SparkConfigError(msg)
    return number


def check_prefix(raw: str) -> str:
    """A transactional id prefix: a non-empty word."""
    prefix = raw.strip()
    if not prefix or any(c.isspace() for c in prefix):
        msg = f"transactional.id.prefix must be a non-empty word, not {raw!r}"
        raise SparkConfigError(msg)
    return prefix
