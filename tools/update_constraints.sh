#!/usr/bin/env bash
# Re-resolve kgrag's dependencies to their newest versions in a fresh virtual environment, run the README's
# test command there, and only when it passes rewrite constraints.txt with the versions it passed with.
#   tools/update_constraints.sh            # (or `make constraints`)
# Every extra in pyproject.toml is installed, so a dependency an extra adds is pinned too.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
"$python" -m venv "$scratch/venv"
extras=$("$scratch/venv/bin/python" -c 'import tomllib; print(",".join(tomllib.load(open("pyproject.toml", "rb"))["project"].get("optional-dependencies", {})))')
"$scratch/venv/bin/pip" install -q --upgrade pip
"$scratch/venv/bin/pip" install -q -e ".[$extras]"
"$scratch/venv/bin/pip" check
"$scratch/venv/bin/python" -m pytest
"$scratch/venv/bin/python" tools/constraints.py > constraints.txt.new
mv constraints.txt.new constraints.txt
git --no-pager diff --stat -- constraints.txt || true
echo "constraints.txt: the versions the suite just passed with; commit it"
