"""Report section for seed 004 (the thesis): its small GPT models trained at
equal token budgets on real text with the GPT-Neo tokenizer, the ordering
of their validation losses (Fig. 5.1) checked, held-out text completed
(Tables 5.1 / 5.2) and the completions scored against the originals
(train/report/thesis_completions.py: no ledger row, the thesis states no
number); the ledger's rows (train/report/thesis_stats.py): Fig. 5.1's
ordering, §5.1's "Models 1-6 alike", Table 4.1's counts.

The runs (`thesis_run`, configs/thesis.py) land in <outdir>/runs/
(training_runs.run_dir; a finished run resumes instantly, so every section
can ask for the runs it needs in any order).
"""

from __future__ import annotations

import json
import os
import re

import numpy as np

from configs import report as report_config
from configs import thesis
from train.report import claim, thesis_completions, thesis_eval
from train.report import thesis_stats
from train.report.claim import CANNOT, DISAGREES, SMALLER, Verdict, markdown
from train.report.section import Section, figure, table as md_table
from train.report.training_runs import run_dir, short_run
from train.training import plots as train_plots
from train.training import runs as run_folders
from train.training import trainer

PAPER_THESIS = ("seed 004 Fig. 5.1: at equal training steps Model 8's "
                "validation loss is lowest, then Model 7's, then Models "
                "1-6's")


def thesis_run(name: str, steps: int, outdir: str, source: str = "",
               path: str = "", batch: int = 0, lr: float = 0.0,
               seed: int = 0) -> str:
  """Trains (or finds) one of the thesis's models (configs/thesis.py: its
  GPT-Neo tokenizer, V = 50257) for `steps` steps on `source` / `path`
  ('' = the config's TinyStories), `batch` sequences of 128 tokens a step,
  peak lr `lr` (0 = the config's) and `seed` (initialisation, data order
  and which validation windows the trainer draws); returns the workdir."""
  cfg = thesis.get_config(name)
  cfg.seed = seed
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
                    f"{tag.strip('-')}_n{steps}" + (f"_s{seed}" if seed
                                                    else ""), cfg)
  trainer.train_and_evaluate(cfg, workdir)
  return workdir


def scored(workdirs: dict, windows: int = 0, windows_of: str = ""):
  """({name: each validation window's loss}, the windows' targets [W, T])
  of the runs' last checkpoints on the first `windows` (0: all) of their
  trainer's validation windows, or of `windows_of`'s (another run's)."""
  losses, targets = {}, None
  for name, wd in workdirs.items():
    losses[name], y = thesis_eval.window_losses(wd, windows, windows_of)
    if targets is not None and not np.array_equal(y, targets):
      raise ValueError("the thesis runs were evaluated on different "
                       "validation windows; their losses cannot be paired.")
    targets = y
  return losses, targets


def measured(workdirs: dict, windows: int = 0) -> dict:
  """What the ledger's rows test (train/report/thesis_eval.py): each run's
  loss on every validation window of its last evaluation, the unigram's on
  the same windows (the first `windows` of them; 0: all), Table 4.1's
  parameter counts; `targets` [W, T] (not saved)."""
  losses, targets = scored(workdirs, windows)
  first = next(iter(workdirs.values()))
  return {"window_losses": losses, "unigram": {
      "window_losses": thesis_eval.unigram_window_losses(first, targets)},
          "param_counts": thesis_eval.param_counts(), "targets": targets}


def alike_seed_runs(c, seeds: list[int], run, first: dict, targets
                    ) -> list[dict]:
  """Models 1-6 of `c.runs` again at each of `seeds` (§5.1 over seeds): per
  run its name, seed and loss on the first seed's validation windows
  (`first`: name -> workdir; `targets`: those windows' [W, T], checked)."""
  six = [n for n in c.runs if thesis_stats.GROUP.get(
      thesis_stats.base(n)) == 2]
  out = []
  for seed in seeds if six else ():
    losses, y = scored({name: run(name, seed) for name in six},
                       c.get("eval_windows", 0), first[six[0]])
    if not np.array_equal(y, targets):
      raise ValueError(f"seed {seed}'s runs were scored on other windows "
                       "than the first seed's; their spreads cannot be "
                       "compared.")
    out += [{"run": name, "seed": seed, "window_losses": losses[name]}
            for name in six]
  return out


