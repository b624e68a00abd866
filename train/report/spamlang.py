"""Seed 002 §3.2 / Fig. 14 (Godey & Artzi): SpamLang against the vocabulary.

Every sequence repeats its first token (the definition inferred; configs/
spamlang.py): any head rank D >= 2 can express the next token (Prop. 2.4).
We read Fig. 14 (a V x learning-rate sweep at hidden size 576, tied against
untied heads) as a low-rank head's final loss rising with V while the
full-rank head learns: the claim is inferred too. The CPU model's control
arm learns with Adam's beta2 = 0.999, not Table 3's 0.95; `table3_b2_arm`
runs it with 0.95 beside it. The sweep's runs (configs/report.py:
spamlang), the report section, its verdict and its ledger row.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from configs import spamlang as spamlang_config
from bottleneck import stats
from train.report import claim
from train.report.claim import (CANNOT, CONSISTENT, DISAGREES, SMALLER,
                                TOO_SMALL, Row, Verdict, markdown)
from train.report.section import Section, figure, table
from train.report.training_runs import run_dir, short_run
from train.text import data
from train.training import trainer


HELD_OUT = 256  # Held-out sequences the accuracy reads.
TABLE3_B2 = 0.95  # Table 3's Adam beta2 (the CPU model's config: 0.999).


def run_config(v: int, d: int, steps: int, lr: float = 0.0, seed: int = 0,
               cpu: bool = True, b2: float = 0.0):
  """configs/spamlang.py at V = v, rank d (0: full), `steps` steps (lr 0:
  the config's; b2 0: the config's Adam beta2), as the report runs it."""
  arg = f"V={v}" + (",cpu" if cpu else "") + (f",D={d}" if d else "") \
      + (f",lr={lr}" if lr else "")
  cfg = short_run(spamlang_config.get_config(arg), steps, max(1, steps // 4),
                  max(1, steps // 10))
  cfg.seed = seed
  cfg.checkpoint_every = steps
  cfg.train.b2 = b2 or cfg.train.b2
  return cfg


def run(cfg, outdir: str) -> dict:
  """Trains (or finds) one SpamLang run: its final validation loss and the
  next-token accuracy on positions >= 1 of HELD_OUT held-out sequences."""
  v, d = cfg.data.spamlang_vocab, cfg.model.get("head_rank", 0)
  d = d if cfg.model.head == "lowrank" else 0
  workdir = run_dir(outdir, f"spamlang_V{v}_D{d}_s{cfg.seed}_n"
                    f"{cfg.train.steps}", cfg)
  summary = trainer.train_and_evaluate(cfg, workdir)
  params, mcfg, _ = trainer.load_params(workdir, cfg)
  x, y = data.SpamLangLoader(v, mcfg.block_size, HELD_OUT,
                             cfg.seed + 10**6).batch(0)
  logits = jax.jit(mcfg.module().apply)(params, x)
  hits = np.argmax(logits, axis=-1) == y
  return {"V": v, "D": d or mcfg.n_embd, "full_rank": not d,
          "seed": cfg.seed, "steps": cfg.train.steps, "lr": cfg.train.lr,
          "b2": cfg.train.b2, "sequences": HELD_OUT,
          "final_val_loss": summary["final_val_loss"],
          "accuracy": float(np.mean(hits[:, 1:]))}


def runs(vocabs, ranks, steps: int, outdir: str, lr: float = 0.0,
         seeds=(0,), cpu: bool = True) -> list[dict]:
  """`run` per (V, D, seed) (D = 0: the full-rank head); configs/
  spamlang.py's CPU model, or Table 3's."""
  return [run(run_config(v, d, steps, lr, seed, cpu), outdir)
          for v in vocabs for d in ranks for seed in seeds]


def sweep(c, outdir: str) -> list[dict]:
  """The report's sweep (configs/report.py: spamlang): at each V and lr the
  full-rank head first, at c.steps steps or enough for c.sightings
  sequences per token (a head row learns only from its own token's
  sequences), doubled (up to c.doublings times) until it learns the task
  (accuracy >= c.learned on every seed); the low ranks then at the steps
  it needed. A V whose full rank never learns keeps its rows, marked
  learned = False."""
  rows = []
  batch = spamlang_config.get_config(
      "cpu" if c.cpu else "").train.batch_size
  for lr in c.lrs:
    for v in c.vocabs:
      first = max(c.steps, math.ceil(c.sightings * v / batch))
      for k in range(c.doublings + 1):
        steps = first * 2**k
        full = runs([v], [0], steps, outdir, lr, c.seeds, c.cpu)
        learned = min(r["accuracy"] for r in full) >= c.learned
        if learned or k == c.doublings:
          break
      low = runs([v], [d for d in c.ranks if d], steps, outdir, lr, c.seeds,
                 c.cpu)
      rows += [dict(r, learned=learned) for r in full + low]
  return rows


def table3_b2_arm(c, rows, outdir: str) -> list[dict]:
  """The full-rank control at V = c.table3_b2_V (0: none) with Table 3's
  Adam beta2 (TABLE3_B2) where the config's differs, at the steps, lr and
  seeds of the config's arm there: the setting that decides whether the
  control learns (configs/spamlang.py), reported beside it."""
  arm = [r for r in rows if r["V"] == c.table3_b2_V and r["full_rank"]
         and r["b2"] != TABLE3_B2]
  return [run(run_config(r["V"], 0, r["steps"], r["lr"], r["seed"], c.cpu,
                         b2=TABLE3_B2), outdir) for r in arm]


def section(config, outdir: str) -> Section:
  """Seed 002 §3.2 / Fig. 14: SpamLang final loss and accuracy vs V."""
  c = config.spamlang
  rows = sweep(c, outdir)
  b2_rows = table3_b2_arm(c, rows, outdir)
  model = ("2 llama-like layers of width 128, sequences of 4, batch 256"
           if c.cpu else "Table 3's SmolLM2-135M architecture, sequences "
           "of 64, batch 128")
  body = "\n\n".join([
      markdown(verdict(rows, c.learned, b2_rows=b2_rows)),
      "SpamLang: every sequence repeats its first token, drawn uniformly "
      "from V; **the definition is inferred** (the section of seed 002 "
      "that defines it is missing from our copy; configs/spamlang.py). "
      "The next token is always the current one, expressible at any rank "
      f"D >= 2 (Prop. 2.4). Model: {model}; accuracy on positions >= 1 "
      f"of {HELD_OUT} held-out sequences; a V whose full-rank head had not "
      f"learned the task (accuracy < {c.learned}) was run again with twice "
      "the "
      f"steps, up to {c.doublings} times (`steps`). Adam's beta2: "
      f"{_b2_said(rows, b2_rows)}.", table(rows + b2_rows),
      figure(vocab_figure(rows), outdir, "spamlang.png",
             "SpamLang: final validation loss and next-token accuracy "
             "against the vocabulary size V, one line per head rank D (the "
             "largest D is the full-rank head), seeds averaged.")])
  return Section("Seed 002 Fig. 14: SpamLang vs vocabulary size", body,
                 {"rows": rows, "b2_rows": b2_rows})


PAPER_SPAMLANG = ("seed 002 Fig. 14: on SpamLang, whose next token any rank "
                  "can express, a low-rank head's final loss rises with V "
                  "while a full-rank head learns the task")


def _best(rows, v, full_rank, d=None):
  """(final loss, accuracy, steps, lr) of a head at V: seeds averaged, at
  its best learning rate."""
  out = []
  for lr in sorted({r["lr"] for r in rows}):
    rs = [r for r in rows if r["V"] == v and r["lr"] == lr and
          r["full_rank"] == full_rank and (d is None or r["D"] == d)]
    if rs:
      out.append((float(np.mean([r["final_val_loss"] for r in rs])),
                  float(np.mean([r["accuracy"] for r in rs])),
                  max(r["steps"] for r in rs), lr))
  return min(out)


def _count(rows, accuracy: float) -> tuple[int, int]:
  """(k, n) of an accuracy over the held-out sequences: a sequence's
  positions repeat its token, so each counts once. k is a pseudo-count,
  round(accuracy * n): the runs save the accuracy over positions (seeds
  averaged), not a count of sequences (COUNTS_ROUNDED says so)."""
  n = int(min(r.get("sequences", HELD_OUT) for r in rows))
  return round(accuracy * n), n


COUNTS_ROUNDED = ("the counts are rounded: k = round(accuracy x sequences), "
                  "the accuracy over positions >= 1 (seeds averaged), each "
                  "held-out sequence counted once")


def _b2_control(b2_rows, learned: float) -> list[tuple]:
  """Table 3's beta2 arm of the control: per run (V, steps, k, n, lo, hi,
  its side of `learned`), the Clopper-Pearson bracket of its accuracy over
  the held-out sequences, as the control at the config's beta2."""
  out = []
  for r in b2_rows:
    k, n = _count([r], r["accuracy"])
    lo, hi = stats.binomial_interval(k, n)
    out.append((r["V"], r["steps"], k, n, lo, hi,
                claim.side(lo, hi, learned)))
  return out


