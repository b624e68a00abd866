"""Experiments that train models: the runs the report and the colabs need.

Each function trains (or, when the run already finished, instantly resumes)
under <outdir>/runs/<name>_<digest> with configs/ presets plus the report's
step counts, and returns what later analysis reads: workdirs, metrics rows,
measured numbers. The digest is of the run's whole config: a folder is
reused only by the config that made it (the trainer itself lets a run
resume with another lr or step count). Formatting is the report's business
(train/report/).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re

import jax
import numpy as np

from configs import lowrank, spamlang, thesis
from train.text import data
from train.training import runs, trainer


def _short_run(cfg, steps: int, eval_every: int, log_every: int):
  """The report's overrides: `steps` steps, synchronous checkpoints."""
  cfg.train.steps, cfg.train.warmup = steps, max(1, steps // 10)
  cfg.eval_every = cfg.checkpoint_every = eval_every
  cfg.log_every, cfg.async_checkpoint = log_every, False
  return cfg


def run_dir(outdir: str, name: str, cfg) -> str:
  """<outdir>/runs/<name>_<first 10 hex of sha256 of the config>."""
  digest = hashlib.sha256(json.dumps(cfg.to_dict(), sort_keys=True,
                                     default=str).encode()).hexdigest()
  return os.path.join(outdir, "runs", f"{name}_{digest[:10]}")


def val_curve(rows) -> list[tuple[int, float]]:
  return [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]


def thesis_run(name: str, steps: int, outdir: str, source: str = "",
               path: str = "", batch: int = 0, lr: float = 0.0) -> str:
  """Trains (or finds) one of the thesis's models (configs/thesis.py: its
  GPT-Neo tokenizer, V = 50257) for `steps` steps on `source` / `path`
  ('' = the config's TinyStories), `batch` sequences of 128 tokens a step
  and peak lr `lr` (0 = the config's); returns the workdir."""
  cfg = thesis.get_config(name)
  if source:
    cfg.data.source, cfg.data.path = source, path
  if batch:
    cfg.train.batch_size = batch
  if lr:
    cfg.train.lr = lr
  cfg = _short_run(cfg, steps, max(1, steps // 8), max(1, steps // 20))
  cfg.checkpoint_every = steps
  tag = re.sub(r"[^A-Za-z0-9]+", "-", f"{source or 'default'}-{path}")
  workdir = run_dir(outdir, f"thesis_{name.replace(',', '_')}_"
                    f"{tag.strip('-')}_n{steps}", cfg)
  trainer.train_and_evaluate(cfg, workdir)
  return workdir


def probe_model_config(steps: int, plays: str = ""):
  """The probe subject: Model 1's architecture (width 64) on Shakespeare with
  a 4096-token BPE, D/V = 1/64, the regime of real LMs (GPT-2: 768/50257);
  every checkpoint kept for the frequency probe. `plays`: file-name globs of
  the texts it trains on ('' = all 77; corpora.shakespeare_files)."""
  cfg = thesis.get_config("model1,cpu")
  cfg.data.source, cfg.data.tokenizer = "shakespeare", "bpe:4096"
  cfg.data.path = plays
  cfg.model.vocab_size = 4096
  cfg = _short_run(cfg, steps, max(1, steps // 4), max(1, steps // 10))
  cfg.checkpoint_every = max(1, steps // 8)
  cfg.keep_checkpoints = 1000  # Every checkpoint: the frequency probe.
  return cfg


def probe_model_run(steps: int, outdir: str, plays: str = "") -> str:
  """Trains (or finds) the probe subject under <outdir>/runs/."""
  name = "probe_model1_shakespeare_bpe4096" + (
      "_" + re.sub(r"[^A-Za-z0-9]+", "-", plays).strip("-") if plays else "")
  cfg = probe_model_config(steps, plays)
  workdir = run_dir(outdir, name, cfg)
  trainer.train_and_evaluate(cfg, workdir)
  return workdir


# The low-rank runs also evaluate at L/64 .. L/16 of their L steps: the
# paper's statistic (the smallest D's tokens over those the largest D needs
# to reach its final loss; x16 in the paper) reads the largest D's curve
# near L/16, where a grid of L/12 alone could only bound it.
EARLY_EVALS = (64, 48, 32, 24, 16)


def lowrank_run(d: int, seed: int, steps: int, outdir: str,
                plays: str = "", cpu: bool = True,
                keep_all: bool = False) -> tuple[dict, list[dict]]:
  """One run of seed 002 §3.1's sweep (configs/lowrank.py; D = 0: the
  full-rank head): (its config's numbers, its metrics rows). `keep_all`: a
  checkpoint at every evaluation, all kept (the frequency probe's run)."""
  cfg = lowrank.get_config(f"D={d},seed={seed}" + (",cpu" if cpu else ""))
  if plays:
    cfg.data.path = plays
  every = max(1, steps // 12)
  cfg = _short_run(cfg, steps, every, max(1, steps // 20))
  cfg.eval_at = tuple(sorted({max(1, steps // k) for k in EARLY_EVALS}))
  cfg.train.warmup = max(1, steps // 20)
  cfg.checkpoint_every = every if keep_all else steps
  cfg.keep_checkpoints = 1000 if keep_all else cfg.keep_checkpoints
  workdir = run_dir(outdir, f"lowrank_D{d}_s{seed}_n{steps}", cfg)
  trainer.train_and_evaluate(cfg, workdir)
  decay = (max(1, int(steps * cfg.train.decay_fraction))
           if cfg.train.schedule == "wsd" else 0)
  info = {"D": d or cfg.model.n_embd, "V": cfg.model.vocab_size,
          "seed": seed, "steps": steps, "workdir": workdir,
          "stable_until": steps - decay,
          "tokens_per_step": cfg.train.batch_size * cfg.model.block_size}
  return info, runs.metrics(workdir)


def flattened(curve, share: float = 0.25, tolerance: float = 0.01,
              until: int = 0):
  """(flat?, relative fall): whether a validation curve [(step, loss)]
  fell by less than `tolerance` (relative) over the last `share` of its
  steps up to `until` (0: its end; a WSD run passes where its final decay
  starts, so the decay's drop is not read as progress): the stopping
  criterion of the low-rank sweep's largest D."""
  window = _last_share(curve, share, until)
  fall = (window[0][1] - window[-1][1]) / window[0][1]
  return fall < tolerance, fall


def fitted_fall(curve, share: float = 0.25, until: int = 0) -> float:
  """The relative fall of a least-squares line through every evaluation of
  `flattened`'s window (its two end points alone move with one evaluation's
  noise): reported beside the criterion, not a criterion."""
  steps, losses = np.asarray(_last_share(curve, share, until), float).T
  if len(steps) < 2:
    return 0.0
  slope, offset = np.polyfit(steps, losses, 1)
  start = offset + slope * steps[0]
  return float(-slope * (steps[-1] - steps[0]) / start)


def _last_share(curve, share: float, until: int):
  """The evaluations [(step, loss)] from the one nearest (1 - share) of the
  last step (up to `until`; 0: the end) to the last."""
  curve = [p for p in curve if not until or p[0] <= until] or curve[:1]
  begin = min(curve, key=lambda p: abs(p[0] - curve[-1][0] * (1 - share)))
  return curve[curve.index(begin):]


def lowrank_top(c, outdir: str):
  """The low-rank sweep's largest D (configs/report.py: lowrank), its steps
  doubled (up to c.doublings times) until its validation loss flattens on
  every seed (`flattened`): (steps, [(info, rows)] per seed, [(flat?,
  fall)] per seed). The first seed's run keeps a checkpoint at every
  evaluation: seed 003's frequency probe reads it."""
  largest = max(c.ranks)
  for k in range(c.doublings + 1):
    steps = c.steps * 2**k
    top = [lowrank_run(largest, s, steps, outdir, c.plays, c.cpu,
                       keep_all=i == 0) for i, s in enumerate(c.seeds)]
    flat = [flattened(val_curve(rows), tolerance=c.flat,
                      until=info["stable_until"]) for info, rows in top]
    if all(f for f, _ in flat) or k == c.doublings:
      return steps, top, flat


def lowrank_sweep(c, outdir: str) -> list[dict]:
  """The report's low-rank sweep (configs/report.py: lowrank): the largest
  D until it flattens (`lowrank_top`), every D then at those steps.
  Rows per (D, seed): the final validation loss and the validation curve."""
  ranks = sorted(c.ranks)
  steps, top, flat = lowrank_top(c, outdir)
  out = []
  for d in ranks:
    for i, seed in enumerate(c.seeds):
      info, rows = top[i] if d == ranks[-1] else lowrank_run(
          d, seed, steps, outdir, c.plays, c.cpu)
      curve = val_curve(rows)
      out.append(dict(info, final_val_loss=curve[-1][1], curve=curve,
                      flat=flat[i][0], fall=flat[i][1],
                      fit_fall=fitted_fall(curve,
                                           until=info["stable_until"])))
  return out


def spamlang_config(v: int, d: int, steps: int, lr: float = 0.0,
                    seed: int = 0, cpu: bool = True):
  """configs/spamlang.py at V = v, rank d (0: full), `steps` steps (lr 0:
  the config's), as the report runs it."""
  arg = f"V={v}" + (",cpu" if cpu else "") + (f",D={d}" if d else "") \
      + (f",lr={lr}" if lr else "")
  cfg = _short_run(spamlang.get_config(arg), steps, max(1, steps // 4),
                   max(1, steps // 10))
  cfg.seed = seed
  cfg.checkpoint_every = steps
  return cfg


def spamlang_run(cfg, outdir: str) -> dict:
  """Trains (or finds) one SpamLang run: its final validation loss and the
  next-token accuracy on positions >= 1 of 256 held-out sequences."""
  v, d = cfg.data.spamlang_vocab, cfg.model.get("head_rank", 0)
  d = d if cfg.model.head == "lowrank" else 0
  workdir = run_dir(outdir, f"spamlang_V{v}_D{d}_s{cfg.seed}_n"
                    f"{cfg.train.steps}", cfg)
  summary = trainer.train_and_evaluate(cfg, workdir)
  params, mcfg, _ = trainer.load_params(workdir, cfg)
  x, y = data.SpamLangLoader(v, mcfg.block_size, 256,
                             cfg.seed + 10**6).batch(0)
  logits = jax.jit(mcfg.module().apply)(params, x)
  hits = np.argmax(logits, axis=-1) == y
  return {"V": v, "D": d or mcfg.n_embd, "full_rank": not d,
          "seed": cfg.seed, "steps": cfg.train.steps, "lr": cfg.train.lr,
          "final_val_loss": summary["final_val_loss"],
          "accuracy": float(np.mean(hits[:, 1:]))}


def spamlang_runs(vocabs, ranks, steps: int, outdir: str, lr: float = 0.0,
                  seeds=(0,), cpu: bool = True) -> list[dict]:
  """Seed 002 §3.2: `spamlang_run` per (V, D, seed) (D = 0: the full-rank
  head); configs/spamlang.py's CPU model, or Table 3's."""
  return [spamlang_run(spamlang_config(v, d, steps, lr, seed, cpu), outdir)
          for v in vocabs for d in ranks for seed in seeds]


def spamlang_sweep(c, outdir: str) -> list[dict]:
  """The report's SpamLang sweep (configs/report.py: spamlang): at each V
  and lr the full-rank head first, at c.steps steps or enough for
  c.sightings sequences per token (a head row learns only from its own
  token's sequences), doubled (up to c.doublings times) until it learns
  the task (accuracy >= c.learned on every seed); the low ranks then at
  the steps it needed. A V whose full rank never learns keeps its rows,
  marked learned = False."""
  rows = []
  batch = spamlang.get_config("cpu" if c.cpu else "").train.batch_size
  for lr in c.lrs:
    for v in c.vocabs:
      first = max(c.steps, math.ceil(c.sightings * v / batch))
      for k in range(c.doublings + 1):
        steps = first * 2**k
        full = spamlang_runs([v], [0], steps, outdir, lr, c.seeds, c.cpu)
        learned = min(r["accuracy"] for r in full) >= c.learned
        if learned or k == c.doublings:
          break
      low = spamlang_runs([v], [d for d in c.ranks if d], steps, outdir, lr,
                          c.seeds, c.cpu)
      rows += [dict(r, learned=learned) for r in full + low]
  return rows
