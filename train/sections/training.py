"""Report section for seed 004: thesis models trained briefly, on the default.

Runs land in <outdir>/runs/<name>; later sections (the trained-head probes)
load their checkpoints. `ensure_run` resumes a finished run instantly, so
every section can ask for the runs it needs in any order.
"""

from __future__ import annotations

import json
import os

from configs import thesis
from train import completions, plots as train_plots, trainer
from train.sections.common import Section, figure


def run_config(name: str, c):
  """A thesis config (e.g. 'model1,cpu') with the report's overrides."""
  cfg = thesis.get_config(name)
  cfg.train.steps = c.steps
  cfg.train.warmup = max(1, c.steps // 10)
  cfg.eval_every = cfg.checkpoint_every = max(1, c.steps // 4)
  cfg.log_every = max(1, c.steps // 20)
  cfg.async_checkpoint = False
  return cfg


def ensure_run(name: str, c, outdir: str) -> str:
  """Trains (or finds) <outdir>/runs/<name>; returns the workdir."""
  workdir = os.path.join(outdir, "runs", name.replace(",", "_"))
  trainer.train_and_evaluate(run_config(name, c), workdir)
  return workdir


def training(config, outdir: str) -> Section:
  c = config.training
  workdirs = {name: ensure_run(name, c, outdir) for name in c.runs}
  rows = {name: [json.loads(line) for line in open(
      os.path.join(wd, "metrics.jsonl"))] for name, wd in workdirs.items()}
  summary = []
  for name, wd in workdirs.items():
    with open(os.path.join(wd, "config.json")) as f:
      cfg = json.load(f)
    vals = [r["val_loss"] for r in rows[name] if "val_loss" in r]
    tps = [r["tokens_per_s"] for r in rows[name] if r.get("tokens_per_s")]
    summary.append({"run": name, "heads": cfg["model"]["n_head"],
                    "layers": cfg["model"]["n_layer"],
                    "width": cfg["model"]["n_embd"],
                    "vocab": cfg["model"]["vocab_size"], "steps": c.steps,
                    "final_val_loss": vals[-1] if vals else None,
                    "tokens_per_s": max(tps) if tps else None})
  table = completions.story_table(list(workdirs.values()), c.stories,
                                  list(c.tokens), seed=config.seed)
  from train.sections.common import table as md_table  # pylint: disable=g-import-not-at-top
  body = "\n\n".join([
      "Thesis architectures (Table 4.1: heads / layers / width) trained on "
      "the embedded default corpus (generated stories, byte-level "
      f"vocabulary) for {c.steps} steps on this machine: a CPU-sized stand-"
      "in for TinyStories with the GPT-Neo tokenizer (configs/thesis.py "
      "without ',cpu'). Validation loss in nats per byte.",
      md_table(summary),
      figure(train_plots.curves_figure(rows, "Training curves"), outdir,
             "training_curves.png"),
      "Held-out stories split at a random token, completed greedily "
      "(seed 004, Tables 5.1 / 5.2):", table])
  return Section("Seed 004: small GPT models trained on the default corpus",
                 body, {"runs": summary, "completions_markdown": table},
                 ["training_curves.png"])
