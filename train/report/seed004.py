"""Report section for seed 004 (the thesis): its small GPT models trained at
equal token budgets on real text with the GPT-Neo tokenizer, the ordering
of their validation losses (Fig. 5.1) checked, held-out text completed
(Tables 5.1 / 5.2).

The runs (`thesis_run`, configs/thesis.py) land in <outdir>/runs/
(training_runs.run_dir; a finished run resumes instantly, so every section
can ask for the runs it needs in any order). Also the ledger's row.
"""

from __future__ import annotations

import json
import os
import re

from configs import thesis
from train.report import claim
from train.report.claim import CANNOT, DISAGREES, SMALLER, Verdict, markdown
from train.report.section import Section, figure, table as md_table
from train.report.training_runs import run_dir, short_run
from train.training import completions, plots as train_plots
from train.training import runs as run_folders
from train.training import trainer

# Fig. 5.1: at equal steps Model 8's validation loss falls fastest, then
# Model 7's, then Model 6's, and Models 1-5 track Model 6's (§5.1).
THESIS_GROUP = {"model8": 0, "model7": 1}  # Others: group 2.
PAPER_THESIS = ("seed 004 Fig. 5.1: at equal training steps Model 8's "
                "validation loss is lowest, then Model 7's, then Models "
                "1-6's")


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
  cfg = short_run(cfg, steps, max(1, steps // 8), max(1, steps // 20))
  cfg.checkpoint_every = steps
  tag = re.sub(r"[^A-Za-z0-9]+", "-", f"{source or 'default'}-{path}")
  workdir = run_dir(outdir, f"thesis_{name.replace(',', '_')}_"
                    f"{tag.strip('-')}_n{steps}", cfg)
  trainer.train_and_evaluate(cfg, workdir)
  return workdir


def training(config, outdir: str) -> Section:
  """Seed 004 Fig. 5.1 and Tables 5.1 / 5.2: the thesis's models."""
  c = config.training
  workdirs = {name: thesis_run(name, c.steps, outdir, c.source, c.path,
                               c.batch, c.lr)
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
      markdown(thesis_verdict(runs)),
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


def thesis_verdict(runs) -> Verdict:
  """The section's conclusion from its rows: for every pair of trained
  models the thesis orders (Model 8 < Model 7 < Models 1-6 in validation
  loss at equal steps), whether ours are in that order."""
  base = lambda r: r["run"].split(",")[0]
  group = lambda r: THESIS_GROUP.get(base(r), 2)
  pairs = [(a, b) for a in runs for b in runs if group(a) < group(b)]
  if not pairs:
    return Verdict(CANNOT, (
        f"the models trained here ({', '.join(base(r) for r in runs)}) are "
        "ones the thesis does not order; a run with Model 7 or 8 beside "
        "them would decide."), PAPER_THESIS)
  reversed_ = [(a, b) for a, b in pairs
               if a["final_val_loss"] >= b["final_val_loss"]]
  detail = ", ".join(f"{base(r)} {r['final_val_loss']:.3f}" for r in sorted(
      runs, key=lambda r: r["final_val_loss"]))
  if not reversed_:
    return Verdict(SMALLER, (
        "for every pair trained here (final validation loss, lowest first: "
        f"{detail}; one seed each, so differences near 0.01 nats would need "
        "seeds)."), PAPER_THESIS, continues=True)
  a, b = reversed_[0]
  return Verdict(DISAGREES, (
      f"{base(a)} ends at {a['final_val_loss']:.3f} nats, not below "
      f"{base(b)}'s {b['final_val_loss']:.3f} ({detail}); at this budget "
      "the larger model has not yet pulled ahead."), PAPER_THESIS)


def read_claim(s, cfg):
  """The ledger's row: the section's verdict on its saved runs."""
  r = claim.records(s, "runs", need=("final_val_loss",))
  return claim.reading(thesis_verdict(r), ", ".join(
      x["run"] for x in r) + f"; {r[0].get('tokens', '?')} tokens each")


CLAIMS = (
    claim.on("004", "Fig. 5.1", "Model 8 < Model 7 < Models 1-6 in loss at "
             "equal steps", "training", read_claim),
)
