#!/usr/bin/env bash
# The README's test command: install everything the tests need (dev/setup.sh), then run
# every test.  Arguments go to pytest.  pytest's exit code 5 (no test collected) fails.
set -euo pipefail
cd "$(dirname "$0")/.."
# kio imports hypothesis when it is installed (the dev extra), and hypothesis keeps a cache in
# ./.hypothesis of the working directory: keep it out of the checkout.
export HYPOTHESIS_STORAGE_DIRECTORY="${HYPOTHESIS_STORAGE_DIRECTORY:-${TMPDIR:-/tmp}/sharetxn-hypothesis}"
bash dev/setup.sh
set +e
python3 -m pytest -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests" >&2
  exit 1
fi
exit "$status"
