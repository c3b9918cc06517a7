#!/bin/sh
# install-pydeps.sh: makes the virtual environment .venv at the repository root (Debian's
# python3-venv) and installs the Python packages the tests need, pinned in
# scripts/requirements-test.txt, and PyTorch (scripts/requirements-torch.txt: tasks with a PyTorch
# reference; TEMPER_NO_TORCH=1 leaves it out). Tests use .venv/bin/python3 and skip, saying why,
# without it.
# Safe to run again.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$root/.venv/bin/python3" ]; then
    python3 -m venv "$root/.venv"
fi
"$root/.venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$root/scripts/requirements-test.txt"
if [ "${TEMPER_NO_TORCH:-0}" != 1 ]; then
    "$root/.venv/bin/python3" -m pip install -q --disable-pip-version-check -r "$root/scripts/requirements-torch.txt"
fi
