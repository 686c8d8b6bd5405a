"""The consumers: ``ShareConsumer`` (KIP-932) and ``GroupConsumer`` (KIP-848).

``share_consumer`` with its config, in-flight bookkeeping and membership
(``share_consumer_config``, ``share_inflight``, ``share_membership``); ``group_consumer`` with
``group_membership``; the heartbeat thread and back-off both memberships use.
"""
