"""Report section: trained output matrices against Gaussian ones of their
shapes (seed 001 Fig. 1, solid vs dotted): MiniLM's word embeddings and
real LM heads (SmolLM2, Gemma 3), each with its twin, and the optimum t*
of the first pair (solve mode). Its ledger row: seed001_lp_claims."""

from __future__ import annotations

import time

import numpy as np

from bottleneck import head_stats, topm
from bottleneck.io import cli, matrices, plots
from train.report import seed001_lp_claims as lp_claims
from train.report.claim import Verdict
from train.report.section import Section, figure, table
from train.report.seed001_lp import (_COLS, _m_lp_text, _strip, _sweeps,
                                     opening, rows_of)

_TSTAR_COLS = ["m", "trials", "fraction", "t_star_q10", "t_star_median",
               "t_star_q90", "unclosed"]


def _tstar_reading(curves: dict, threshold: float) -> str:
  """Which matrix has the lower optimum at each m (medians of t*)."""
  (name_a, recs_a), (name_b, recs_b) = list(curves.items())[:2]
  parts = []
  for ra, rb in zip(recs_a, recs_b):
    a, b = ra["t_star_median"], rb["t_star_median"]
    if np.isnan(a) or np.isnan(b):
      continue
    side = "lower" if a < b else "higher"
    parts.append(f"m = {ra['m']}: {a:.3g} vs {b:.3g} ({side})")
  if not parts:
    return "No bracket closed: no t* to compare."
  return (f"Median t* of {name_a} vs {name_b} (below {threshold:g} = "
          f"selectable): " + "; ".join(parts) + ". The fractions above "
          "only say on which side of the threshold each t* falls; the "
          "distance to it is how robust the selection is.")


PAPER_TRAINED = ("the paper: GPT-2's trained head selects like a random "
                 "one of its size, Fig. 1 solid vs dotted")


def trained_verdict(curves: dict) -> Verdict:
  """Trained against its Gaussian twin (the first two curves: name ->
  records over m) by the ledger's test: Fisher's exact test per m,
  Holm-corrected, and its power to see a difference of 0.1."""
  (name_a, a), (name_b, b) = list(curves.items())[:2]
  row = lp_claims.comparison_row(a, b, (name_a, name_b), statistic="")
  return Verdict(lp_claims.section_word(row), row.ours + (
      f" ({row.why})." if row.why else "."), PAPER_TRAINED,
                 "seed 001 Fig. 1")


def identical_rows(a, m_values, trials: int, seed: int) -> dict:
  """The head's groups of bit-identical rows and, per m, how many of the
  sweep's subsets (topm.sweep_instances at the same seed: the ones the LP
  ran) split a group: never selectable, by construction."""
  groups = head_stats.identical_row_groups(a)
  split = []
  if groups:
    drawn = topm.sweep_instances(a.shape[0], {"logits": list(m_values)},
                                 trials, seed)["logits"]
    split = [sum(head_stats.splits_a_group(it.subset, groups) for it in per)
             for per in drawn]
  return {"tokens": int(sum(len(g) for g in groups)), "groups": len(groups),
          "split_subsets": [{"m": m, "split": k} for m, k in
                            zip(m_values, split)]}


def _pair(spec, m_values, trials, c, seed) -> tuple[str, dict]:
  """(name, {'head', 'shape', 'trained', 'gaussian', 'seconds',
  'seconds_per_instance'}): one trained matrix and a Gaussian of its shape
  through the same m, on the same nested token subsets (one seed; the
  matrices are independent, so the two fractions are too)."""
  start = time.perf_counter()
  mat = matrices.load(spec)
  n, d = mat.array.shape
  out = {"head": mat.name, "shape": [n, d]}
  out["trained"] = _sweeps(mat.array, c, m_values, ("logits",), seed,
                           trials=trials)["logits"]
  out["identical_rows"] = identical_rows(mat.array, m_values, trials, seed)
  del mat
  out["gaussian"] = _sweeps(matrices.random(n, d, seed), c, m_values,
                            ("logits",), seed, trials=trials)["logits"]
  out["seconds"] = time.perf_counter() - start
  out["seconds_per_instance"] = out["seconds"] / (2 * trials * len(m_values))
  return spec.split(":")[0], out


