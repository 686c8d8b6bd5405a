"""Hostile but well-formed group requests: the broker answers each and keeps serving."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.launcher import LocalBroker
from tests.integration.test_bad_input import _still_serves
from tests.kafka_wire import WireClient

pytestmark = pytest.mark.integration

ids = st.text(min_size=0, max_size=40)
ints = st.integers(min_value=-(2**31), max_value=2**31 - 1)
blobs = st.binary(max_size=300)


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    config = {"group.initial.rebalance.delay.ms": "0", "group.min.session.timeout.ms": "1"}
    with LocalBroker(data_dir=Path(tmp_path_factory.mktemp("grp")), config=config) as b:
        yield b


def partitions(draw: st.DrawFn) -> list[dict[str, Any]]:
    return [
        {
            "name": draw(st.sampled_from(["t", "", "x" * 300])),
            "partitions": [
                {
                    "partition_index": draw(ints),
                    "committed_offset": draw(st.integers(-(2**63), 2**63 - 1)),
                    "committed_leader_epoch": draw(ints),
                    "committed_metadata": draw(st.one_of(st.none(), st.text(max_size=50))),
                }
                for _ in range(draw(st.integers(0, 3)))
            ],
        }
        for _ in range(draw(st.integers(0, 2)))
    ]


def member_fields(
    group: str,
    member: str,
    generation: int,
    instance: str | None = None,
    generation_key: str = "generation_id",
) -> dict[str, Any]:
    """Who a classic-group request comes from: group, generation, member and instance ids."""
    return {
        "group_id": group,
        generation_key: generation,
        "member_id": member,
        "group_instance_id": instance,
    }


def join_body(
    group: str,
    member: str,
    timeouts: tuple[int, int],
    instance: str | None,
    protocol_type: str,
    protocols: list[dict[str, Any]],
) -> dict[str, Any]:
    """A JoinGroup v9 body; ``timeouts``: (session, rebalance) in ms."""
    session_timeout, rebalance_timeout = timeouts
    return {
        "group_id": group,
        "session_timeout": session_timeout,
        "rebalance_timeout": rebalance_timeout,
        "member_id": member,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocols": protocols,
        "reason": None,
    }


def commit_body(
    group: str, member: str, generation: int, topics: list[dict[str, Any]]
) -> dict[str, Any]:
    """An OffsetCommit v9 body."""
    epoch_key = "generation_id_or_member_epoch"
    return {**member_fields(group, member, generation, generation_key=epoch_key), "topics": topics}


@st.composite
def requests(draw: st.DrawFn) -> tuple[int, int, dict[str, Any]]:
    kind = draw(
        st.sampled_from(
            [
                "join",
                "sync",
                "heartbeat",
                "leave",
                "commit",
                "fetch",
                "delete",
                "cgh",
                "txn-commit",
                "describe",
            ]
        )
    )
    group = draw(ids)
    member = draw(ids)
    if kind == "join":
        timeouts = (draw(st.integers(1, 2000)), draw(st.integers(1, 500)))
        instance = draw(st.one_of(st.none(), ids))
        protocol_type = draw(st.sampled_from(["consumer", "", "connect"]))
        protocols = [
            {"name": draw(ids), "metadata": draw(blobs)} for _ in range(draw(st.integers(0, 3)))
        ]
        return 11, 9, join_body(group, member, timeouts, instance, protocol_type, protocols)
    if kind == "sync":
        return (
            14,
            5,
            {
                **member_fields(group, member, draw(ints)),
                "protocol_type": None,
                "protocol_name": None,
                "assignments": [{"member_id": draw(ids), "assignment": draw(blobs)}],
            },
        )
    if kind == "heartbeat":
        return 12, 4, member_fields(group, member, draw(ints), draw(st.one_of(st.none(), ids)))
    if kind == "leave":
        return (
            13,
            5,
            {
                "group_id": group,
                "members": [
                    {
                        "member_id": draw(ids),
                        "group_instance_id": draw(st.one_of(st.none(), ids)),
                        "reason": None,
                    }
                    for _ in range(draw(st.integers(0, 3)))
                ],
            },
        )
    if kind == "commit":
        return 8, 9, commit_body(group, member, draw(ints), partitions(draw))
    if kind == "txn-commit":
        return (
            28,
            4,
            {
                "transactional_id": draw(ids),
                "group_id": group,
                "producer_id": draw(st.integers(-1, 2**40)),
                "producer_epoch": draw(st.integers(-1, 32767)),
                **member_fields(group, member, draw(ints)),
                "topics": partitions(draw),
            },
        )
    if kind == "fetch":
        return (
            9,
            9,
            {
                "groups": [
                    {"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}
                ],
                "require_stable": draw(st.booleans()),
            },
        )
    if kind == "delete":
        return (
            47,
            0,
            {
                "group_id": group,
                "topics": [{"name": "t", "partitions": [{"partition_index": draw(ints)}]}],
            },
        )
    if kind == "describe":
        return 69, 1, {"group_ids": [group], "include_authorized_operations": False}
    return (
        68,
        1,
        {
            "group_id": group,
            "member_id": member,
            "member_epoch": draw(ints),
            "instance_id": None,
            "rack_id": None,
            "rebalance_timeout": draw(st.integers(-1, 1000)),
            "subscribed_topic_names": draw(st.one_of(st.none(), st.lists(ids, max_size=3))),
            "subscribed_topic_regex": None,
            "server_assignor": draw(st.sampled_from([None, "uniform", "range", "x"])),
            "topic_partitions": draw(
                st.one_of(
                    st.none(),
                    st.lists(
                        st.builds(
                            lambda t, ps: {"topic_id": t, "partitions": ps},
                            st.uuids(),
                            st.lists(ints, max_size=3),
                        ),
                        max_size=2,
                    ),
                )
            ),
        },
    )


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(request=requests())
def test_group_requests_are_answered_and_the_broker_keeps_serving(
    group_broker: LocalBroker, request: tuple[int, int, dict[str, Any]]
) -> None:
    api_key, version, body = request
    client = WireClient(group_broker.bootstrap_servers, timeout_s=3)
    try:
        client.request(api_key, version, body)
    except TimeoutError:
        assert api_key in (11, 14)  # a join or sync may wait for its rebalance
    finally:
        client.close()
    _still_serves(group_broker.bootstrap_servers)


def test_many_members_and_large_metadata_stay_bounded(group_broker: LocalBroker) -> None:
    group = f"big-{uuid.uuid4().hex[:6]}"
    client = WireClient(group_broker.bootstrap_servers, timeout_s=10)
    try:
        for _ in range(50):
            protocols = [{"name": "range", "metadata": b"\x00" * 100_000}]
            join = join_body(group, "", (1000, 1000), None, "consumer", protocols)
            resp = client.request(11, 9, join)
            assert int(resp.error_code) == 79  # MEMBER_ID_REQUIRED: pending, not yet a member
        big = {
            "partition_index": 0,
            "committed_offset": 1,
            "committed_leader_epoch": -1,
            "committed_metadata": "m" * 5000,
        }
        # an existing topic: a commit to an unknown one is UNKNOWN_TOPIC_OR_PARTITION first
        topic = {
            "name": group,
            "num_partitions": 1,
            "replication_factor": 1,
            "assignments": [],
            "configs": [],
        }
        created = client.request(19, 7, {"topics": [topic], "timeout": 10000})
        assert int(created.topics[0].error_code) == 0
        topics = [{"name": group, "partitions": [big]}]
        resp = client.request(8, 9, commit_body(group, "", -1, topics))
        assert int(resp.topics[0].partitions[0].error_code) == 12  # OFFSET_METADATA_TOO_LARGE
    finally:
        client.close()
    _still_serves(group_broker.bootstrap_servers)
