"""Report section for seed 004 (the thesis): its small GPT models trained at
equal token budgets on real text with the GPT-Neo tokenizer, the ordering
of their validation losses (Fig. 5.1) checked, held-out text completed
(Tables 5.1 / 5.2).

Runs land in <outdir>/runs/ (train/training/experiments.py, which resumes
a finished run instantly, so every section can ask for the runs it needs
in any order).
"""

from __future__ import annotations

import json
import os

from train.report.section import Section, figure, table as md_table
from train.training import completions, experiments, plots as train_plots
from train.training import runs as run_folders

# Fig. 5.1: at equal steps Model 8's validation loss falls fastest, then
# Model 7's, then Model 6's, and Models 1-5 track Model 6's (§5.1).
THESIS_GROUP = {"model8": 0, "model7": 1}  # Others: group 2.
PAPER_THESIS = ("seed 004 Fig. 5.1: at equal training steps Model 8's "
                "validation loss is lowest, then Model 7's, then Models "
                "1-6's")


def training(config, outdir: str) -> Section:
  c = config.training
  workdirs = {name: experiments.thesis_run(name, c.steps, outdir, c.source,
                                           c.path, c.batch, c.lr)
              for name in c.runs}
  rows = {name: run_folders.metrics(wd) for name, wd in workdirs.items()}
  runs = []
  for name, wd in workdirs.items():
    with open(os.path.join(wd, "config.json")) as f:
      cfg = json.load(f)
    vals = [r["val_loss"] for r in rows[name] if "val_loss" in r]
    runs.append({"run": name, "heads": cfg["model"]["n_head"],
                 "layers": cfg["model"]["n_layer"],
                 "width": cfg["model"]["n_embd"],
                 "vocab": cfg["model"]["vocab_size"],
                 "tokens": c.steps * cfg["train"]["batch_size"] *
                           cfg["model"]["block_size"],
                 "final_val_loss": vals[-1] if vals else None})
  table = completions.story_table(list(workdirs.values()), c.stories,
                                  list(c.tokens), seed=config.seed,
                                  labels=list(workdirs))
  corpus = (f"{c.source}" + (f" ({c.path})" if c.path else "")
            if c.source else "the configs' own corpus")
  body = "\n\n".join([
      thesis_verdict(runs),
      f"Thesis architectures (Table 4.1: heads / layers / width) trained "
      f"on {corpus} at equal token budgets ({c.steps} steps of "
      f"{runs[0]['tokens'] // c.steps} tokens; the thesis: 20,000 steps on "
      "TinyStories). Validation loss in nats per token.", md_table(runs),
      figure(train_plots.curves_figure(rows, "Seed 004: training curves"),
             outdir, "training_curves.png", "Training (solid) and "
             "validation (dashed) loss of each thesis model against steps "
             "(equal tokens per step)."),
      "Held-out text split at a random token, completed greedily "
      "(seed 004, Tables 5.1 / 5.2):", table])
  return Section("Seed 004: the thesis's small GPT models", body,
                 {"runs": runs, "completions_markdown": table},
                 ["training_curves.png"])


def thesis_verdict(runs) -> str:
  """The section's conclusion from its rows: for every pair of trained
  models the thesis orders (Model 8 < Model 7 < Models 1-6 in validation
  loss at equal steps), whether ours are in that order."""
  base = lambda r: r["run"].split(",")[0]
  group = lambda r: THESIS_GROUP.get(base(r), 2)
  pairs = [(a, b) for a in runs for b in runs if group(a) < group(b)]
  if not pairs:
    return (f"**Cannot tell** ({PAPER_THESIS}): the models trained here "
            f"({', '.join(base(r) for r in runs)}) are ones the thesis does "
            "not order; a run with Model 7 or 8 beside them would decide.")
  reversed_ = [(a, b) for a, b in pairs
               if a["final_val_loss"] >= b["final_val_loss"]]
  detail = ", ".join(f"{base(r)} {r['final_val_loss']:.3f}" for r in sorted(
      runs, key=lambda r: r["final_val_loss"]))
  if not reversed_:
    return (f"**Agrees with {PAPER_THESIS}** for every pair trained here "
            f"(final validation loss, lowest first: {detail}; one seed "
            "each, so differences near 0.01 nats would need seeds).")
  a, b = reversed_[0]
  return (f"**Disagrees with {PAPER_THESIS}**: {base(a)} ends at "
          f"{a['final_val_loss']:.3f} nats, not below {base(b)}'s "
          f"{b['final_val_loss']:.3f} ({detail}); at this budget the larger "
          "model has not yet pulled ahead.")
