"""The Kafka-protocol adapter: frames in, the broker core's calls, frames out.

``server`` owns the sockets and the request loop; ``wire`` decodes request frames and renders
version-free responses; the ``*_handlers`` modules map each API family onto the sans-IO core
(``coordinator.broker`` and its coordinators); ``security_gate`` and the ``acl_*`` modules
authenticate connections and authorize requests with the core's authorizer
(``coordinator.security``).  Nothing below this package imports it.
"""
