"""A producer process that sends in a transaction and dies without ending it.

python -m tests.reference.open_txn_worker BOOTSTRAP TOPIC TID
"""

from __future__ import annotations

import os
import sys

from producer import TransactionalProducer


def main(argv: list[str]) -> None:
    bootstrap, topic, tid = argv
    p = TransactionalProducer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, b"open", partition=0)
    p.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1:])
