"""``sharetxn sink run`` in a child process with one injected fault (so a test can kill -9 it).

    python -m tests.integration.sink_child MARKER CONFIG.properties [sink run options]

The first ``commit_transaction`` of the process touches MARKER and then blocks: the batch's
outputs are produced and its share acknowledgements are pending in the transaction, which
the test kills before it commits.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from chaos.cli.main import main
from producer.produce.transactional_producer import TransactionalProducer


def _install(marker: str) -> None:
    real = TransactionalProducer.commit_transaction
    fired: list[bool] = []

    def commit_transaction(self: TransactionalProducer, timeout_s: float | None = None) -> Any:
        if not fired:
            fired.append(True)
            self.flush()
            Path(marker).write_text(str(os.getpid()), encoding="utf-8")
            while True:
                time.sleep(1)
        return real(self, timeout_s)

    TransactionalProducer.commit_transaction = commit_transaction  # type: ignore[method-assign]


if __name__ == "__main__":
    _install(sys.argv[1])
    sys.exit(main(["sink", "run", *sys.argv[2:]]))
