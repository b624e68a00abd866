#!/bin/bash
# Issue 22's figures on a lent GPU machine (no network there): run from the
# repository root with the stages to run, writing logs, JSON and PNGs to
# $OUT (default ./gpu_out).
#
#   bash tools/on_gpu.sh info fig1_1200 fig1_6000 band smollm2 host_checks
#   bash tools/on_gpu.sh finish_ab gemma3     # after Gemma 3's parts
#
# The next session with a GPU (issue 59; benchmarks/RESULTS.md has the
# H200's numbers, below the 40 % MFU goal): `bash tools/gpu_wheels.sh
# peers` here, then two calls back to back while the machine stays warm:
#   [.whl]  export OUT; bash tools/on_gpu.sh info train_mfu
# (Model 8 and Table 3's model, each with this project's attention and
# cuDNN's; at 23c268a, with one attention, it took about 3 min, most of it
# before the first step, whose parameters' init now runs op by op: the
# rows' build_s and init_s say where the start goes), then
#   [.whl]  export OUT; SPAM_S=280 bash tools/on_gpu.sh spamlang_table3
# (Table 3's two runs, each capped at SPAM_S: 5000 steps at 27.8 ms are
# 139 s of stepping after the trainer's start, which took about 130 s on
# the H200 at 984fd90). `train_profile` says where a step's time goes (its
# perfetto export adds about 100 s); `fig1_4096` is issue 60's widest
# Figure 1 panel (capped at WIDE_S). Then, for the LP: `[.whl]
# export OUT; bash tools/on_gpu.sh info cold_warm phases` on a fresh
# machine gives the spread of paper-size Figure 1 from a fresh machine
# (lp.precompile; benchmarks/RESULTS.md holds its one measurement).
# `phases` times the steps before the LP stream (benchmarks/
# startup_phases.py); `cold_at0` runs the cold figure with every program
# untuned. Then, time allowing, Gemma 3's parts as below.
#
# Python packages the machine's image lacks travel as wheels in .whl/
# (ml-collections, highspy, gguf, mpax for Python 3.12), made here first by
# `bash tools/gpu_wheels.sh peers`; carry .whl in every call: a machine
# goes back 30 s after a call, and a fresh one has no /tmp/site. Trained
# heads travel as small GGUFs made by tools/pack_head.py in .gpu/. A head
# over one call's 64 MiB transfer (Gemma 3's: 178 MB as Q8_0) goes in parts
# (`pack_head.py --model=gemma3 --out=.gpu/gemma3_head.gguf --chunks=4`:
# 44.6 MB each, beside the 9 MB tree and 5 MB of wheels), one part carried
# per call (NAME.sha256 with the first), each call running this script
# (with no stage for the first three), back to back while the machine stays
# warm; then `gemma3` runs. The calls of the H200 session that measured
# it, as they would run now (carry, command):
#   [.whl, .gpu/gemma3_head.gguf.0, .gpu/gemma3_head.gguf.sha256]
#       export OUT; bash tools/on_gpu.sh info
#   [.whl, .gpu/gemma3_head.gguf.1]   export OUT; bash tools/on_gpu.sh
#   [.whl, .gpu/gemma3_head.gguf.2]   export OUT; bash tools/on_gpu.sh
#   [.whl, .gpu/gemma3_head.gguf.3]
#       export OUT; bash tools/on_gpu.sh finish_ab fig1_6000
#   [.whl]   export OUT; bash tools/on_gpu.sh gemma3
# (their times are in benchmarks/RESULTS.md; a call may run 600 s, and 15
# minutes of device time hold about two such calls.)
set -u
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
PY=${PY:-python3}
if [ "${WHEELS:-1}" = 1 ] && ls .whl/*.whl >/dev/null 2>&1 &&
    [ ! -d /tmp/site ]; then  # WHEELS=0: the interpreter has them.
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1
LOG="$OUT/log.txt"

# timed LABEL CMD...: CMD's stdout as it is; its stderr, wall seconds and
# peak RSS (of the largest child) also into the log.
TIMED='
import resource, subprocess, sys, time
log, label, cmd = open(sys.argv[1], "a"), sys.argv[2], sys.argv[3:]
def say(line):
  sys.stderr.write(line); log.write(line); log.flush()
say(f"== {label}: {chr(32).join(cmd)}\n")
start = time.time()
proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
seen = []  # When stderr lines came (the LP stream starts and ends there).
for line in proc.stderr:
  seen.append(time.time() - start)
  say(line)
rc = proc.wait()
kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
lines = f", stderr lines at {seen[0]:.1f}..{seen[-1]:.1f} s" if seen else ""
say(f"[timed] {label}: rc {rc}, wall {time.time() - start:.1f} s, "
    f"peak RSS {kib} KiB{lines}\n")
'
timed() { $PY -c "$TIMED" "$LOG" "$@"; }

# A head split in parts (pack_head.py --chunks=k: NAME.0 .. NAME.{k-1} and
# NAME.sha256) comes over several calls. A call's copy of the tree keeps
# no ignored file that the call does not carry, so each call first moves
# the parts it brought out of the tree, to $PARTS; once NAME.sha256 and all
# k parts are there, they are joined and the hash checked, and every later
# call links the checked file into .gpu/.
PARTS=${PARTS:-/tmp/gpu_parts}
mkdir -p "$PARTS" .gpu
for f in .gpu/*.[0-9] .gpu/*.sha256; do
  [ -e "$f" ] && mv "$f" "$PARTS/"
done
for sum in "$PARTS"/*.sha256; do
  [ -e "$sum" ] || continue
  read -r hash name chunks < "$sum"
  if [ ! -e "$PARTS/$name" ]; then
    have=$(ls "$PARTS/$name".[0-9] 2>/dev/null | wc -l)
    if [ "$have" -lt "$chunks" ]; then
      echo "$name: $have of $chunks parts in $PARTS" | tee -a "$LOG"
      continue
    fi
    cat "$PARTS/$name".[0-9] > "$PARTS/$name.joined"
    if [ "$(sha256sum < "$PARTS/$name.joined" | cut -d' ' -f1)" != "$hash" ]
    then
      echo "$name: its $chunks parts do not hash to $hash" | tee -a "$LOG"
      rm -f "$PARTS/$name.joined"
      continue
    fi
    mv "$PARTS/$name.joined" "$PARTS/$name"
    echo "$name: joined from $chunks parts, sha256 checked" | tee -a "$LOG"
  fi
  [ -e ".gpu/$name" ] || ln -s "$PARTS/$name" ".gpu/$name"
done

TOPM="$PY -m bottleneck.topm"
FIG1="--N=50257 --d=768 --m=5..150:5 --problem=logits,probs --format=json"
# Issue 59's training steps: Model 8 and Table 3's model, bfloat16, batch 128,
# each with this module's attention and with cuDNN's fused kernel.
TRAIN="--models=model8,table3 --dtype=bfloat16 --batch=128 --steps=20
       --attention=blocks,cudnn"

for stage in "$@"; do
  case "$stage" in
    info)
      { date -u; nvidia-smi --query-gpu=name,memory.total,driver_version \
          --format=csv; nproc; free -g | head -2
        $PY -c "import jax, flax, numpy, scipy; print('jax', jax.__version__,
jax.devices(), 'flax', flax.__version__, 'numpy', numpy.__version__,
'scipy', scipy.__version__)"
        $PY -c "import numpy, threadpoolctl
print([(i['internal_api'], i['num_threads']) for i in
       threadpoolctl.threadpool_info()])"; } 2>&1 | tee -a "$LOG" ;;
    smoke)
      timed smoke $TOPM --N=4096 --d=256 --m=20..60:20 --trials=4 \
          --format=table ;;
    fig1_1200)  # The default matmul precision (TF32 on Hopper) and float32.
      timed fig1_1200_default $TOPM $FIG1 --trials=20 \
          > "$OUT/fig1_1200_default.json"
      JAX_DEFAULT_MATMUL_PRECISION=float32 timed fig1_1200_float32 \
          $TOPM $FIG1 --trials=20 > "$OUT/fig1_1200_float32.json"
      # The later stages use the faster of the two.
      faster=$(grep "^\[timed\] fig1_1200_" "$LOG" | tail -2 |
               sort -t' ' -k6 -n | head -1 | sed 's/.*fig1_1200_\([a-z0-9]*\):.*/\1/')
      [ "$faster" = float32 ] && export JAX_DEFAULT_MATMUL_PRECISION=float32
      echo "faster: $faster" | tee -a "$LOG" ;;
    fig1_6000)
      timed fig1_6000 $TOPM $FIG1 --trials=100 \
          --plot="$OUT/figure1_paper_scale_gpu.png" \
          > "$OUT/figure1_paper_scale_gpu.json" ;;
    warm_up)  # The device checks' compiles, cold: serial; concurrent,
      # beside ADMM's compile and after it (each in a fresh process).
      for mode in --serial "--parallel --admm=beside" \
          "--parallel --admm=before"; do
        $PY tools/device_warm_up.py $mode | tee -a "$OUT/warm_up.jsonl"
      done ;;
    cold_warm)  # Paper-size Figure 1 as a new machine's first run (an
      # empty compile cache), then again with the cache it wrote.
      cache=$(mktemp -d)
      for run in cold warm; do
        JAX_COMPILATION_CACHE_DIR=$cache JAX_LOG_COMPILES=1 \
            timed "fig1_6000_$run" $TOPM $FIG1 \
            --trials=100 --plot="$OUT/figure1_paper_scale_gpu_$run.png" \
            > "$OUT/figure1_paper_scale_gpu_$run.json"
      done ;;
    cold_ab)  # Paper-size Figure 1 from empty compile caches, the device
      # checks compiling after ADMM's first chunk (the default) and beside
      # it (eager), XLA's compiles logged with their times; then warm.
      first=$(mktemp -d)
      for mode in first_chunk eager; do
        cache=$first; [ "$mode" = eager ] && cache=$(mktemp -d)
        JAX_COMPILATION_CACHE_DIR=$cache BOTTLENECK_DEVICE_WARM_UP=$mode \
            JAX_LOG_COMPILES=1 timed "fig1_6000_cold_$mode" $TOPM $FIG1 \
            --trials=100 > "$OUT/figure1_paper_scale_gpu_cold_$mode.json"
      done
      JAX_COMPILATION_CACHE_DIR=$first timed fig1_6000_warm $TOPM $FIG1 \
          --trials=100 --plot="$OUT/figure1_paper_scale_gpu_warm.png" \
          > "$OUT/figure1_paper_scale_gpu_warm.json" ;;
    cold_at0)  # cold_ab's first run with every program compiled without
      # XLA's GPU autotuner (ADMM's too), from an empty compile cache.
      XLA_FLAGS="${XLA_FLAGS:-} --xla_gpu_autotune_level=0" \
          JAX_COMPILATION_CACHE_DIR=$(mktemp -d) JAX_LOG_COMPILES=1 \
          timed fig1_6000_autotune0_cold $TOPM $FIG1 --trials=100 \
          > "$OUT/figure1_paper_scale_gpu_autotune0_cold.json" ;;
    phases)  # The seconds before the LP stream starts, step by step.
      timed phases $PY tools/startup_phases.py \
          > "$OUT/startup_phases.json" ;;
    checks_ab)  # Paper-size Figure 1 with the host checks' products on the
      # host, then on the GPU (lp.device_checks; the default beside one).
      for on in 0 1; do
        BOTTLENECK_DEVICE_CHECKS=$on timed "fig1_6000_device_checks_$on" \
            $TOPM $FIG1 --trials=100 > "$OUT/fig1_6000_device_checks_$on.json"
      done ;;
    band)  # In the transition band, with HiGHS row generation and MPAX.
      timed band $PY benchmarks/lp_vs_peers.py --sizes=50257x768 \
          --solvers=bottleneck,mpax,highs \
          --out="$OUT/lp_vs_peers_band_gpu.json" ;;
    smollm2)
      timed smollm2 $TOPM --matrix=gguf:.gpu/smollm2_head.gguf \
          --m=40..100:10 --trials=100 --gaussian_twin \
          --plot="$OUT/smollm2_vs_gaussian_topm_gpu.png" \
          > "$OUT/smollm2_vs_gaussian_topm_gpu.json" ;;
    host_checks)  # The INFEASIBLE check alone on this host, by BLAS threads.
      timed host_checks $PY tools/host_checks.py --threads=1,2,4,8,16 \
          > "$OUT/host_checks.jsonl" ;;
    device_checks)  # The same claims, host (4 threads) against the GPU.
      timed device_checks $PY tools/host_checks.py --threads=4 \
          --device=0,1 > "$OUT/device_checks.jsonl" ;;
    finish_ab)  # Gemma 3's band, the exact finish on the host, then on
      # the device (lp.ipm; the default beside an accelerator).
      for on in 0 1; do
        BOTTLENECK_DEVICE_FINISH=$on timed "finish_device_$on" $TOPM \
            --matrix=gguf:.gpu/gemma3_head.gguf --m=60 --trials=20 \
            --problem=logits --format=json > "$OUT/gemma3_band_finish_$on.json"
      done ;;
    gemma3)
      timed gemma3 $TOPM --matrix=gguf:.gpu/gemma3_head.gguf \
          --m=50..70:10 --trials=100 --gaussian_twin \
          --plot="$OUT/gemma3_vs_gaussian_topm_gpu.png" \
          > "$OUT/gemma3_vs_gaussian_topm_gpu.json" ;;
    train_mfu)  # Issue 59: the thesis's Model 8 and Table 3's SpamLang
      # model, one jitted bfloat16 step each at batch 128 (tokens/s, MFU
      # against the device's bf16 peak, the first step's compile).
      timed train_mfu $PY benchmarks/train_throughput.py \
          ${TRAIN_MFU_ARGS:-$TRAIN} \
          --out="$OUT/train_throughput_gpu.json" ;;
    train_profile)  # Issue 59: Model 8 and Table 3's SpamLang model
      # (SmolLM2-135M's architecture, V = 49152, 128 x 64), one jitted
      # bfloat16 step each at batch 128: timed (tokens/s, MFU, the first
      # step's compile), then 3 steps traced; the traces' summaries
      # (tools/trace_summary.py) and perfetto files come back.
      traces=$(mktemp -d)
      timed train_profile $PY benchmarks/train_throughput.py \
          ${TRAIN_PROFILE_ARGS:-$TRAIN} \
          --trace="$traces" --out="$OUT/train_throughput_gpu.json"
      for dir in "$traces"/*; do
        m=$(basename "$dir")
        $PY tools/trace_summary.py "$dir" --steps=3 \
            > "$OUT/trace_summary_$m.json"
        cp "$(ls "$dir"/plugins/profile/*/perfetto_trace.json.gz | tail -1)" \
            "$OUT/trace_$m.json.gz"
      done ;;
    spamlang_table3)  # Issue 59: Table 3's SpamLang at V = 49152 (SmolLM2-
      # 135M's architecture, batch 128 x 64, bfloat16), full rank then
      # D = 32, each capped at SPAM_S seconds; tokens/s and MFU in the
      # metrics, both loss curves in one PNG (drawn from the metrics, so a
      # run the cap stopped has its curve too). The run folders
      # (checkpoints) stay in /tmp: only the metrics and the PNG come back.
      for rank in 0 32; do
        work=$(mktemp -d)/spamlang_D$rank
        timeout "${SPAM_S:-170}" $PY -m train.main \
            --config="${SPAM_CONFIG:-configs/spamlang.py:V=49152},D=$rank" \
            --workdir="$work" --config.checkpoint_every=100000 \
            ${SPAM_FLAGS:-} 2>&1 | tail -5 | tee -a "$LOG"
        cp "$work/metrics.jsonl" "$OUT/spamlang_table3_D$rank.jsonl"
      done
      $PY -c "import sys; from train.training import metrics, plots
