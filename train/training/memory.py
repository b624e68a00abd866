"""The memory one training step needs, estimated from the config before the
first step (trainer.check_config): a run that cannot fit fails at once with
one error naming the setting to lower, not after minutes of compiling and
stepping (model1 at block_size 16384 died after 206 s on a 63.8 GB
allocation).

Per device, in bytes; simple, XLA's buffer reuse ignored. Against XLA's
own buffer assignment of the CPU step (compiled memory_analysis: temporaries,
arguments, outputs) it was 0.84 .. 1.16 x on model1 at T = 128 .. 2048,
model7, model1 at V = 50257 and the llama test model at T = 16 and 512
(tests/config_checks_test.py checks one within 0.67 .. 1.5 x):
  state        16 N: float32 parameters, their gradients and AdamW's two
               moments (divided over the devices under train.fsdp).
  activations  what the backward pass keeps, for b = batch_size / (grad_accum
               x devices) sequences of T = block_size tokens per block:
                 stream    b T (12 d + 4 F) x c bytes (norms, q / k / v,
                           the attention and MLP outputs; F the MLP width,
                           c the compute dtype's bytes)
                 scores    b H T K x (8 + c) bytes: layers.attention's query
                           blocks hold float32 scores, their masked
                           exponentials and the probabilities for every key
                           a query block sees, K = (T + QUERY_BLOCK) / 2 on
                           average (a sliding window: fewer;
                           $BOTTLENECK_ATTENTION=xla: K = T, cudnn: none)
               times n_layer (model.remat on an accelerator: one block, plus
               each block's b T d input; XLA's CPU step measured no smaller
               with remat).
  logits       the loss's chunk of float32 logits and their gradient,
               3 x chunk x V x 4 bytes (training/loss.py).
Available: an accelerator's memory_stats (bytes_limit - bytes_in_use);
on a CPU the host's (checks.memory_bytes), shared by its devices.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from bottleneck import checks
from train.models import layers, weights
from train.training import loss as loss_lib

STATE_BYTES = 16  # Per parameter: float32 value, gradient, mu, nu.


@dataclasses.dataclass(frozen=True)
class Estimate:
  """Bytes per device of one training step's parts."""
  state: int
  stream: int
  scores: int
  logits: int

  @property
  def total(self) -> int:
    return self.state + self.stream + self.scores + self.logits


def _width(cfg) -> tuple[int, int, int]:
  """(n_embd, MLP width, query heads) of either family."""
  ffn = getattr(cfg, "ffn_dim", 4 * cfg.n_embd)
  return cfg.n_embd, ffn, cfg.n_head


def keys_per_query(t: int, window: int = 0) -> float:
  """Keys a query's block of layers.attention holds, on average over the
  queries: up to its block's last query, from its first query's window
  start."""
  start = np.arange(0, t, layers.QUERY_BLOCK, dtype=np.float64)
  end = np.minimum(t, start + layers.QUERY_BLOCK)
  lo = np.maximum(0, start - window + 1) if window else 0
  return float(np.sum((end - start) * (end - lo)) / t)


def score_keys(t: int, window: int = 0) -> float:
  """K of the module docstring for the attention implementation in use."""
  impl = layers.implementation()
  if impl == "cudnn":  # A fused kernel: no score matrix is kept.
    return 0.0
  if impl == "xla":  # jax.nn.dot_product_attention: the whole [T, T].
    return float(t)
  return keys_per_query(t, window)


def estimate(config, n_params: int, cfg, n_devices: int,
             remat_saves: bool = True) -> Estimate:
  """The step's bytes per device (module docstring) of a run config whose
  model has `n_params` parameters; `remat_saves`: model.remat keeps one
  block's activations (an accelerator's XLA; not its CPU one)."""
  t = config.model.block_size
  b = -(-config.train.batch_size // (config.train.grad_accum * n_devices))
  d, ffn, heads = _width(cfg)
  c = 2 if cfg.dtype == "bfloat16" else 4
  window = getattr(cfg, "sliding_window", 0) if "local" in getattr(
      cfg, "layer_types", ()) else 0
  remat = remat_saves and getattr(cfg, "remat", False)
  kept = 1 if remat else cfg.n_layer
  stream = b * t * (12 * d + 4 * ffn) * c * kept
  if remat:
    stream += b * t * d * c * cfg.n_layer
  scores = int(b * heads * t * score_keys(t, window) * (8 + c) * kept)
  chunk = loss_lib.chunk_tokens(cfg.vocab_size, b * t,
                                config.train.loss_chunk,
                                loss_lib.logit_bytes())
  state = STATE_BYTES * n_params
  if config.train.fsdp:
    state = -(-state // n_devices)
  return Estimate(state, stream, scores, 3 * chunk * cfg.vocab_size * 4)


def available(devices) -> tuple[int | None, str]:
  """(bytes one device may use, what they are) for the step's devices."""
  dev = devices[0]
  stats = dev.memory_stats() if dev.platform != "cpu" else None
  if stats and stats.get("bytes_limit"):
    have = stats["bytes_limit"] - stats.get("bytes_in_use", 0)
    return have, f"{have / 2**30:.1f} GiB free on each {dev.platform} device"
  host = checks.memory_bytes()
  shared = sum(d.process_index == jax.process_index() for d in devices) or 1
  if host is None:
    return None, ""
  return host // shared, (f"{host / 2**30:.1f} GiB of host memory "
                          f"available, shared by {shared} device(s)")


def advice(config, est: Estimate, remat_saves: bool) -> tuple[str, str]:
  """(the setting to lower, what to do) for the estimate's largest part."""
  m, t = config.model, config.train
  fewer = (f"lower train.batch_size ({t.batch_size}) or raise "
           f"train.grad_accum ({t.grad_accum})")
  llama = m.get("family", "gpt") == "llama"
  remat = (", or set model.remat=true" if llama and remat_saves and
           not m.remat else "")
  part = max(("state", "stream", "scores", "logits"),
             key=lambda k: getattr(est, k))
  if part == "scores":
    return "model.block_size", (
        f"lower model.block_size ({m.block_size}: attention scores grow as "
        f"its square), {fewer}{remat}")
  if part == "logits":
    return "train.loss_chunk", (f"lower train.loss_chunk "
                                f"({t.loss_chunk or 'auto'}) or {fewer}")
  if part == "state":
    return "model.n_embd", (
        "use a smaller model (model.n_layer, model.n_embd, model.vocab_size)"
        f"{'' if t.fsdp else ', or train.fsdp=true over more devices'}")
  return "train.batch_size", f"{fewer}{remat}"


def check(config, cfg, devices=None) -> Estimate:
  """Fails with one error naming the setting to lower when the step's
  estimate exceeds what a device may use; returns the estimate."""
  devices = devices or jax.devices()
  n = weights.param_count(weights.expected_shapes(cfg))
  remat_saves = devices[0].platform != "cpu"
  est = estimate(config, n, cfg, len(devices), remat_saves)
  have, where = available(devices)
  if have is not None and est.total > have:
    name, todo = advice(config, est, remat_saves)
    gib = lambda x: f"{x / 2**30:.1f}"
    raise checks.ArgumentError(name, (
        f"a training step needs about {gib(est.total)} GiB per device "
        f"(parameters and AdamW state {gib(est.state)}, activations "
        f"{gib(est.stream)}, attention scores {gib(est.scores)}, logits "
        f"{gib(est.logits)}); this machine has {where}: {todo}."))
  return est
