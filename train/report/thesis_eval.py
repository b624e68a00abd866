"""The numbers seed 004's ledger rows test (train/report/thesis_stats.py),
measured on the report's thesis runs: each run's loss on every validation
window its last evaluation scored, the unigram's on the same windows, and
each Table 4.1 model's parameter count from its config.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from configs import thesis
from train.models import build
from train.text import data
from train.training import loss as loss_lib
from train.training import runs


def eval_windows(config):
  """The trainer's validation batches (trainer.Trainer.evaluate: batches
  0 .. eval_batches - 1 of the val loader), stacked: x, y [W, T]."""
  _, val, _ = data.make_loaders(config)
  xy = [val.batch(i) for i in range(config.eval_batches)]
  return (np.concatenate([x for x, _ in xy]),
          np.concatenate([y for _, y in xy]))


def window_losses(workdir: str, windows: int = 0, windows_of: str = ""
                  ) -> tuple[list[float], np.ndarray]:
  """(each validation window's mean cross-entropy under the run's newest
  checkpoint, the windows' targets y [W, T]) on the first `windows` of the
  trainer's validation windows (0: all, whose mean is the run's final
  validation loss), one batch at a time as the trainer. `windows_of`:
  another run's workdir whose windows to score instead (its seed draws
  them), so that runs of two seeds are compared on the same text."""
  params, cfg, tok, config = runs.load(workdir)
  del tok
  model = cfg.module()

  @jax.jit
  def per_window(x_bxt, y_bxt):
    h = model.apply(params, x_bxt, deterministic=True, method="hidden")
    return jax.lax.map(lambda hy: loss_lib.model_xent(
        cfg, params, hy[0], hy[1], config.train.loss_chunk), (h, y_bxt))

  x, y = eval_windows(runs.read_config(windows_of) if windows_of else config)
  if windows:
    x, y = x[:windows], y[:windows]
  b = config.train.batch_size
  out = [per_window(jnp.asarray(x[i:i + b]), jnp.asarray(y[i:i + b]))
         for i in range(0, len(x), b)]
  return [float(v) for v in np.concatenate(jax.device_get(out))], y


def unigram_window_losses(workdir: str, y_wxt, smoothing: float = 0.5
                          ) -> list[float]:
  """Each window's mean cross-entropy under the unigram distribution of
  the run's training tokens (add-`smoothing` counts over V): the best
  predictor that uses no context."""
  config = runs.read_config(workdir)
  train, _, tok = data.make_loaders(config)
  vocab = max(config.model.vocab_size, tok.vocab_size)
  counts = np.bincount(np.asarray(train.tokens), minlength=vocab) + smoothing
  logp = np.log(counts / counts.sum())
  return [float(v) for v in -logp[np.asarray(y_wxt)].mean(1)]


def param_counts() -> dict[str, int]:
  """Every Table 4.1 model's parameter count, from configs/thesis.py through
  the project's builder (shapes only, nothing allocated)."""
  out = {}
  for name in thesis.MODELS:
    cfg = build.model_config(thesis.get_config(name).model)
    x = jnp.zeros((1, cfg.block_size), jnp.int32)
    shapes = jax.eval_shape(cfg.module().init, jax.random.key(0), x)
    out[name] = int(sum(np.prod(s.shape) for s in jax.tree.leaves(shapes)))
  return out
