#!/bin/sh
# Runs every command of the README as written (from the repository root,
# after `sh run.sh setup`) under /usr/bin/time and prints one line per
# command: wall seconds, peak RSS (GB), exit status. Outputs go to a
# scratch folder (RUNS), not the repository.
#   sh benchmarks/readme_commands.sh > benchmarks/readme_commands.txt
set -u
cd "$(dirname "$0")/.."
RUNS=${RUNS:-/tmp/readme_commands}
rm -rf "$RUNS" && mkdir -p "$RUNS"
echo "# $(date -u +%F) $(uname -n) $(nproc) cores, commit $(git rev-parse --short HEAD)"
t() {
  /usr/bin/time -f "%e %M %x" -o "$RUNS/time" "$@" > "$RUNS/out" 2> "$RUNS/err"
  read -r wall kb rc < "$RUNS/time"
  echo "$(printf '%7.1f s %5.2f GB rc=%s' "$wall" "$(echo "$kb/1048576" | bc -l)" "$rc")  $*"
  [ "$rc" = 0 ] || tail -3 "$RUNS/err" | sed 's/^/    /'
}
P=.venv/bin/python
t $P -m bottleneck.bounds --models=all --format=table --plot=$RUNS/f2.png
t $P -m bottleneck.simulate --N=50257 --d=768 --m=20..36 --trials=200
t $P -m bottleneck.topm --matrix=minilm --m=30..70:10 --trials=20 --problem=logits --format=table
t $P -m train.main --config=configs/thesis.py:model1,cpu --workdir=$RUNS/m1
t $P -m train.main --config=configs/thesis.py:model8 --dry_run
t $P -m train.sample --workdir=$RUNS/m1 --story_completion --n=5
t $P -m train.probe --workdir=$RUNS/m1 --probe=gradient --plot=$RUNS/figs
t $P -m train.probe --model=smollm2 --data=python_docs --probe=encoding --windows=8
t $P -m train.probe --model=gemma3 --probe=sanity
t $P -m bottleneck.topm --matrix=smollm2 --m=30..90:20 --trials=4 --format=table
t $P -m train.compare --models=smollm2,gemma3 --lp_trials=0 --outdir=$RUNS/compare