def _b2_said(rows, b2_rows) -> str:
  """Which beta2 the runs used, and the Table 3 arm's result if it ran."""
  used = ", ".join(f"{b:g}" for b in sorted({r.get("b2", 0.0) for r in rows}))
  if not b2_rows:
    return (f"{used} (Table 3: {TABLE3_B2}); the control at "
            f"{TABLE3_B2} not run at this scale (benchmarks/"
            "spamlang_learning.py --b2=0.95,0.999 runs both)")
  arm = "; ".join(f"at V = {r['V']}, {r['steps']} steps, lr {r['lr']:g}: "
                  f"accuracy {r['accuracy']:.3f}" for r in b2_rows)
  return (f"{used} (Table 3: {TABLE3_B2}); with {TABLE3_B2} the full-rank "
          f"control reaches {arm}")


def assess(rows, learned: float = 0.95, gap: float = 0.1,
           b2_rows=()) -> tuple[Verdict, Row]:
  """The section's conclusion and the ledger's row, from one reading of
  its rows (seeds averaged, each head at its best learning rate). The
  control: the full-rank head learned at every V (the Clopper-Pearson
  bracket of its accuracy over the held-out sequences above `learned`;
  below it or straddling: too small to speak). Then for each low rank D:
  its final loss rises with V by more than `gap` nats and exceeds the
  full rank's at the largest V by more than `gap`, and its accuracy there
  is below the full rank's (Fisher's exact test, p < 0.05): both on every
  D consistent in direction (the definition and the claim inferred),
  neither on some D disagrees, else too small to speak."""
  vocabs = sorted({r["V"] for r in rows})
  top_v = vocabs[-1]
  brackets = {}
  for v in vocabs:
    k, n = _count(rows, _best(rows, v, True)[1])
    brackets[v] = (k, n) + stats.binomial_interval(k, n)
  sides = {v: claim.side(b[2], b[3], learned) for v, b in brackets.items()}
  b2 = _b2_said(rows, b2_rows)
  devs = ("SpamLang's definition inferred: the section of seed 002 defining "
          "it is missing from our copy (configs/spamlang.py)",
          "the claim inferred: Fig. 14 is a V x learning-rate sweep at "
          "hidden size 576, tied against untied heads; 'low-rank loss rises "
          "with V while full rank learns' is our reading of it",
          f"Adam beta2: {b2}",
          "model: 2 llama-like layers of width 128, sequences of 4 (Table "
          "3: SmolLM2-135M's 30 layers of width 576, sequences of 64)",
          _seeds_said(rows),
          "each head's learning rate is chosen on the same held-out "
          "sequences its accuracy is then tested on (no separate split)",
          COUNTS_ROUNDED)
  control = ", ".join(f"V = {v}: {b[0]}/{b[1]} ({b[2]:.3f} .. {b[3]:.3f})"
                      for v, b in brackets.items())
  stat = (f"per low rank D, final loss over V (rising by > {gap} nats and "
          f"> {gap} above the full rank's at the largest V) and accuracy "
          "below the full rank's there; the full-rank control learned "
          f"(accuracy >= {learned}) at every V")
  n = (f"{brackets[top_v][1]} held-out sequences per run; V = "
       f"{', '.join(map(str, vocabs))}; "
       f"{len({r['seed'] for r in rows})} seed(s)")
  unlearned = [v for v in vocabs if sides[v] != claim.REPRODUCED]
  if unlearned:
    worst = min(unlearned, key=lambda v: brackets[v][2])
    loss, accuracy, steps, _ = _best(rows, worst, True)
    why = (f"the full-rank control did not clearly learn at V = "
           f"{', '.join(map(str, unlearned))} (accuracy {accuracy:.3f} at V "
           f"= {worst} after {steps} steps, bracket {brackets[worst][2]:.3f}"
           f" .. {brackets[worst][3]:.3f} against {learned}): longer runs "
           "at those V would decide")
    return (Verdict(CANNOT, why + ".", PAPER_SPAMLANG),
            Row(TOO_SMALL, f"control: {control}", stat, n,
                f"95 % Clopper-Pearson over sequences: {control}", why=why,
                deviations=devs))
  b2_failed = [x for x in _b2_control(b2_rows, learned)
               if x[6] != claim.REPRODUCED]
  if b2_failed:
    at = "; ".join(f"V = {v}, {steps} steps: {k}/{m} ({lo:.3f} .. "
                   f"{hi:.3f})" for v, steps, k, m, lo, hi, _ in b2_failed)
    why = (f"the setting decides the control: with the config's Adam beta2 "
           f"the full-rank control learned at every V ({control}), with "
           f"Table 3's beta2 = {TABLE3_B2} it did not clearly learn ({at}, "
           f"against {learned}): the low ranks against a learning control "
           f"at beta2 = {TABLE3_B2} (longer runs) would decide")
    return (Verdict(CANNOT, why + ".", PAPER_SPAMLANG),
            Row(TOO_SMALL, f"control at beta2 {b2}", stat, n,
                f"95 % Clopper-Pearson over sequences: {control}; at "
                f"beta2 = {TABLE3_B2}: {at}", why=why, deviations=devs))
  parts = []
  for d in sorted({r["D"] for r in rows if not r["full_rank"]}):
    loss = [_best(rows, v, False, d)[0] for v in vocabs]
    top_loss, top_acc = _best(rows, top_v, True)[:2]
    k_low, n_low = _count(rows, _best(rows, top_v, False, d)[1])
    k_full, n_full = _count(rows, top_acc)
    p = stats.fisher_exact(k_low, n_low, k_full, n_full)
    rises = all(b >= a for a, b in zip(loss, loss[1:])) and (
        loss[-1] - loss[0] > gap) and loss[-1] - top_loss > gap
    lower = k_low < k_full and p < 0.05
    parts.append((d, rises, lower, loss, top_loss, (k_low, k_full, n_low, p)))
  detail = "; ".join(
      f"D = {d}: {' -> '.join(f'{x:.3g}' for x in loss)} nats over V = "
      f"{vocabs[0]} .. {top_v} (full rank {top:.3g} at V = {top_v}), "
      f"accuracy there {a}/{m} against the full rank's {b}/{m} (Fisher p = "
      f"{p:.2g})" for d, _, _, loss, top, (a, b, m, p) in parts)
  unc = (f"95 % Clopper-Pearson of the control over sequences: {control}; "
         "Fisher's exact test of the low rank's accuracy against the full "
         "rank's at the largest V (in `ours`)")
  ours = f"the full-rank control learned at every V; {detail}"
  if all(p[1] and p[2] for p in parts):
    used = ", ".join(f"{x:g}" for x in sorted({r.get("b2", 0.0)
                                               for r in rows}))
    why = ("the definition and the claim are inferred and the model is far "
           "smaller than Table 3's: the direction is comparable, not the "
           f"magnitude; the control arm ran with Adam's beta2 {used}, not "
           f"Table 3's {TABLE3_B2} (deviations)" + (
               f"; at {TABLE3_B2} the control learned too" if b2_rows
               else f"; the control at {TABLE3_B2} not run"))
    return (Verdict(SMALLER, f"{ours}. Adam's beta2: {b2}.", PAPER_SPAMLANG,
                    extent="in direction"),
            Row(CONSISTENT, ours, stat, n, unc, why=why, deviations=devs))
  flat = [d for d, rises, lower, *_ in parts if not rises and not lower]
  if flat:
    return (Verdict(DISAGREES, (
        f"at D = {', '.join(map(str, flat))}: its loss does not rise with V "
        f"by more than {gap} nats above the full rank's, nor is its "
        f"accuracy lower ({detail}); at this size the low-rank heads keep "
        "up (longer sequences or larger V, as the paper's, may separate "
        "them)."), PAPER_SPAMLANG, continues=True),
            Row(DISAGREES, ours, stat, n, unc, deviations=devs))
  why = ("the loss and the accuracy disagree on some D: more held-out "
         "sequences or seeds (spamlang.seeds) would decide")
  return (Verdict(CANNOT, f"{detail}; {why}.", PAPER_SPAMLANG),
          Row(TOO_SMALL, ours, stat, n, unc, why=why, deviations=devs))


