"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-599): the quota entities recorded in
``__cluster_metadata`` (``entities``), the windowed rates Kafka's quota managers measure
(``rates``) and the managers that turn a client's usage into a throttle time
(``managers``).  Everything here is sans-IO and reads time from the broker's Clock; the server
only applies the mute a throttle time asks for."""
