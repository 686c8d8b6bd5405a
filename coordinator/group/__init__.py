"""Consumer groups: the classic rebalance protocol, committed and transactional offsets, KIP-496.

``records`` holds Kafka's ``__consumer_offsets`` record schemas, ``classic`` the classic
group's states and members, ``offsets`` the committed and pending offsets, ``shard`` the
log-backed state (a membership manager and an offset manager, changed only by replay), and
``coordinator`` the sans-I/O coordinator that runs it on its runtime over one durable log.
"""
