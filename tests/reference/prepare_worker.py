"""A client process for the two-phase-commit tests: prepare, report, wait to be killed.

    python -m tests.reference.prepare_worker BOOTSTRAP TID TOPIC CONFIG_JSON VALUE...

Sends VALUEs to partition 0 of TOPIC in one transaction of TID, prepares it, prints one
JSON line ``{"state": str(PreparedTxnState), "protocol": ...}`` and sleeps until killed:
the prepared transaction is left as a crashed application leaves it.
"""

from __future__ import annotations

import json
import sys
import time

from producer.produce.transactional_producer import TransactionalProducer


def main(argv: list[str]) -> int:
    bootstrap, tid, topic, config, *values = argv
    producer = TransactionalProducer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": tid,
            "transaction.two.phase.commit.enable": True,
            **json.loads(config),
        }
    )
    producer.init_transactions()
    producer.begin_transaction()
    for value in values:
        producer.send(topic, value.encode(), partition=0)
    state = producer.prepare_transaction()
    report = {"state": str(state), "protocol": producer.two_phase_commit_protocol}
    print(json.dumps(report), flush=True)
    time.sleep(600)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
