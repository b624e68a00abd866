#!/bin/bash
# Fills .whl/ (git-ignored) with the wheels a lent GPU machine lacks, for its
# Python 3.12 on x86-64, at requirements/lock.txt's versions: ml-collections
# (every config), highspy (the LP's HiGHS checks) and gguf (the real heads);
# with `peers`, also MPAX at benchmarks/lp_vs_peers.py's version. Their needs
# (absl-py, pyyaml, numpy, tqdm, jax) are in that machine's image. Run here,
# where pip reaches PyPI, before the first `run` call that carries .whl:
#
#   bash tools/gpu_wheels.sh [peers]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-python3}
locked() {  # NAME==VERSION as requirements/lock.txt pins it.
  grep -i -m1 "^$1==" requirements/lock.txt ||
    { echo "error: $1 is not pinned in requirements/lock.txt" >&2; exit 1; }
}
wanted=("$(locked ml-collections)" "$(locked highspy)" "$(locked gguf)")
[ "${1:-}" = peers ] && wanted+=("mpax==0.2.4")
platforms=()
for p in manylinux_2_28 manylinux_2_27 manylinux_2_17 manylinux2014 \
         manylinux1; do
  platforms+=(--platform "${p}_x86_64")
done
rm -rf .whl
$PY -m pip download -q --disable-pip-version-check --no-deps \
    --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d .whl "${wanted[@]}"
ls -l .whl
du -sh .whl
