"""Where the report's trained runs live, and the probe model's run.

Each experiment module (lowrank, spamlang, seed004, this one for the probe
subject) trains, or, when the run already finished, instantly resumes,
under <outdir>/runs/<name>_<digest> with configs/ presets plus the report's
step counts (`short_run`). The digest is of the run's whole config: a
folder is reused only by the config that made it (the trainer itself lets a
run resume with another lr or step count).
"""

from __future__ import annotations

import hashlib
import json
import os
import re

from configs import thesis
from train.training import trainer


def short_run(cfg, steps: int, eval_every: int, log_every: int):
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
  """[(step, validation loss)] of a run's metrics rows."""
  return [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]


def probe_model_config(steps: int, plays: str = ""):
  """The probe subject: Model 1's architecture (width 64) on Shakespeare with
  a 4096-token BPE, D/V = 1/64, the regime of real LMs (GPT-2: 768/50257);
  every checkpoint kept for the frequency probe. `plays`: file-name globs of
  the texts it trains on ('' = all 77; corpora.shakespeare_files)."""
  cfg = thesis.get_config("model1,cpu")
  cfg.data.source, cfg.data.tokenizer = "shakespeare", "bpe:4096"
  cfg.data.path = plays
  cfg.model.vocab_size = 4096
  cfg = short_run(cfg, steps, max(1, steps // 4), max(1, steps // 10))
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
