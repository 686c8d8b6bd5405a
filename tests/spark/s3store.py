"""An S3-compatible server on 127.0.0.1 and the s3a file system, for checkpoints on S3.

``MotoS3`` runs ``moto``'s S3 server (from PyPI) as a process on a free port and creates a
bucket.  The s3a file system's jars — hadoop-aws of the Hadoop that PySpark bundles and the
AWS SDK bundle it was built against — come from Maven Central through the small pom in
``s3/``, copied by ``mvn dependency:copy-dependencies`` into a cache outside the repository
(``$SHARETXN_KAFKA_CACHE`` or ``~/.cache/sharetxn``, like tests/reference/kafka.py).

    python -m tests.spark.s3store fetch     # resolve the jars into the cache
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

from tests.reference.kafka import cache_root, resolve_with_mvn

POM = Path(__file__).parent / "s3" / "pom.xml"
#: The AWS SDK v2 bundle each Hadoop release was built against (its hadoop-project pom).
AWS_SDK_OF_HADOOP = {"3.4.1": "2.24.6", "3.4.2": "2.29.52", "3.5.0": "2.35.4"}
#: The S3 analytics accelerator that Hadoop 3.5's s3a loads (none before 3.5).
ANALYTICS_OF_HADOOP = {"3.5.0": "1.3.1"}


def hadoop_version() -> str:
    """The Hadoop release the installed PySpark bundles (its ``hadoop-client-api`` jar)."""
    import pyspark  # noqa: PLC0415 - the Spark tests' optional dependency

    jars = Path(pyspark.__file__).parent / "jars"
    for jar in jars.glob("hadoop-client-api-*.jar"):
        return jar.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    msg = f"no hadoop-client-api jar in {jars}"
    raise S3Error(msg)


ACCESS_KEY = "sharetxn-test"
SECRET_KEY = "sharetxn-test-secret"
BUCKET = "sharetxn-checkpoints"


class S3Error(RuntimeError):
    pass


def jars_dir() -> Path:
    return cache_root() / f"spark-s3a-{hadoop_version()}"


def ensure_jars() -> Path:
    """The directory holding hadoop-aws and the AWS SDK bundle, resolved by mvn once."""
    hadoop = hadoop_version()
    if hadoop not in AWS_SDK_OF_HADOOP:
        msg = f"Hadoop {hadoop} (from PySpark): add its AWS SDK version to AWS_SDK_OF_HADOOP"
        raise S3Error(msg)
    return resolve_with_mvn(
        POM,
        jars_dir(),
        f"hadoop-aws {hadoop}",
        properties={
            "hadoop.version": hadoop,
            "aws.sdk.version": AWS_SDK_OF_HADOOP[hadoop],
            **(
                {"analytics.version": ANALYTICS_OF_HADOOP[hadoop]}
                if hadoop in ANALYTICS_OF_HADOOP
                else {}
            ),
        },
        error=S3Error,
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoS3:
    """``moto_server`` on 127.0.0.1 with one bucket; stopped on exit."""

    def __init__(self, log_path: Path) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> MotoS3:
        log = self.log_path.open("wb")
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5),
            ):
                break
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                msg = f"moto did not start: {self.log_path.read_text(errors='replace')}"
                raise S3Error(msg)
            time.sleep(0.1)
        self.client().create_bucket(Bucket=BUCKET)
        return self

    def client(self):  # type: ignore[no-untyped-def]  # boto3 has no stubs
        import boto3  # noqa: PLC0415

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def keys(self, prefix: str) -> list[str]:
        listing = self.client().list_objects_v2(Bucket=BUCKET, Prefix=prefix)
        return sorted(o["Key"] for o in listing.get("Contents", []))

    def uri(self, path: str) -> str:
        return f"s3a://{BUCKET}/{path.strip('/')}"

    def spark_conf(self) -> dict[str, str]:
        """Spark settings for s3a against this server (jars on the driver's classpath)."""
        jars = f"{ensure_jars()}/*"
        prefix = "spark.hadoop.fs.s3a."
        return {
            "spark.driver.extraClassPath": jars,
            "spark.executor.extraClassPath": jars,
            prefix + "endpoint": self.endpoint,
            prefix + "endpoint.region": "us-east-1",
            prefix + "path.style.access": "true",
            prefix + "connection.ssl.enabled": "false",
            prefix + "access.key": ACCESS_KEY,
            prefix + "secret.key": SECRET_KEY,
            prefix + "aws.credentials.provider": (
                "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
            ),
            prefix + "change.detection.mode": "none",
        }

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args != ["fetch"]:
        print("usage: python -m tests.spark.s3store fetch", file=sys.stderr)
        return 64
    print(ensure_jars())
    return 0


if __name__ == "__main__":
    sys.exit(main())