def training(config, outdir: str) -> Section:
  """Seed 004 Fig. 5.1, §5.1 and Tables 4.1, 5.1 / 5.2: the thesis's
  models."""
  c = config.training
  seeds = report_config.alike_seeds(config)  # Also checked at the start.
  run = lambda name, seed: thesis_run(name, c.steps, outdir, c.source,
                                      c.path, c.batch, c.lr, seed)
  workdirs = {name: run(name, config.seed) for name in c.runs}
  rows = {name: run_folders.metrics(wd) for name, wd in workdirs.items()}
  got = measured(workdirs, c.get("eval_windows", 0))
  seed_runs = alike_seed_runs(c, seeds, run, workdirs, got["targets"])
  scores, table = thesis_completions.measure(workdirs, c.stories,
                                             list(c.tokens), config.seed)
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
                 "final_val_loss": vals[-1] if vals else None,
                 "window_losses": got["window_losses"][name],
                 "completion_scores": scores[name]})
  corpus = (f"{c.source}" + (f" ({c.path})" if c.path else "")
            if c.source else "the configs' own corpus (generated stories, "
            "byte-level)")
  numbers = {"runs": runs, "unigram": got["unigram"], "steps": c.steps,
             "thesis_steps": thesis.get_config("model1").train.steps,
             "seeds": [config.seed], "corpus": corpus,
             "alike_seeds": [config.seed] + (seeds if seed_runs else []),
             "seed_runs": seed_runs,
             "param_counts": got["param_counts"],
             "completions_markdown": table}
  shown = [{k: v for k, v in r.items()
            if k not in ("window_losses", "completion_scores")} for r in runs]
  body = "\n\n".join(filter(None, [
      thesis_completions.untrained(runs),
      markdown(thesis_verdict(numbers)),
      f"Thesis architectures (Table 4.1: heads / layers / width) trained "
      f"on {corpus} at equal token budgets ({c.steps} steps of "
      f"{runs[0]['tokens'] // c.steps} tokens; the thesis: "
      f"{numbers['thesis_steps']:,} steps on TinyStories). Validation loss "
      "in nats per token; the unigram cross-entropy of the same windows "
      f"(token frequencies of the training text, no context): "
      f"{np.mean(got['unigram']['window_losses']):.3f}.", md_table(shown),
      said("Models 1-6 alike (§5.1)", thesis_stats.alike_row(numbers)),
      said("Table 4.1's parameter counts", thesis_stats.params_row(numbers)),
      figure(train_plots.curves_figure(rows, "Seed 004: training curves"),
             outdir, "training_curves.png", "Training (solid) and "
             "validation (dashed) loss of each thesis model against steps "
             "(equal tokens per step)."),
      "Held-out text split at a random token, completed greedily "
      "(seed 004, Tables 5.1 / 5.2), and scored against the original "
      "continuation: each model's mean loss on the original's tokens "
      "given the prompt (teacher forcing, nats per token), the unigram's "
      "on the same tokens, the share of positions where the greedy token "
      "is the original's and the tokens they share from the start (means "
      f"over {c.stories} stories; the thesis judges its completions by "
      "eye and states no number to test):",
      thesis_completions.table(runs), table]))
  return Section("Seed 004: the thesis's small GPT models", body, numbers,
                 ["training_curves.png"])


def said(what: str, row: claim.Row) -> str:
  """A paragraph stating one of the section's ledger rows."""
  return (f"**{what}**: {row.verdict}: {row.ours}" +
          (f" ({row.why})" if row.why else "") + ".")


def thesis_verdict(numbers) -> Verdict:
  """The section's opening sentence: the ledger's Fig. 5.1 row (every
  pair the thesis orders, Model 8 < Model 7 < Models 1-6 at equal steps,
  clear of the evaluation noise, every model beyond the unigram)."""
  row = thesis_stats.ordering_row(numbers)
  word = {claim.REPRODUCED: SMALLER, claim.CONSISTENT: SMALLER,
          DISAGREES: DISAGREES}.get(row.verdict, CANNOT)
  tail = f"; {row.why}" if row.why else ""
  unc = f" ({row.uncertainty})" if row.uncertainty != "-" else ""
  return Verdict(word, f"{row.ours}{unc}{tail}.", PAPER_THESIS,
                 extent="in direction" * (row.verdict == claim.CONSISTENT))


CLAIMS = (
    claim.on("004", "Fig. 5.1", "Model 8 < Model 7 < Models 1-6 in loss at "
             "equal steps", "training",
             lambda s, cfg: thesis_stats.ordering_row(s)),
    claim.on("004", "§5.1 Models 1-6 alike", "Models 1-5's validation "
             "loss closely mirrors Model 6's", "training",
             lambda s, cfg: thesis_stats.alike_row(s)),
    claim.on("004", "Table 4.1", "6.69M (Models 1, 3, 5), 6.89M (2, 4, 6), "
             "29M (7), 70M (8) parameters", "training",
             lambda s, cfg: thesis_stats.params_row(s)),
)