def trained_vs_random(config, outdir: str) -> Section:
  """Trained output matrices against Gaussian ones of the same size
  (Figure 1, solid vs dotted): `matrices` (MiniLM's word embeddings) and
  the real LM heads `heads` at their own m and subsets per m; and the
  optimum t* of the first matrix and its twin (solve mode)."""
  c = config.trained
  m_values = cli.parse_int_list("trained.m", c.m)
  pairs = dict(_pair(spec, m_values, c.trials, c, config.seed)
               for spec in c.matrices)
  if c.heads:
    heads_m = cli.parse_int_list("trained.heads_m", c.heads_m)
    pairs.update(_pair(spec, heads_m, c.heads_trials, c, config.seed)
                 for spec in c.heads)
  numbers, lines = {"pairs": pairs}, []
  for name, p in pairs.items():
    for label, recs in ((p["head"], p["trained"]),
                        (f"Gaussian {p['shape'][0]}x{p['shape'][1]}",
                         p["gaussian"])):
      lines += [f"**{label}**: fraction >= {config.threshold} up to "
                f"{_m_lp_text(recs, config.threshold)}.",
                table(_strip(recs), _COLS)]
    lines.append(f"({name}: {p['seconds']:.0f} s, "
                 f"{p['seconds_per_instance']:.2f} s per LP instance.)")
  solve_m = cli.parse_int_list("trained.solve_m", c.solve_m) \
      if c.solve_m else []
  first = next(iter(pairs.values()))
  optima = {}
  if solve_m:
    mat = matrices.load(c.matrices[0]).array
    n, d = mat.shape
    for label, a in ((first["head"], mat),
                     (f"random {n}x{d}", matrices.random(n, d, config.seed))):
      optima[label] = _sweeps(
          a, c, solve_m, ("logits",), config.seed + 1,
          trials=c.solve_trials, objective="solve",
          tolerance=c.solve_tolerance)["logits"]
      numbers[f"{label} t*"] = optima[label]
  shape = tuple(first["shape"])
  figures = [figure(plots.topm_curves(
      {f"{p['head']}" if i == "trained" else f"Gaussian {p['shape'][0]}x"
       f"{p['shape'][1]}": p[i] for p in pairs.values()
       for i in ("trained", "gaussian")}, shape, shape), outdir,
      "trained_vs_random.png", "Trained matrices against Gaussian ones of "
      "their shapes: how far apart the selectability curves lie.")]
  if optima:
    lines += [f"**Optimum t*** (`--objective=solve`, {c.solve_trials} "
              f"other subsets per m, certified to {c.solve_tolerance:g} "
              "relative): " + _tstar_reading(optima, 1.0)]
    lines += [f"*{label}*\n\n" + table(_strip(recs), _TSTAR_COLS)
              for label, recs in optima.items()]
    figures.append(figure(plots.tstar_strips(optima), outdir,
                          "trained_vs_random_tstar.png",
                          "The optimum t* per subset, trained vs Gaussian: "
                          "below the dashed line S is selectable, and the "
                          "distance to it is the margin."))
  rows = rows_of(lp_claims.read_trained, numbers, {})
  body = "\n\n".join([
      opening(rows, PAPER_TRAINED, "seed 001 Fig. 1"),
      "Equal-logit top-m question on trained output matrices and on "
      "Gaussian matrices of the same size, on the same nested token "
      "subsets; per m, Fisher's exact test (Holm-corrected over m) and "
      "its exact power to see a difference of 0.1 in fraction.",
      *lines, *figures])
  return Section("Trained vs random OPMs (Figure 1, solid vs dotted)", body,
                 numbers, ["trained_vs_random.png"] + (
                     ["trained_vs_random_tstar.png"] if optima else []))
