"""Requests issue 25 found answered wrongly or with a closed connection (Kafka 4.4 answers)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from coordinator.launcher import LocalBroker
from producer.admin import Admin, TopicSpec
from tests.kafka_wire import WireClient
from txn.api_keys import ApiKey

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def broker_with_topic(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    with LocalBroker(data_dir=tmp_path_factory.mktemp("requests")) as b:
        with Admin({"bootstrap.servers": b.bootstrap_servers}) as admin:
            admin.create_topics([TopicSpec("t", 1, 1, {"retention.ms": "60000"})])
        yield b


def _configs(client: WireClient, topic: str) -> dict[str, str]:
    resp = client.request(
        32,
        4,
        {
            "resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": None}],
            "include_synonyms": False,
            "include_documentation": False,
        },
    )
    [result] = resp.results
    return {c.name: c.value for c in result.configs if int(c.config_source) == 1}


@pytest.mark.parametrize("version", [0, 1, 2])
def test_alter_configs_is_served(broker_with_topic: LocalBroker, version: int) -> None:
    """Kafka's legacy AlterConfigs: the topic's configs become exactly those given."""
    client = WireClient(broker_with_topic.bootstrap_servers)
    try:
        body = {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "t",
                    "configs": [{"name": "cleanup.policy", "value": "compact"}],
                },
                {"resource_type": 2, "resource_name": "absent", "configs": []},
                {"resource_type": 4, "resource_name": "0", "configs": []},
            ],
            "validate_only": False,
        }
        answer = client.request(33, version, body)
        codes = [int(r.error_code) for r in answer.responses]
        assert codes == [0, 3, 42]  # NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_REQUEST
        assert _configs(client, "t") == {"cleanup.policy": "compact"}  # retention.ms went
        bad = {"name": "retention.ms", "value": "soon"}
        body["resources"] = [{"resource_type": 2, "resource_name": "t", "configs": [bad]}]
        assert int(client.request(33, version, body).responses[0].error_code) == 40
        body["resources"][0]["configs"] = [{"name": "retention.ms", "value": "60000"}]
        assert int(client.request(33, version, body).responses[0].error_code) == 0
        assert _configs(client, "t") == {"retention.ms": "60000"}
    finally:
        client.close()


def test_txn_share_acknowledge_with_the_zero_topic_id(broker_with_topic: LocalBroker) -> None:
    """UNKNOWN_TOPIC_ID for its partitions (as Kafka's ShareAcknowledge), not a failure."""
    client = WireClient(broker_with_topic.bootstrap_servers)
    try:
        batch = {"first_offset": 0, "last_offset": 0, "acknowledge_type": 1}
        answer = client.request(
            ApiKey.TXN_SHARE_ACKNOWLEDGE,
            0,
            {
                "group_id": "g",
                "transactional_id": "tx",
                "producer_id": 1,
                "producer_epoch": 0,
                "member_id": "m",
                "topics": [
                    {
                        "topic_id": uuid.UUID(int=0),
                        "partitions": [
                            {"partition": 0, "acknowledgement_batches": [batch]},
                            {"partition": 1, "acknowledgement_batches": [batch]},
                        ],
                    }
                ],
            },
        )
        [topic] = answer.topics
        assert [int(p.error_code) for p in topic.partitions] == [100, 100]  # UNKNOWN_TOPIC_ID
        assert int(client.request(18, 3, {"client_software_name": "t"}).error_code) == 0
    finally:
        client.close()
