#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine, then the project itself:
#   - kcat (the interop tests), a JDK with javac (PySpark, Apache Kafka and its Java
#     clients for the reference tests), Maven (resolves Java artifacts), with apt-get when
#     they are missing (root, or sudo);
#   - MIT Kerberos' KDC and headers (the GSSAPI tests start a KDC of their own; the gssapi
#     package builds against libkrb5-dev with gcc);
#   - sharetxn with its dev, spark and kerberos extras, in the current Python environment;
#   - the Maven artifacts, once, into ~/.cache/sharetxn ($SHARETXN_KAFKA_CACHE): Apache
#     Kafka 4.4's jars, the s3a file system of PySpark's Hadoop, Spark's Kafka connector.
# Used by dev/test.sh (the README's test command) and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."
# kio imports hypothesis when it is installed (the dev extra), and hypothesis keeps a cache in
# ./.hypothesis of the working directory: keep it out of the checkout.
export HYPOTHESIS_STORAGE_DIRECTORY="${HYPOTHESIS_STORAGE_DIRECTORY:-${TMPDIR:-/tmp}/sharetxn-hypothesis}"

need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
# SASL/GSSAPI: the tests run their own KDC; the gssapi package builds against libkrb5-dev.
sbin="$PATH:/usr/sbin:/sbin"
PATH="$sbin" command -v krb5kdc >/dev/null 2>&1 || need+=(krb5-kdc)
PATH="$sbin" command -v kadmin.local >/dev/null 2>&1 || need+=(krb5-admin-server)
command -v krb5-config >/dev/null 2>&1 || need+=(libkrb5-dev)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
if [ "${#need[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "dev/setup.sh: install ${need[*]} (this is not a Debian machine)" >&2
    exit 1
  fi
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "dev/setup.sh: apt-get install ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi
for tool in kcat java javac mvn; do
  command -v "$tool" >/dev/null || { echo "dev/setup.sh: $tool could not be installed" >&2; exit 1; }
done

python3 -m pip install --quiet --upgrade pip
python3 -m pip install --quiet -e '.[dev,spark,kerberos]'

python3 -m tests.reference.kafka fetch >/dev/null
python3 -m tests.spark.s3store fetch >/dev/null
python3 -m chaos.cli spark-kafka-jars >/dev/null
