#!/usr/bin/env bash
# The Spark and client tests again on the oldest releases every declared range admits
# (uv's lowest-direct resolution of pyproject.toml), in a venv of their own.
set -euo pipefail
cd "$(dirname "$0")/.."
# kio imports hypothesis when it is installed (the dev extra), and hypothesis keeps a cache in
# ./.hypothesis of the working directory: keep it out of the checkout.
export HYPOTHESIS_STORAGE_DIRECTORY="${HYPOTHESIS_STORAGE_DIRECTORY:-${TMPDIR:-/tmp}/sharetxn-hypothesis}"
venv="${SHARETXN_OLDEST_VENV:-$(mktemp -d)/oldest}"
python3 -m pip install --quiet uv
python3 -m uv venv --quiet --clear -p "$(command -v python3)" "$venv"
python3 -m uv pip install --quiet --python "$venv/bin/python" --resolution lowest-direct -e '.[dev,spark,kerberos]'
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
print("oldest:", ", ".join(f"{n} {md.version(n)}" for n in (
    "pyspark", "pyarrow", "pandas", "confluent-kafka", "opentelemetry-sdk", "rich", "pytest",
    "gssapi")))
PY
"$venv/bin/python" -m tests.spark.s3store fetch >/dev/null
"$venv/bin/python" -m chaos.cli spark-kafka-jars >/dev/null
set +e
"$venv/bin/python" -m pytest -q -p no:cacheprovider \
  tests/unit tests/spark tests/interop \
  tests/integration/test_transactional_producer.py \
  tests/integration/test_share_consumer_client.py \
  tests/integration/test_admin_client.py \
  tests/integration/test_group_consumer.py \
  tests/integration/test_client_guide.py \
  tests/integration/test_security_gssapi.py
status=$?
set -e
[ "$status" -ne 5 ] || { echo "pytest collected no tests" >&2; exit 1; }
exit "$status"
