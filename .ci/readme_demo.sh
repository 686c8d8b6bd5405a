#!/usr/bin/env bash
# The README's first command, verbatim, in a brand-new venv; then the demo's own verdict:
# duplicates 0, lost 0, at least one driver SIGKILL.
set -euo pipefail
cd "$(dirname "$0")/.."
command=$(awk '/^```bash$/ {inside=1; next} /^```$/ {if (inside) exit} inside' README.md)
echo "README command 1: $command"
venv="$(mktemp -d)/readme"
python3 -m venv "$venv"
out="$(mktemp)"
(
  # shellcheck disable=SC1091
  source "$venv/bin/activate"
  export COLUMNS=120
  eval "$command"
) 2>&1 | tee "$out" | tail -25
python3 - "$out" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
def cell(name: str) -> str:
    for line in text.splitlines():
        if re.search(rf"│ {re.escape(name)} +│", line):
            return line.split("│")[2].strip()
    sys.exit(f"the demo printed no {name!r} row")
problems = [n for n in ("duplicates", "lost") if cell(n) != "0"]
kills = int(cell("driver SIGKILLs").split()[0])
if kills < 1:
    problems.append("no driver SIGKILL")
if "exactly once: every input is in the output once" not in text:
    problems.append("no exactly-once verdict")
if problems:
    sys.exit(f"README command 1: {', '.join(problems)}")
print(f"README command 1: exactly once with {kills} driver SIGKILL(s)")
PY