from bottleneck.io import plots as io_plots
runs = {f'D = {r}' if r != '0' else 'full rank': metrics.read_metrics(
    f'{sys.argv[1]}/spamlang_table3_D{r}.jsonl') for r in ('0', '32')}
io_plots.save(plots.curves_figure(runs, 'SpamLang, Table 3, V = 49152'),
              f'{sys.argv[1]}/spamlang_table3.png')" "$OUT" ;;
    fig1_4096)  # Issue 60: Figure 1's widest panel, a random 32000 x
      # 4096 head (the paper: every subset selectable up to m ~ 1070), one
      # process per m, each writing its own JSON, inside WIDE_S seconds in
      # all (a run the cap stops loses only its m; its JSON is removed).
      # The m in order of what they tell: the CPU's 10 subsets per m put
      # the transition between 1075 and 1100 (benchmarks/RESULTS.md).
      end=$((SECONDS + ${WIDE_S:-240}))
      for m in ${WIDE_M:-1075 1100 1050 1125}; do
        left=$((end - SECONDS))
        [ "$left" -gt 10 ] || break
        timed "fig1_4096_m$m" timeout "$left" $TOPM --N=${WIDE_N:-32000} \
            --d=${WIDE_D:-4096} --m="$m" --trials=${WIDE_TRIALS:-20} \
            --problem=logits --format=json > "$OUT/fig1_4096_m$m.json"
        grep -q '"m"' "$OUT/fig1_4096_m$m.json" ||
          rm -f "$OUT/fig1_4096_m$m.json"
      done ;;
    *) echo "unknown stage $stage" | tee -a "$LOG"; exit 2 ;;
  esac
done
grep -s "^\[timed\]" "$LOG"
exit 0
