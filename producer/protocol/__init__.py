"""The client's protocol layer: connections, request routing and the shared vocabulary.

``connection`` (one broker, API versions, SASL/TLS from ``security``), ``client`` (bootstrap,
metadata, coordinators, retries), ``raw`` (responses kio cannot decode), ``records``
(RecordBatch v2 decoding), ``types`` (values the producer, consumers and admin share), and the
config helpers every client uses (``client_defaults``, ``config_values``).
"""
