"""Kafka API handlers: decoded kio requests in, version-free typed responses out.

The thin adapter between the wire and ``BrokerCore``, split by API family: cluster and
metadata (``cluster_handlers``), topic administration (``topic_handlers``), the data path
(``data_handlers``), transactions (``txn_handlers``), consumer groups (``group_handlers``) and
share groups with KIP-1289 (``share_handlers``).  Each handler reads its request through the
version-free view of its API (``*request_views``; ``wire.optional`` reads a field some
versions lack, with a declared type), calls the core and returns a typed message
(``*_messages.py``; a dict in the families not yet typed) that ``wire.render`` turns into the
negotiated response version.  Fetch and ShareFetch long-poll until data arrives or
``max_wait`` passes on the broker's Clock.
"""

from __future__ import annotations

from coordinator.broker import BrokerCore
from coordinator.log.group_commit import GroupCommit
from coordinator.protocol.cluster_handlers import ClusterHandlers
from coordinator.protocol.data_handlers import DataHandlers
from coordinator.protocol.group_handlers import GroupHandlers
from coordinator.protocol.responses import Handler, WaitForAppend
from coordinator.protocol.share_handlers import ShareHandlers
from coordinator.protocol.topic_handlers import TopicHandlers
from coordinator.protocol.txn_handlers import TxnHandlers


class Handlers:
    """Dispatch table for the APIs in ``api_versions.SUPPORTED``."""

    def __init__(
        self,
        core: BrokerCore,
        host: str,
        port: int,
        wait_for_append: WaitForAppend,
        group_commit: GroupCommit | None = None,
    ) -> None:
        self.core = core
        self.group_commit = group_commit or GroupCommit()
        self.share = ShareHandlers(core, wait_for_append, self.endpoint)
        self.cluster = ClusterHandlers(core, host, port, self.share)
        self.groups = GroupHandlers(core)
        self.table: dict[int, Handler] = {}
        for family in (
            self.cluster,
            TopicHandlers(core),
            DataHandlers(core, wait_for_append, self.group_commit),
            TxnHandlers(core),
            self.share,
            self.groups,
        ):
            self.table.update(family.table)

    def set_address(self, host: str, port: int) -> None:
        """The address advertised when a request's listener is not known (tests, one listener)."""
        self.cluster.host, self.cluster.port = host, port

    def endpoint(self) -> tuple[str, int]:
        """The advertised address of the listener the current request came in on."""
        return self.cluster.endpoint()
