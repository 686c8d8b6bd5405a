"""The guide's exactly-once query over SASL/SCRAM with ACLs on (only the rights it needs).

The broker has a PLAINTEXT listener for the test's own setup and verification
(its anonymous principal is a super user here) and a SASL_PLAINTEXT one for the
query, whose SCRAM user ``spark`` holds exactly the ACLs docs/security.md lists.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from coordinator.launcher import LocalBroker
from producer.spark.demo import prepare_input
from tests.spark_guide import guide_example, run_guide_script, verify_orders

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

CONFIG = {
    "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}
SECURITY = {
    "security.protocol": "SASL_PLAINTEXT",
    "sasl.mechanism": "SCRAM-SHA-256",
    "sasl.username": "spark",
    "sasl.password": "spark-secret",
}
# (resource type, name, pattern, operation): what the query needs, nothing more.
RIGHTS = [
    (ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, AclOperation.READ),
    (ResourceType.TOPIC, "orders-enriched", ResourcePatternType.LITERAL, AclOperation.WRITE),
    (ResourceType.GROUP, "orders-enrich", ResourcePatternType.LITERAL, AclOperation.READ),
    (ResourceType.GROUP, "orders-enrich", ResourcePatternType.LITERAL, AclOperation.ALTER_CONFIGS),
    (
        ResourceType.TRANSACTIONAL_ID,
        "sharetxn-spark-",
        ResourcePatternType.PREFIXED,
        AclOperation.WRITE,
    ),
    (ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, AclOperation.DESCRIBE),
]


def test_guide_query_over_scram_with_acls(tmp_path: Path) -> None:
    users = ["--add-scram", "SCRAM-SHA-256=[name=spark,password=spark-secret]"]
    with LocalBroker(data_dir=tmp_path / "b", config=CONFIG, extra_args=users) as broker:
        plain = broker.listener_bootstrap("PLAINTEXT")
        admin = AdminClient({"bootstrap.servers": plain})
        bindings = [
            AclBinding(t, n, p, "User:spark", "*", op, AclPermissionType.ALLOW)
            for t, n, p, op in RIGHTS
        ]
        for future in admin.create_acls(bindings).values():
            future.result(10)
        prepare_input(plain, 1_000, topic="orders", output="orders-enriched")
        script = guide_example("spark")
        # Configured once: the source takes the security settings from the ExactlyOnce.
        edits = {
            '"127.0.0.1:9092"': repr(broker.listener_bootstrap("SASL_PLAINTEXT")),
            "/var/lib/pipelines/orders-enrich": str(tmp_path / "chk"),
            "checkpoint_location=CHECKPOINT)": f"checkpoint_location=CHECKPOINT, "
            f"producer_config={SECURITY!r})",
        }
        for old, new in edits.items():
            assert old in script, old
            script = script.replace(old, new)
        run_guide_script(tmp_path / "secure_guide.py", script)
        verdict = verify_orders(plain)
        assert verdict.exactly_once, verdict