def _seeds_said(rows) -> str:
  """How many seeds each head ran (a deviation: the verdict reads the
  seeds' mean, never their spread)."""
  per = sorted({len({r["seed"] for r in rows if r["V"] == x["V"] and
                     r["D"] == x["D"] and r["lr"] == x["lr"]})
                for x in rows})
  said = str(per[0]) if per[0] == per[-1] else f"{per[0]} to {per[-1]}"
  return (f"{said} seed(s) per head" + (
      ": no spread over seeds" if per[-1] == 1 else
      ", averaged: the verdict reads their mean, not their spread"))


def verdict(rows, learned: float = 0.95, gap: float = 0.1,
            b2_rows=()) -> Verdict:
  """The section's conclusion (`assess`)."""
  return assess(rows, learned, gap, b2_rows)[0]


def vocab_figure(rows):
  """Final loss and accuracy against V, one line per head rank D."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
  for d in sorted({r["D"] for r in rows}):
    vocabs = sorted({r["V"] for r in rows if r["D"] == d})
    for ax, key in zip(axes, ("final_val_loss", "accuracy")):
      ax.plot(vocabs, [np.mean([r[key] for r in rows if r["D"] == d and
                                r["V"] == v]) for v in vocabs], "o-",
              label=f"D={d}" + (" (full)" if any(
                  r["full_rank"] for r in rows if r["D"] == d) else ""))
      ax.set_xscale("log")
      ax.set_xlabel("vocabulary size V")
  every_v = sorted({r["V"] for r in rows})
  for ax in axes:
    ax.minorticks_off()
    ax.set_xticks(every_v, [str(v) for v in every_v])
  axes[0].set_ylabel("final validation loss (nats)")
  axes[1].set_ylabel("next-token accuracy (positions >= 1)")
  axes[0].set_title("SpamLang: loss vs V")
  axes[1].set_title("SpamLang: accuracy vs V")
  for ax in axes:
    ax.legend(fontsize=7)
  return fig


def read_claim(s, cfg):
  """The ledger's row (`assess` on the section's saved rows)."""
  r = claim.records(s, "rows", need=("V", "lr", "steps", "final_val_loss",
                                     "accuracy"))
  b2_rows = s.get("b2_rows") or []
  for i, x in enumerate(b2_rows):
    for k in ("V", "steps", "accuracy"):
      claim.num(x, k, at=f"b2_rows[{i}]")
  return assess(r, cfg["spamlang"]["learned"], b2_rows=b2_rows)[1]


CLAIMS = (
    claim.on("002", "Fig. 14 (§3.2)", "SpamLang (definition inferred): "
             "low-rank loss rises with V, full rank learns (claim "
             "inferred)", "spamlang", read_claim),
)
