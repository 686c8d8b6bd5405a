"""The options of ``format("kafka-share")``, validated before a query starts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from producer.protocol.security import SECURITY_KEYS
from producer.spark.checkpoint import Checkpoint, local_path
from producer.spark.errors import SparkConfigError

DEFAULT_PREFIX = "sharetxn-spark"
#: ``maxRecordsPerPartition`` left unset: a read task takes what the share group can lock
#: for it, ``AUTO_RECORDS_PER_PARTITION`` per subscribed partition (the most in flight that
#: ``group.share.partition.max.record.locks`` allows), within these bounds
AUTO_RECORDS_PER_PARTITION = 10_000
MIN_AUTO_RECORDS = 10_000
MAX_AUTO_RECORDS = 100_000
DEFAULT_POLL_TIMEOUT_MS = 1_000
STARTING_OFFSETS = ("earliest", "latest")
EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
DELIVERY_SEMANTICS = (EXACTLY_ONCE, AT_LEAST_ONCE)
#: options that ExactlyOnce.read_stream sets itself (besides the brokers, the checkpoint
#: and the prefix): the clients' security settings, taken from its producer_config
FIXED_OPTIONS = frozenset(f"kafka.{k}" for k in SECURITY_KEYS)

# Option name -> what it means (used by --help-like error messages and docs/spark.md).
# Where Spark's proposed kafka-share source (SPARK-54321) or its Kafka source has a name
# for a setting, that name is the option and sharetxn's older name an alias (ALIASES).
OPTIONS: dict[str, str] = {
    "kafka.bootstrap.servers": "the brokers, host:port[,host:port] (required)",
    "kafka.share.group.id": "the share group to consume as (required; alias group.id)",
    "subscribe": "comma-separated topics (this or subscribePattern is required)",
    "subscribePattern": "a regular expression: every topic whose whole name matches it "
    "(internal topics, __*, excluded), resolved at start and again at every trigger",
    "includeHeaders": "true|false (default false): add the headers column",
    "checkpointLocation": "the query's checkpoint location (required: sources are not told it)",
    "maxRecordsPerPartition": "records per read task and batch (default: what the share "
    f"group can lock, {AUTO_RECORDS_PER_PARTITION:,} per subscribed partition, between "
    f"{MIN_AUTO_RECORDS:,} and {MAX_AUTO_RECORDS:,})",
    "kafka.share.parallelism": "read tasks per batch (alias numPartitions; default 1, or with "
    f"deliverySemantics={AT_LEAST_ONCE} the subscribed topics' partition count)",
    "transactional.id.prefix": f"prefix of the read transactions' ids (default {DEFAULT_PREFIX})",
    "pollTimeoutMs": "how long a read task waits for records once assigned "
    f"(default {DEFAULT_POLL_TIMEOUT_MS})",
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
#: sharetxn's older names -> the option they stand for (both given: they must agree)
ALIASES: dict[str, str] = {
    "group.id": "kafka.share.group.id",
    "numPartitions": "kafka.share.parallelism",
}
GROUP_ID = "kafka.share.group.id"
PARALLELISM = "kafka.share.parallelism"
#: options of Spark's Kafka source and of its proposed kafka-share source that this source
#: refuses, with what to do instead (a silently ignored option would surprise)
NOT_SUPPORTED: dict[str, str] = {
    "assign": "a share group subscribes to topics and the broker spreads their partitions "
    "over the members; use subscribe or subscribePattern",
    "endingOffsets": "a share group has no per-query offsets; stop the query instead",
    "startingOffsetsByTimestamp": "a new share group starts at earliest or latest "
    "(startingOffsets); move an existing one with kafka-share-groups.sh --reset-offsets",
    "startingTimestamp": "a new share group starts at earliest or latest (startingOffsets); "
    "move an existing one with kafka-share-groups.sh --reset-offsets",
    "maxOffsetsPerTrigger": "a batch takes at most kafka.share.parallelism x "
    "maxRecordsPerPartition records; set those",
    "minOffsetsPerTrigger": "a batch is planned as soon as the share group has records",
    "maxTriggerDelay": "a batch is planned as soon as the share group has records",
    "minPartitions": "set kafka.share.parallelism (read tasks per batch)",
    "failOnDataLoss": "the broker tracks the share group's progress; records deleted "
    "before they were delivered are skipped by the broker, there are no query offsets to lose",
    "kafka.group.id": "a share group is named with kafka.share.group.id",
    "groupIdPrefix": "a share group is named with kafka.share.group.id",
    "kafka.share.acknowledgment.mode": "the read tasks acknowledge every record in their "
    "transaction, committed with the batch's outputs after Spark's commit",
    "kafka.share.exactly.once.strategy": "this source is exactly once (KIP-1289), or at "
    "least once with deliverySemantics=at-least-once",
    "kafka.share.lock.timeout.ms": "the acquisition lock is the group's "
    "share.record.lock.duration.ms (kafka-configs.sh --entity-type groups)",
}


@dataclass(frozen=True, slots=True)
class SourceOptions:
    bootstrap_servers: str
    group_id: str
    topics: tuple[str, ...]
    #: the location (a local path, or the qualified URI when a checkpoint server is given)
    checkpoint: str
    #: ``maxRecordsPerPartition``; None: chosen per batch (``records_per_task``)
    max_records: int | None
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
    #: ``subscribePattern`` (then ``topics`` is empty): matched against whole topic names
    topic_pattern: str | None = None
    #: ``includeHeaders``: the schema has the ``headers`` column
    include_headers: bool = False

    @property
    def at_least_once(self) -> bool:
        return self.delivery_semantics == AT_LEAST_ONCE

    def task_count(self, partitions: int) -> int:
        """Read tasks per batch over ``partitions`` subscribed partitions.

        Exactly once, one read task unless told otherwise: the read tasks of a batch are
        short-lived share-group members and the first to join is assigned every partition,
        so more tasks mostly wait out ``pollTimeoutMs`` empty (docs/spark.md, Tuning).  At
        least once the driver acquires the batch and splits it: one task per partition.
        """
        if self.num_partitions is not None:
            return self.num_partitions
        return max(1, partitions) if self.at_least_once else 1

    def records_per_task(self, partitions: int, tasks: int) -> int:
        """``maxRecordsPerPartition``, or what the share group can lock for each task."""
        if self.max_records is not None:
            return self.max_records
        wanted = -(-AUTO_RECORDS_PER_PARTITION * max(1, partitions) // max(1, tasks))
        return min(MAX_AUTO_RECORDS, max(MIN_AUTO_RECORDS, wanted))

    def matching(self, names: Iterable[str]) -> tuple[str, ...]:
        """The subscribed topics among ``names``: ``subscribe``'s, or ``subscribePattern``'s.

        A pattern must match the whole name (as Java's ``Matcher.matches`` in Spark's
        Kafka source) and never matches an internal topic (a name starting with ``__``).
        """
        if self.topic_pattern is None:
            return self.topics
        pattern = re.compile(self.topic_pattern)
        return tuple(sorted(n for n in names if not n.startswith("__") and pattern.fullmatch(n)))

    def open_checkpoint(self) -> Checkpoint:
        """The checkpoint on its store: through the driver's server, or a local path."""
        if self.checkpoint_server is None:
            return Checkpoint.local(self.checkpoint)
        from producer.spark.fs_server import RemoteFS  # noqa: PLC0415

        return Checkpoint(self.checkpoint, RemoteFS(*self.checkpoint_server))

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        values, named, client = _collect(options)
        if not values.get("kafka.bootstrap.servers", "").strip():
            msg = (
                "kafka-share: option 'kafka.bootstrap.servers' is required "
                f"({OPTIONS['kafka.bootstrap.servers']})"
            )
            raise SparkConfigError(msg)
        if not values.get(GROUP_ID, "").strip():
            shown = repr(named[GROUP_ID]) if GROUP_ID in named else f"{GROUP_ID!r} (or 'group.id')"
            msg = f"kafka-share: option {shown} is required (the share group to consume as)"
            raise SparkConfigError(msg)
        if not values.get("checkpointLocation", "").strip():
            msg = (
                "kafka-share: option 'checkpointLocation' is required: Spark does not tell "
                "Python sources the query's checkpoint, and exactly-once needs it. Pass the "
                "same path to .option('checkpointLocation', ...) on both readStream and "
                "writeStream"
            )
            raise SparkConfigError(msg)
        topics, pattern = _subscription(values)
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
        num = values.get(PARALLELISM)
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
            group_id=values[GROUP_ID].strip(),
            topics=topics,
            checkpoint=location,
            max_records=_optional_positive(values, "maxRecordsPerPartition"),
            num_partitions=None if num is None else _positive(values, PARALLELISM, 1, named),
            prefix=check_prefix(values.get("transactional.id.prefix", DEFAULT_PREFIX)),
            poll_timeout_ms=_positive(values, "pollTimeoutMs", DEFAULT_POLL_TIMEOUT_MS),
            starting_offsets=None if starting is None else starting.lower(),
            client_config=tuple(sorted(client.items())),
            checkpoint_server=(server, token) if server else None,
            delivery_semantics=semantics,
            topic_pattern=pattern,
            include_headers=_boolean(values, "includeHeaders"),
        )


