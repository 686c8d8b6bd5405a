"""The producer: ``TransactionalProducer`` and its record path.

``producer_config`` (Kafka's producer configs), ``accumulator`` and ``sender`` (batches and
the background sender), ``txn_manager`` (the transaction state machine), ``producer_core``
(what every producer shares), ``txn_group_requests`` (TxnOffsetCommit, TxnShareAcknowledge),
``prepared_txn`` (two-phase commit, KIP-939/KIP-1310) and ``transactional_producer``.
"""
