"""Consumer groups: the classic rebalance protocol, committed and transactional offsets, KIP-496.

``records`` holds Kafka's ``__consumer_offsets`` record schemas, ``classic`` the classic
group's states and members, ``offsets`` the committed and pending offsets, and
``coordinator`` the sans-I/O coordinator that ties them to one durable log.
"""