def _collect(
    options: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """(option -> value, option -> the name it was given as, security settings).

    Spark passes options case-insensitively; an alias stands for its option, and an
    option given under both names must have one value.
    """
    known = {k.lower(): k for k in OPTIONS} | {k.lower(): v for k, v in ALIASES.items()}
    refused = {k.lower(): (k, why) for k, why in NOT_SUPPORTED.items()}
    values: dict[str, str] = {}
    named: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, raw in options.items():
        low, value = key.lower(), str(raw)
        if low.startswith("kafka.") and low[6:] in SECURITY_KEYS:
            client[low[6:]] = value
            continue
        if low == "path":
            continue
        if low in refused:
            name, why = refused[low]
            msg = f"kafka-share: option {name!r} is not supported: {why}"
            raise SparkConfigError(msg)
        canonical = known.get(low)
        if canonical is None:
            hint = ", ".join(sorted([*OPTIONS, *ALIASES]))
            msg = f"kafka-share: unknown option {key!r}; the options are: {hint}"
            raise SparkConfigError(msg)
        if canonical in values and values[canonical].strip() != value.strip():
            msg = (
                f"kafka-share: options {named[canonical]!r}={values[canonical]!r} and "
                f"{key!r}={value!r} name the same setting with different values; give one"
            )
            raise SparkConfigError(msg)
        values[canonical] = value
        named.setdefault(canonical, key)
    return values, named, client


def _subscription(values: Mapping[str, str]) -> tuple[tuple[str, ...], str | None]:
    """(``subscribe``'s topics, ``subscribePattern``): exactly one of them, as Spark asks."""
    subscribe = values.get("subscribe")
    pattern = values.get("subscribePattern")
    if subscribe is not None and pattern is not None:
        msg = "kafka-share: give one of the options 'subscribe' and 'subscribePattern', not both"
        raise SparkConfigError(msg)
    if pattern is not None:
        if not pattern.strip():
            msg = "kafka-share: option 'subscribePattern' is empty"
            raise SparkConfigError(msg)
        try:
            re.compile(pattern)
        except re.error as exc:
            msg = f"kafka-share: subscribePattern {pattern!r} is not a regular expression: {exc}"
            raise SparkConfigError(msg) from exc
        return (), pattern
    if subscribe is None or not subscribe.strip():
        msg = (
            "kafka-share: option 'subscribe' (comma-separated topics) or 'subscribePattern' "
            "(a regular expression over topic names) is required"
        )
        raise SparkConfigError(msg)
    topics = tuple(t.strip() for t in subscribe.split(",") if t.strip())
    if not topics:
        msg = "kafka-share: option 'subscribe' names no topic"
        raise SparkConfigError(msg)
    return topics, None


def _boolean(values: Mapping[str, str], key: str) -> bool:
    raw = values.get(key)
    if raw is None:
        return False
    if raw.strip().lower() not in ("true", "false"):
        msg = f"kafka-share: option {key!r} must be true or false, not {raw!r}"
        raise SparkConfigError(msg)
    return raw.strip().lower() == "true"


def _optional_positive(values: Mapping[str, str], key: str) -> int | None:
    return None if values.get(key) is None else _positive(values, key, 1)


def _positive(
    values: Mapping[str, str], key: str, default: int, named: Mapping[str, str] | None = None
) -> int:
    raw = values.get(key)
    if raw is None:
        return default
    try:
        number = int(raw)
    except ValueError:
        number = 0
    if number < 1:
        name = (named or {}).get(key, key)
        msg = f"kafka-share: option {name!r} must be a positive integer, not {raw!r}"
        raise SparkConfigError(msg)
    return number


def check_prefix(raw: str) -> str:
    """A transactional id prefix: a non-empty word."""
    prefix = raw.strip()
    if not prefix or any(c.isspace() for c in prefix):
        msg = f"transactional.id.prefix must be a non-empty word, not {raw!r}"
        raise SparkConfigError(msg)
    return prefix
