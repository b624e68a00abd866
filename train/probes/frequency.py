"""Seed 003 §5 / Fig. 7 on a run: when the output embedding encodes unigram
frequency, read across the run's checkpoints (either model family). Its
spec: FREQUENCY (a run folder only: real weights have no history).
"""

from __future__ import annotations

import numpy as np

from bottleneck import encoding
from train.probes import plots
from train.probes.spec import Figure, Probe
from train.text import data
from train.training import runs


def frequency_probe(subject):
  """Seed 003 §5 / Fig. 7: frequency encoding across a run's checkpoints.

  Rows per checkpoint (step 0: the run's initial parameters): adj. R^2 of
  -log corpus frequency on W, the convergence rate (Chen et al. 2022) of
  the head, the input embedding and the first attention's q, k, v, and the
  validation loss the run logged at that step (None where it logged
  none)."""
  if subject.workdir is None:
    raise ValueError("the frequency probe needs a `workdir` with "
                     "checkpoints (real HF weights have no training history).")
  config, cfg = subject.config, subject.cfg
  if config.train.get("init"):
    raise ValueError(f"run {subject.workdir!r} started from "
                     f"train.init={config.train.init!r}: the frequency probe "
                     "follows a run trained from scratch.")
  tok = data.tokenizer_for(config.data)
  meta = data.build_shards(config.data, tok)
  counts = np.bincount(np.memmap(meta["train"], dtype=meta["dtype"],
                                 mode="r"), minlength=cfg.vocab_size)
  losses = {r["step"]: r["val_loss"] for r in runs.metrics(subject.workdir)
            if "val_loss" in r}
  parts = lambda p: {"head": np.asarray(cfg.head_weights(p)[0]),
                     "wte": np.asarray(cfg.input_embeddings(p)),
                     "qkv_0": _first_qkv(p)}
  init, final = parts(cfg.init_params(config.seed)), parts(subject.params)
  rows = []
  for step in [0] + [s for s in runs.steps(subject.workdir) if s]:
    now = init if step == 0 else parts(
        runs.restore_params(subject.workdir, config, step)[0])
    row = {"step": step,
           "adj_r2": encoding.frequency_r2(now["head"], counts)}
    for name in now:
      row[f"conv_{name}"] = encoding.convergence_rate(now[name], init[name],
                                                      final[name])
    rows.append(dict(row, val_loss=losses.get(step)))
  return ({"rows": rows, "run": subject.workdir, "V": cfg.vocab_size},
          {"frequency": plots.frequency(rows)})


def _first_qkv(params) -> np.ndarray:
  """The first block's query-key-value map, flattened: GPT's fused c_attn
  kernel, or the llama-like q, k, v kernels side by side."""
  p = params["params"]
  if "h_0" in p:
    return np.ravel(p["h_0"]["attn"]["c_attn"]["kernel"])
  attn = p["layer_0"]["attn"]
  return np.concatenate([np.ravel(attn[k]["kernel"]) for k in "qkv"])


FREQUENCY = Probe(
    "frequency", "subject", lambda ctx: frequency_probe(ctx.subject),
    figures=(Figure("frequency", "Frequency encoded in W (adj. R^2), and "
                    "how far parameters are from their final values "
                    "(convergence rate), across training (seed 003 Fig. "
                    "7)."),))
