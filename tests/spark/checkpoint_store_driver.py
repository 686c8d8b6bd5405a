"""A Spark driver that exercises ``HadoopFS`` on ``file://`` and on ``s3a://``.

    python checkpoint_store_driver.py CONF_JSON LOCAL_DIR S3A_URI

Run by test_checkpoint_store.py in a subprocess (its own JVM, with the s3a jars on the
classpath).  Exits non-zero with the failure; prints ``OK {json}`` on success.
"""

from __future__ import annotations

import json
import sys

from producer.spark.fs_server import CheckpointServer, RemoteFS
from producer.spark.job import spark_session
from producer.twophase.hadoop_fs import HadoopFS
from producer.twophase.spark_checkpoint import (
    Intent,
    IntentTransaction,
    read_checkpoint,
    write_intent,
)
from tests.unit.recovery.test_checkpoint_fs import exercise


def main() -> None:
    conf, local_dir, s3_uri = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
    spark = spark_session("local[1]", conf=conf)
    on_file = HadoopFS.for_session(spark, f"file://{local_dir}")
    assert on_file.root.startswith("file:/"), on_file.root
    exercise(on_file, on_file.root)
    plain = HadoopFS.for_session(spark, local_dir)  # qualified as Spark qualifies it
    assert plain.root == on_file.root, (plain.root, on_file.root)

    on_s3 = HadoopFS.for_session(spark, s3_uri)
    exercise(on_s3, on_s3.root)
    # A checkpoint on S3, read through the driver's server as the source's reader does.
    server = CheckpointServer(on_s3, {"checkpointLocation": on_s3.root})
    remote = RemoteFS(server.address, server.token)
    exercise(remote, on_s3.root + "/remote")
    chk = on_s3.root + "/chk"
    remote.write_atomic(chk + "/metadata", b'{"id":"q-s3"}\n')
    remote.write_atomic(chk + "/commits/0", b"v1\n{}\n")
    write_intent(chk, Intent(0, (IntentTransaction("t-0", 5, 1, "w"),), "q-s3"), on_s3)
    view = read_checkpoint(chk, fs=remote)
    assert view.query_id == "q-s3" and list(view.intents) == [0] and view.commits == {0}
    server.close()
    print(
        "OK " + json.dumps({"file": on_file.manager_class, "s3a": on_s3.manager_class}),
        flush=True,
    )
    spark.stop()


if __name__ == "__main__":
    main()
