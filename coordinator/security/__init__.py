"""Security: listeners and TLS, SASL authentication, and ACL authorization.

``listeners`` parses Kafka's listener configs; ``tls`` builds the server's SSL
context from PEM and names a client by its certificate's DN; ``sasl`` and
``scram`` are sans-IO SASL servers (PLAIN, SCRAM-SHA-256/512); ``acls`` is the
sans-IO authorizer; ``store`` keeps SCRAM credentials and ACLs durably; ``tokens`` and
``token_store`` keep delegation tokens (KIP-48) in the metadata log.
The request-level parts live with the Kafka-protocol adapter:
``coordinator.protocol.security_gate`` sits between the server and the handlers,
runs the SASL exchange of each connection and checks every request against
Kafka's operation/resource table (``coordinator.protocol.acl_rules``).
"""
