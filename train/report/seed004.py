"""Report section for seed 004: thesis models trained briefly, on the default.

Runs land in <outdir>/runs/<name> (train/experiments.py, which resumes a
finished run instantly, so every section can ask for the runs it needs in
any order).
"""

from __future__ import annotations

import json
import os

from train.training import completions, experiments, plots as train_plots
from train.report.section import Section, figure, table as md_table


def training(config, outdir: str) -> Section:
  c = config.training
  workdirs = {name: experiments.thesis_run(name, c.steps, outdir)
              for name in c.runs}
  rows = {name: experiments.read_metrics(wd) for name, wd in workdirs.items()}
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
  body = "\n\n".join([
      "Thesis architectures (Table 4.1: heads / layers / width) trained on "
      "the embedded default corpus (generated stories, byte-level "
      f"vocabulary) for {c.steps} steps on this machine: a CPU-sized stand-"
      "in for TinyStories with the GPT-Neo tokenizer (configs/thesis.py "
      "without ',cpu'). Validation loss in nats per byte.",
      md_table(summary),
      figure(train_plots.curves_figure(rows, "Seed 004: training curves"),
             outdir, "training_curves.png", "Training (solid) and "
             "validation (dashed) loss of each thesis model."),
      "Held-out stories split at a random token, completed greedily "
      "(seed 004, Tables 5.1 / 5.2):", table])
  return Section("Seed 004: small GPT models trained on the default corpus",
                 body, {"runs": summary, "completions_markdown": table},
                 ["training_curves.png"])
