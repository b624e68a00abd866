"""Training throughput of the thesis's eight models (full GPT-Neo vocabulary)
and of the llama-like trainer on SmolLM2-135M's architecture.

  python benchmarks/train_throughput.py --batch=8 --steps=3 \
      --out=benchmarks/train_throughput.json
  python benchmarks/train_throughput.py --models=smollm2 --batch=8

`smollm2`: the llama-like Transformer with SmolLM2-135M's architecture read
from its GGUF (30 layers, width 576, 9 heads, 3 KV heads, V = 49152, tied),
fresh weights, block 128 (--block). `table3`: seed 002 Table 3's SpamLang
model (configs/spamlang.py: SmolLM2-135M's architecture written out, untied
head, V = 49152 or --V, block 64; --D for a low-rank head), needing no GGUF.
`--loss_chunk=N` sets the cross-entropy's tokens per chunk (0: the backend's
default, training/loss.py). `--attention=blocks,cudnn` measures each model
under each attention implementation (train/models/layers.IMPLEMENTATIONS),
a row per pair; one that fails (cuDNN's kernel refusing a shape) is a row
with its error. `--trace=DIR` traces 3 more steps per model after the
timed ones into DIR/MODEL (DIR/MODEL_IMPL for a non-default attention;
tools/trace_summary.py reads them).

Per model: the Trainer's construction (`build_s`) and the parameters' init
(`init_s`, its compile included), one warm-up step (compile; its wall time
is `first_step_s`), then `steps` timed steps of the real jitted train
step on random tokens; tokens/s, achieved FLOP/s (6N + 12LTd per token,
train.model.flops_per_token) and MFU. MFU needs the device's peak: the
known bf16/fp32 table for GPUs/TPUs, and on CPU the float32 GEMM throughput
measured here (a 2048^3 matmul), so CPU "MFU" is relative to what this
CPU's BLAS reaches, not to a datasheet.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

from configs import spamlang, thesis
from train.models import build, layers
from train.training import trainer


TRACE_STEPS = 3  # Steps traced by --trace=DIR (tools/trace_summary.py).


def measured_gemm_flops(n: int = 2048, reps: int = 5) -> float:
  a = jnp.ones((n, n), jnp.float32)
  f = jax.jit(lambda x: x @ x)
  f(a).block_until_ready()
  start = time.perf_counter()
  for _ in range(reps):
    f(a).block_until_ready()
  return 2 * n**3 * reps / (time.perf_counter() - start)


def model_config(name: str, args: dict, batch: int, dtype: str):
  """The run config `name` stands for (see the module docstring)."""
  if name == "table3":
    c = spamlang.get_config(f"V={args.get('V', 49152)},D={args.get('D', 0)}")
  else:
    c = thesis.get_config("model1" if name == "smollm2" else name)
  if name == "smollm2":
    c.model.family, c.model.arch, c.model.vocab_size = "llama", name, 0
    c.model.head, c.model.head_bias = "tied", False
    c.model.block_size = int(args.get("block", 128))
  c.train.batch_size, c.model.dtype = batch, dtype
  c.train.loss_chunk = int(args.get("loss_chunk", 0))
  return c


def measure(c, steps: int, cpu_peak, trace_dir: str | None) -> dict:
  """One row: the Trainer's construction, the init, the first step, then
  `steps` timed steps; with `trace_dir`, TRACE_STEPS more traced there."""
  build_s = time.perf_counter()
  tr = trainer.Trainer(c)
  build_s = time.perf_counter() - build_s  # Tracing the state's shapes.
  batch = c.train.batch_size
  rng = np.random.default_rng(0)
  x = rng.integers(0, tr.model_cfg.vocab_size, (batch, c.model.block_size))
  xb, yb = tr.global_batch(x.astype(np.int32), x.astype(np.int32))
  init_s = time.perf_counter()
  state = tr.init_fn()
  jax.block_until_ready(state)
  init_s = time.perf_counter() - init_s  # Compiling and running the init.
  lr = np.float32(c.train.lr)  # Any lr: the step's cost does not change.
  first = time.perf_counter()
  state, m = tr.step_fn(state, xb, yb, lr)
  jax.block_until_ready(m)
  first = time.perf_counter() - first  # Compilation and one step.
  start = time.perf_counter()
  for _ in range(steps):
    state, m = tr.step_fn(state, xb, yb, lr)
  jax.block_until_ready(m)
  sec = (time.perf_counter() - start) / steps
  tokens = batch * c.model.block_size
  flops = build.flops_per_token(tr.model_cfg, tr.n_params)
  device_peak = tr.peak_flops() or cpu_peak
  row = {"params": tr.n_params, "build_s": build_s, "init_s": init_s,
         "first_step_s": first, "seconds_per_step": sec,
         "tokens_per_s": tokens / sec,
         "achieved_tflops": flops * tokens / sec / 1e12,
         "mfu": flops * tokens / sec / device_peak if device_peak else None}
  if trace_dir:  # TRACE_STEPS more steps under the profiler.
    try:
      with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        for _ in range(TRACE_STEPS):
          state, m = tr.step_fn(state, xb, yb, lr)
        jax.block_until_ready(m)
    except Exception as e:  # The timing above stands without a trace.
      print(f"warning: no trace in {trace_dir}: {e!r}", file=sys.stderr)
  return row


def main():
  args = dict(a.lstrip("-").split("=", 1) for a in sys.argv[1:])
  batch, steps = int(args.get("batch", 8)), int(args.get("steps", 3))
  dtype = args.get("dtype", "float32")
  names = args.get("models", ",".join(thesis.MODELS)).split(",")
  impls = args.get("attention", layers.IMPLEMENTATIONS[0]).split(",")
  peak = None if jax.default_backend() != "cpu" else measured_gemm_flops()
  results = {"command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d"),
             "machine": f"{platform.node()} {platform.machine()}",
             "device": jax.devices()[0].device_kind, "dtype": dtype,
             "cpu_gemm_flops": peak, "runs": []}
  for name in names:
    for impl in impls:  # Read when the step is traced (train/models/layers).
      os.environ["BOTTLENECK_ATTENTION"] = impl
      layers.implementation()  # An unknown name stops here, named.
      tag = name if impl == layers.IMPLEMENTATIONS[0] else f"{name}_{impl}"
      trace = f"{args['trace']}/{tag}" if "trace" in args else None
      row = {"model": name, "attention": impl}
      try:
        row.update(measure(model_config(name, args, batch, dtype), steps,
                           peak, trace))
      except Exception as e:  # The other pairs still run.
        row["error"] = repr(e)[:2000]
      results["runs"].append(row)
      print(json.dumps(row), flush=True)
  if "out" in args:
    with open(args["out"], "w") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  main()
