"""Two-phase commit of prepared transactions, below both the Spark integration and the tool.

What ``producer.spark`` (the exactly-once sink's commit phase and the source's start-up
recovery) and ``recovery`` (``sharetxn recover`` and ``sharetxn txn``) share:

* ``checkpoint_fs``, ``hadoop_fs``: the file systems a checkpoint lives on;
* ``spark_checkpoint``: the files next to a Spark checkpoint (``intents/N``,
  ``committing/N``, ``resolved/N``) and the decision rule that reads them;
* ``audit``: the JSONL audit log of every action;
* ``model``, ``scan``, ``outcome``: what the coordinator says about a transaction;
* ``plan``, ``recover``: the steps the decision rule turns into;
* ``resume``: resume a prepared transaction and end it, and what became of it (the one
  decider both the sink's commit and ``recover --apply`` use);
* ``execute``: the executor of planned steps (compare-and-set, audit, resume-and-end);
* ``query_checkpoint``, ``commit_phase``, ``startup``, ``errors``: a Spark query's
  checkpoint location, the commit phase of its decided batches (write-ahead, resume and
  commit, ``resolved/N``) and its start-up recovery, with the errors they raise.

It imports only ``producer`` (the client library) and ``txn``; never ``producer.spark``,
``recovery`` or ``coordinator``.
"""
