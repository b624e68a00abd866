"""Both sides of the thresholds of seed 003's rows (seed003_rows.py,
seed003.read_frequency) and of the real-LLM section's rows
(real_llm_rows.py), and their intervals against scipy (issue 77)."""

import copy
import math

from absl.testing import absltest
import numpy as np
from scipy import stats as sps

from bottleneck import logit_gradients, stats
from configs import report as report_config
from tests import ledger_sides
from tests.ledger_sides import Case
from train.probes import gradient
from train.report import (claim, intervals, real_llm_rows, seed003,
                          seed003_rows)

R, D, T, C, N = (claim.REPRODUCED, claim.DISAGREES, claim.TOO_SMALL,
                 claim.CONSISTENT, claim.NOT_APPLICABLE)
CFG = {"probes": {"steps": 400}}


def _encoding(r2=0.97, inp=0.7, dims=None, v=4096, d=64):
  e = {"adj_r2": r2, "V": v, "D": d, "positions": 1024,
       "profiles": {"dim_abs_spearman": dims or [0.1] * 64}}
  if inp is not None:
    e["adj_r2_input_embeddings"] = inp
  return e


def _edit(per=(0.2, 0.25, 0.15), unedited=1.1, detect=None):
  """Algorithm 1's numbers; `detect`: per-token e_ood of the MLR fitted on
  268 detect positions (Fig. 5), None: no such variant."""
  table = [{"variant": "b=2", "e_local": float(np.mean(per)),
            "e_ood": float(np.mean(per)), "e_local_per_token": list(per)}]
  if detect is not None:
    table.append({"variant": "detect 268, b=2", "e_ood": float(np.mean(
        detect)), "e_ood_per_token": list(detect)})
  return {"table": table, "scales": [0.5, 2.0], "unedited_error": unedited,
          "sentence_tokens": 134,
          "positions_per_set": {"local": 512, "ood": 512}}


def _prune(ratio=2.0, noise=0.05, blocks=8):
  """Per block: KL(saliency) 0.1, KL(adversarial) ratio x 0.1, the ratio
  off by +-noise in alternate blocks."""
  sal = [[0.1] * 10 for _ in range(blocks)]
  adv = [[0.1 * ratio * (1 + noise * (-1) ** b)] * 10 for b in range(blocks)]
  return {"ratios": [round(0.1 * i, 1) for i in range(10)], "positions": 512,
          "saliency": sal[0], "adversarial": adv[0],
          "blocks": {"positions": [64] * blocks, "saliency": sal,
                     "adversarial": adv}}


def probe(**kw):
  enc = kw.pop("encoding", _encoding())
  return {"encoding": {"encoding": enc, "edit": kw.pop("edit", _edit()),
                       "prune": kw.pop("prune", _prune())}}


def case(where, sections, verdicts, note, paper="003"):
  return Case(paper, where, sections, CFG, verdicts, note)


def _freq(encoded_step, steps=(0, 100, 200, 300, 400)):
  losses = [None, 7.0, 5.5, 5.1, 5.0]
  return {"V": 4096, "rows": [
      {"step": s, "adj_r2": 0.9 if s >= encoded_step else 0.1,
       "conv_head": 0.1, "val_loss": l} for s, l in zip(steps, losses)]}


SEED003 = [
    case("Table 1", probe(), {"probe model": R}, "0.97, interval > 0.8"),
    case("Table 1", probe(encoding=_encoding(r2=0.5)), {"probe model": D},
         "0.5, interval < 0.8"),
    case("Table 1", probe(encoding=_encoding(r2=0.8, v=100, d=64)),
         {"probe model": T}, "few tokens: the interval straddles 0.8"),
    case("Table 1 (input embeddings)", probe(), {"probe model": R},
         "0.7 > 0.5"),
    case("Table 1 (input embeddings)", probe(encoding=_encoding(inp=0.07)),
         {"probe model": N}, "0.07 on a width-64 model: not the paper's "
         "class (a setup difference)"),
    case("Table 1 (input embeddings)", probe(encoding=_encoding(
        inp=0.5, v=120, d=64)), {"probe model": T},
         "few tokens: the interval straddles 0.5"),
    case("Table 1 (input embeddings)", probe(encoding=_encoding(
        inp=0.07, v=50000, d=2560)), {"probe model": D},
         "0.07 at the paper's width"),
    case("Fig. 3", probe(), {"probe model": R}, "median 0.1 < 0.2"),
    case("Fig. 3", probe(encoding=_encoding(dims=[0.6] * 64)),
         {"probe model": D}, "median 0.6 > 0.2"),
    case("Fig. 3", probe(encoding=_encoding(dims=list(np.linspace(
        0, 0.4, 9)))), {"probe model": T}, "9 dimensions around 0.2"),
    case("Algorithm 1 / Table 2", probe(), {"probe model": R},
         "e_local 0.2 of 1.1"),
    case("Algorithm 1 / Table 2", probe(edit=_edit((0.9, 1.0, 0.95))),
         {"probe model": D}, "e_local 0.95 of 1.1"),
    case("Algorithm 1 / Table 2", probe(edit=_edit((0.1, 1.0, 0.5))),
         {"probe model": T}, "three tokens spread around 0.55"),
    case("Algorithm 1 / Table 2", probe(edit=_edit((0.58, 0.60, 0.59))),
         {"probe model": R}, "54 % of not editing: under the paper's "
         "worst case (GPT-2 XL, 58 %)"),
    case("Algorithm 1 / Table 2", probe(edit=_edit((0.70, 0.72, 0.71))),
         {"probe model": D}, "65 %: above the paper's worst case"),
    case("Fig. 6", probe(), {"probe model": R}, "adversarial x2"),
    case("Fig. 5", probe(edit=_edit(detect=(0.2, 0.25, 0.15))),
         {"probe model": R}, "e_ood 0.2 = 18 % of 1.1 from 268 positions"),
    case("Fig. 5", probe(edit=_edit(detect=(0.9, 1.0, 0.95))),
         {"probe model": D}, "86 % of not editing"),
    case("Fig. 5", probe(edit=_edit(detect=(0.1, 1.0, 0.5))),
         {"probe model": T}, "straddles 0.64"),
    case("Fig. 5", probe(), {"probe model": claim.NOT_RUN},
         "a detect set of <= 268 positions: no such variant"),
    case("Fig. 6", probe(prune=_prune(0.5)), {"probe model": D},
         "adversarial x0.5"),
    case("Fig. 6", probe(prune=_prune(1.0, noise=0.3)), {"probe model": T},
         "x1 within noise"),
    case("Fig. 7 (§5)", {"encoding": {"frequency_llama": _freq(100)}},
         {"": R}, "encoded at 100, converged at 300"),
    case("Fig. 7 (§5)", {"encoding": {"frequency_llama": _freq(400)}},
         {"": D}, "encoded at 400, after convergence"),
    case("Fig. 7 (§5)", {"encoding": {"frequency_llama": _freq(300)}},
         {"": T}, "the same checkpoint"),
]


def _model(**kw):
  m = {"subject": {"V": 49152, "D": 576}, "pass": {
      "text": "", "tokens": 16384, "windows": 16, "window": 64}}
  m.update(kw)
  return {"real_llm": {"models": {"smollm2": m}}}


def _nucleus(over=3, positions=512, rank=1000):
  return {"rank": rank, "positions": positions, "window": 64,
          "past_rank_mass_mean": 2e-4, "past_rank_mass_max": 0.3,
          "p0.9": {"median": 40.0, "max": 2500, "over_rank": over},
          "p0.95": {"median": 90.0, "max": 4000, "over_rank": 2 * over}}


def _cumulative(tokens=173, v=49152, std=0.0, nucleus=None):
  ms = [1, 10, 100, 150, 200, 1000, 5000, 20000]
  mean = [0.2, 0.5, 0.85, 0.89, 0.91, 0.95, 0.99, 1.0]
  if tokens >= 5000:
    mean = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.89, 0.95]
  elif tokens > 400:  # Crosses 0.9 between 1000 and 5000.
    mean = [0.2, 0.4, 0.6, 0.7, 0.75, 0.85, 0.95, 1.0]
  return {"m": ms, "mean": mean, "std_over_windows": [std] * 8, "V": v,
          "positions": 512, "tokens_for_0.9_of_mean_curve": tokens,
          "tokens_for_0.9_median": 88, "nucleus": nucleus or _nucleus()}


def _rowstats(cv=0.18, rounding=0.0003, positive=0.98, pairs=10000):
  return {"trained": {"norm_mean": 1.0, "norm_std": cv,
                      "cos_positive": positive, "pairs": pairs},
          "random": {"norm_mean": 1.0, "norm_std": 0.03,
                     "cos_positive": 0.5},
          "quantisation": {"noise_rel_rms": rounding}}


def _gradient(ratio=0.9918, dv=0.0117, cos=0.133, windows=None, twin=None):
  g = {"norm_ratio": ratio, "D_over_V": dv, "mean_cosine": cos,
       "tokens": 16384, "per_token_quantiles": {
           "0.05": 0.98, "0.5": 0.99, "0.95": 0.995}}
  if windows is not None:
    g["cosine_windows"] = list(windows)
  if twin is not None:  # (trained, random mean, random sd, draws)
    g["random_head"] = dict(zip(("trained", "random", "random_std",
                                 "draws"), twin), tokens=2048)
  return g


def _figure1(trained, gaussian, n):
  def arm(ks):
    return [{"m": 40 + 10 * i, "feasible": k, "infeasible": n - k}
            for i, k in enumerate(ks)]
  return {"trained": arm(trained), "gaussian": arm(gaussian)}


def _shared(ratio=2.0, noise=0.05, per=(0.2, 0.25, 0.15), tied=True):
  """The shared-matrix probe's numbers: _prune's blocks at RATIOS 0.1..0.5
  and per-token e of the shared edit."""
  if not tied:
    return {"applicable": False, "why": "the head is untied"}
  pr = _prune(ratio, noise)
  cut = lambda rows: [r[1:6] for r in rows]  # pylint: disable=unnecessary-lambda-assignment
  kl = {"saliency": [0.1] * 5, "adversarial": [0.1 * ratio] * 5}
  return {"applicable": True, "positions": 256,
          "ratios": [0.1, 0.2, 0.3, 0.4, 0.5],
          "removal": {"shared": kl, "head_only": kl},
          "blocks": {"positions": [32] * 8,
                     "saliency": cut(pr["blocks"]["saliency"]),
                     "adversarial": cut(pr["blocks"]["adversarial"])},
          "edit": {"shared": {"e_per_token": list(per), "e": float(
              np.mean(per)), "kl_unedited": 1e-4},
                   "head_only": {"e_per_token": list(per), "e": float(
                       np.mean(per)), "kl_unedited": 1e-4},
                   "tokens": [5, 6, 7][:len(per)], "occurrences": [1, 2, 3],
                   "scales": [0.2, 0.5, 2.0, 5.0], "b": 2.0,
                   "unedited_error": 1.15}}


def _mauve(at30=0.9, control=0.97, edits=(0.95, 0.93), run=True,
           changed=0.2):
  """The MAUVE probe's numbers: saliency removal 0.1..0.5 falling through
  `at30` at 30 %, a control, two edits."""
  if not run:
    return {"run": False, "why": "mauve_samples = 0 at this scale"}
  return {"run": True, "applicable": True, "samples": 128,
          "prompt_tokens": 4, "new_tokens": 32,
          "control": {"mauve": control}, "ratios": [0.1, 0.2, 0.3, 0.4, 0.5],
          "adversarial_ratios": [0.1, 0.3, 0.5],
          "removal": {"saliency": [0.96, 0.94, at30, 0.5, 0.3],
                      "adversarial": [0.4, 0.1, 0.05]},
          "edits": [{"token": 5, "scale": s, "mauve": v, "changed": changed}
                    for s, v in zip((0.2, 5.0), edits)], "threshold": 0.8}


REAL = [
    case("Fig. 6 MAUVE (tied, shared matrix)", _model(mauve=_mauve()),
         {"smollm2": R}, "0.90 >= 0.80"),
    case("Fig. 6 MAUVE (tied, shared matrix)", _model(mauve=_mauve(0.6)),
         {"smollm2": D}, "0.60 + 0.03 < 0.80"),
    case("Fig. 6 MAUVE (tied, shared matrix)", _model(mauve=_mauve(
        0.75, control=0.9)), {"smollm2": T}, "0.75 + 0.10 >= 0.80"),
    case("Fig. 6 MAUVE (tied, shared matrix)", _model(mauve=_mauve(
        run=False)), {"smollm2": claim.NOT_RUN}, "quick: not run"),
    case("Table 2 MAUVE (tied, shared matrix)", _model(mauve=_mauve()),
         {"smollm2": R}, "0.94 - 0.97 = -0.03 >= -0.04"),
    case("Table 2 MAUVE (tied, shared matrix)", _model(mauve=_mauve(
        edits=(0.5, 0.6))), {"smollm2": D}, "-0.42 + 0.03 < -0.04"),
    case("Table 2 MAUVE (tied, shared matrix)", _model(mauve=_mauve(
        edits=(0.85, 0.87), control=0.92)), {"smollm2": T},
         "-0.06 + 0.08 >= -0.04"),
    case("Table 2 MAUVE (tied, shared matrix)", _model(mauve=_mauve(
        changed=0.0)), {"smollm2": T}, "the edits changed no text"),
    case("§4 (tied, shared matrix)", _model(shared=_shared()),
         {"smollm2": R}, "adversarial x2 the saliency order's KL"),
    case("§4 (tied, shared matrix)", _model(shared=_shared(0.5)),
         {"smollm2": D}, "adversarial cheaper than saliency"),
    case("§4 (tied, shared matrix)", _model(shared=_shared(1.0, 0.3)),
         {"smollm2": T}, "noisy ratio around 1"),
    case("§4 (tied, shared matrix)", _model(shared=_shared(tied=False)),
         {"smollm2": N}, "untied: no shared matrix"),
    case("Table 2 (tied, shared matrix)", _model(shared=_shared()),
         {"smollm2": R}, "e 0.2 = 17 % of 1.15"),
    case("Table 2 (tied, shared matrix)", _model(shared=_shared(
        per=(0.9, 1.0, 0.95))), {"smollm2": D}, "e 0.95 = 83 % of 1.15"),
    case("Table 2 (tied, shared matrix)", _model(shared=_shared(
        per=(0.1, 1.0, 0.5))), {"smollm2": T}, "straddles 0.67"),
    case("App. A on real LLMs", _model(cumulative=_cumulative()),
         {"smollm2": R}, "173: within 100 .. 400", "001"),
    case("App. A on real LLMs", _model(cumulative=_cumulative(
        2000, v=262144)), {"smollm2": D}, "1000 .. 5000 of 262144: under 2 "
         "% of V but over 400 tokens (the old share test: consistent)",
         "001"),
    case("App. A on real LLMs", _model(cumulative=_cumulative(5000)),
         {"smollm2": D}, "5000 of 49152 (10 %)", "001"),
    case("App. A on real LLMs", _model(cumulative=_cumulative(
        5000, std=0.8)), {"smollm2": T}, "wide errors", "001"),
    case("App. A conjecture on real LLMs", _model(cumulative=_cumulative()),
         {"smollm2": R}, "3 of 512 past rank 1000: [0.001, 0.017]", "001"),
    case("App. A conjecture on real LLMs", _model(cumulative=_cumulative(
        nucleus=_nucleus(80))), {"smollm2": D}, "80 of 512: [0.13, 0.19]",
         "001"),
    case("App. A conjecture on real LLMs", _model(cumulative=_cumulative(
        nucleus=_nucleus(2, positions=32))), {"smollm2": T},
         "2 of 32: [0.008, 0.21]", "001"),
    case("App. A conjecture on real LLMs", dict(_model(
        cumulative=_cumulative(v=500)), real_llm={"models": {"smollm2": dict(
            _model(cumulative=_cumulative(v=500))["real_llm"]["models"][
                "smollm2"], subject={"V": 500, "D": 64})}}),
         {"smollm2": claim.NOT_APPLICABLE},
         "V = 500: nothing past rank 1000", "001"),
    case("App. E on real LLMs", _model(rowstats=_rowstats()),
         {"smollm2": R}, "0.18 > 0.03", "001"),
    case("App. E on real LLMs", _model(rowstats=_rowstats(0.01)),
         {"smollm2": D}, "0.01 < 0.03", "001"),
    case("App. E on real LLMs", _model(rowstats=_rowstats(
        0.0005, 0.0005)), {"smollm2": N}, "norm-constrained", "001"),
    case("App. E cosines on real LLMs", _model(rowstats=_rowstats()),
         {"smollm2": R}, "98 % positive", "001"),
    case("App. E cosines on real LLMs", _model(rowstats=_rowstats(
        positive=0.3)), {"smollm2": D}, "30 % positive", "001"),
    case("App. E cosines on real LLMs", _model(rowstats=_rowstats(
        positive=0.8)), {"smollm2": D}, "80 % positive: not 'almost all' "
         "(over 1/2, the old threshold)", "001"),
    case("App. E cosines on real LLMs", _model(rowstats=_rowstats(
        positive=0.9)), {"smollm2": T}, "90 % of 10000 pairs", "001"),
    case("App. E cosines on real LLMs", _model(rowstats=_rowstats(
        positive=0.95, pairs=40)), {"smollm2": T},
         "95 % of the 40 pairs saved (not the default 10000)", "001"),
    case("Fig. 1 on real LLMs", _model(figure1=_figure1(
        [95, 95, 95, 73], [100, 100, 100, 75], 100)), {"smollm2": T},
         "SmolLM2's 100-subset run: p 0.06 at each of 4 m, not under "
         "0.05 / 4", "001"),
    case("Fig. 1 on real LLMs", _model(figure1=_figure1(
        [80, 100], [100, 100], 100)), {"smollm2": D}, "0.8 vs 1.0", "001"),
    case("Fig. 1 on real LLMs", _model(figure1=_figure1(
        [540, 300], [540, 300], 600)), {"smollm2": R},
         "equal in the transition, power to see 0.1", "001"),
    case("Fig. 1 on real LLMs", _model(figure1=_figure1(
        [4, 3], [4, 4], 4)), {"smollm2": T}, "4 subsets per m", "001"),
    case("Fig. 6 on real LLMs", _model(gradient=_gradient()),
         {"smollm2": R}, "0.9918 >= 0.95 (a check here)", "002"),
    case("Fig. 6 on real LLMs", _model(gradient=_gradient(0.9, 0.2)),
         {"smollm2": D}, "0.90 at D/V = 0.2", "002"),
    case("Fig. 6 on real LLMs", _model(gradient=_gradient(twin=(
        0.9918, 0.9920, 0.0001, 3))), {"smollm2": R},
         "the trained head within its 3 twins' t(2) prediction interval",
         "002"),
    case("Fig. 6 on real LLMs", _model(gradient=_gradient(twin=(
        0.9900, 0.9920, 0.0001, 3))), {"smollm2": D},
         "the trained head clear below its twins (the old test: >= 0.95)",
         "002"),
    case("Fig. 6 on real LLMs", _model(gradient=_gradient(
        0.96, 0.09, twin=(0.96, 0.954, 0.01, 3))), {"smollm2": T},
         "3 twins: t(2) interval reaches below 0.95", "002"),
    case("App. D cosine on real LLMs", _model(gradient=_gradient(
        windows=[0.13, 0.135, 0.132, 0.134])), {"smollm2": R},
         "0.133 inside 0.1-0.3, interval over windows", "002"),
    case("App. D cosine on real LLMs", _model(gradient=_gradient(
        windows=[0.25, 0.26, 0.24, 0.25])), {"smollm2": R},
         "0.25: inside App. D's 0.1-0.3 (outside 0.1-0.2)", "002"),
    case("App. D cosine on real LLMs", _model(gradient=_gradient(
        windows=[0.40, 0.41, 0.39, 0.40])), {"smollm2": D},
         "0.40 above 0.3", "002"),
    case("App. D cosine on real LLMs", _model(gradient=_gradient(
        windows=[0.08, 0.12, 0.09, 0.13])), {"smollm2": T},
         "straddles 0.1", "002"),
    case("App. D cosine on real LLMs", _model(gradient=_gradient()),
         {"smollm2": T}, "no per-window cosines: no interval", "002"),
    case("App. D cosine on real LLMs", _model(gradient=_gradient(
        cos=0.054, dv=640 / 262144)), {"smollm2": N},
         "Gemma 3: sqrt(D/V) = 0.049, outside 0.1-0.3 by dimension "
         "counting", "002"),
]

CASES = SEED003 + REAL


class LedgerRowsSeed003Test(absltest.TestCase):

  def test_both_sides_of_every_threshold(self):
    ledger_sides.check(self, CASES)

  def test_a_row_that_cannot_disagree_says_so(self):
    row = real_llm_rows.gradient_row("m", _gradient(), {"subject": {
        "V": 49152, "D": 576}, "pass": {"text": "", "tokens": 1}})
    self.assertFalse(row.can_disagree)
    row = real_llm_rows.gradient_row("m", _gradient(0.9, 0.2), {"subject": {
        "V": 10, "D": 2}, "pass": {"text": "", "tokens": 1}})
    self.assertIsNot(row.can_disagree, False)
    # A narrow untied model cannot disagree on Table 1's input embeddings.
    row, = ledger_sides.claim_of("003", "Table 1 (input embeddings)").read(
        probe(encoding=_encoding(inp=0.07)), CFG)
    self.assertIs(row.can_disagree, False)

  def test_a_failed_edit_is_explained_from_its_curve(self):
    """Algorithm 1's disagreement names the share of the requested
    log-scale the edit realised (a least-squares slope: 0.1 here) and eq.
    (1)'s direction's e_local; an edit that did what was asked reads 1."""
    edit = _edit((0.9, 1.0, 0.95))
    edit["curve"] = [(r, r ** 0.1) for r in (0.2, 0.5, 2.0, 5.0)]
    edit["table"].append({"variant": "A = -E[h] (eq. 1), b=2",
                          "e_local": 0.31})
    row = seed003_rows.edit_row("probe model", edit, probe()["encoding"],
                                CFG)
    self.assertEqual(row.verdict, D)
    self.assertIn("realises 0.10 of the requested", row.why)
    self.assertIn("A = -E[h] gives e_local 0.31", row.why)
    edit["curve"] = [(r, r ** 3) for r in (0.2, 0.5, 2.0, 5.0)]
    self.assertIn("understate", seed003_rows.edit_row(
        "probe model", edit, probe()["encoding"], CFG).why)
    edit["curve"] = [(r, r ** -0.5) for r in (0.2, 0.5, 2.0, 5.0)]
    self.assertIn("wrong way", seed003_rows.edit_row(
        "probe model", edit, probe()["encoding"], CFG).why)
    edit = _edit()
    edit["curve"] = [(r, r) for r in (0.2, 0.5, 2.0, 5.0)]
    row = seed003_rows.edit_row("probe model", edit, probe()["encoding"],
                                CFG)
    self.assertEqual(row.verdict, R)
    self.assertIn("requested log-scale 1.00", row.ours)

  def test_fig5_says_whether_the_size_is_what_fails(self):
    """A small detect set that fails where the whole set fails too is not
    Fig. 5's failure; where the whole set passes, it is."""
    for whole, word in ((0.95, "fails too"), (0.2, "too few")):
      edit = _edit((whole,) * 3, detect=(0.9, 1.0, 0.95))
      edit["table"][0]["e_ood_per_token"] = [whole] * 3
      row = seed003_rows.fig5_row("probe model", edit, probe()["encoding"],
                                  CFG)
      self.assertEqual(row.verdict, D)
      self.assertIn(word, row.why)
      self.assertIn("the small set minus the whole", row.ours)
    edit = _edit(detect=(0.2, 0.25, 0.15))
    del edit["table"][0]  # No b=2 row: unreadable, not 'not run'.
    with self.assertRaises(claim.Unread):
      seed003_rows.fig5_row("probe model", edit, probe()["encoding"], CFG)

  def test_above_the_papers_range_is_said(self):
    m = {"subject": {"V": 49152, "D": 576}, "pass": {"text": "",
                                                     "tokens": 1}}
    row = real_llm_rows.gradient_row("m", _gradient(0.9988, 0.0024), m)
    self.assertIn("above the paper's 95-99 % range, as dimension counting "
                  "forces", row.ours)
    self.assertIs(row.can_disagree, False)

  def test_gradient_twin_interval_uses_the_saved_draws(self):
    m = {"subject": {"V": 49152, "D": 576}, "pass": {"text": "",
                                                     "tokens": 1}}
    row = real_llm_rows.gradient_row("m", _gradient(
        twin=(0.9918, 0.9920, 0.001, 3)), m)
    half = sps.t.ppf(0.975, 2) * 0.001 * math.sqrt(1 + 1 / 3)
    self.assertIn(f"{half:.4f}", row.uncertainty)
    self.assertIn("2 degrees of freedom", row.uncertainty)

  def test_bad_fields_are_rejected_by_name(self):
    for bad, field in ((_cumulative(), "positions"),):
      bad = dict(bad, positions=-5)
      with self.assertRaisesRegex(ValueError, field):
        real_llm_rows.appendix_a_row("m", bad, _model()["real_llm"][
            "models"]["smollm2"])
    m = copy.deepcopy(_model()["real_llm"]["models"]["smollm2"])
    m["subject"]["V"] = float("nan")
    with self.assertRaises(claim.Unread):
      real_llm_rows.norm_row("m", _rowstats(), m)
    m["subject"]["V"] = 0
    with self.assertRaisesRegex(ValueError, "V"):
      real_llm_rows.norm_row("m", _rowstats(), m)
    with self.assertRaisesRegex(ValueError, "window"):
      real_llm_rows.appendix_a_row("m", _cumulative(), dict(
          m, subject={"V": 49152}, **{"pass": {"window": 0}}))
    enc = dict(_encoding(), positions=-1)
    with self.assertRaisesRegex(ValueError, "positions"):
      seed003_rows.table1_row("probe model", enc, probe(encoding=enc)[
          "encoding"], CFG)
    # Fig. 7: a NaN convergence rate is no number; steps must increase.
    f = _freq(100)
    f["rows"][1]["conv_head"] = float("nan")
    with self.assertRaises(claim.Unread):
      seed003.read_frequency({"frequency_llama": f}, {})
    with self.assertRaisesRegex(ValueError, "step"):
      seed003.read_frequency({"frequency_llama": _freq(
          100, steps=(0, 100, 100, 300, 400))}, {})

  def test_the_same_numbers_give_the_same_verdict_at_every_scale(self):
    configs = {s: report_config.get_config(s).to_dict()
               for s in ("quick", "full")}
    for c in CASES:
      for scale, cfg in configs.items():
        self.assertEqual(ledger_sides.verdicts(c._replace(config=cfg)),
                         c.verdicts, (c.where, c.note, scale))

  def test_median_interval_against_scipy(self):
    rng = np.random.default_rng(0)
    for n in (9, 20, 64, 577):
      x = rng.random(n)
      _, lo, hi = intervals.median_interval(x)
      ref = sps.quantile_test(x, q=np.median(x), p=0.5).confidence_interval(
          0.95)
      self.assertAlmostEqual(lo, ref.low, msg=n)
      self.assertAlmostEqual(hi, ref.high, msg=n)

  def test_t_interval_against_scipy(self):
    x = [0.2, 0.4, 0.1, 0.7]
    mean, lo, hi = intervals.t_interval(x)
    ref = sps.t.interval(0.95, 3, loc=np.mean(x), scale=sps.sem(x))
    np.testing.assert_allclose((lo, hi), ref)
    self.assertAlmostEqual(mean, np.mean(x))

  def test_r2_interval_covers_like_a_simulation(self):
    # The spread of R^2 over simulated regressions with population R^2 0.8
    # against the standard error the interval uses.
    rng = np.random.default_rng(1)
    n, k, r2s = 400, 8, []
    for _ in range(300):
      x = rng.standard_normal((n, k))
      y = x @ np.ones(k) + rng.standard_normal(n) * math.sqrt(k / 4)
      fit = np.linalg.lstsq(np.c_[x, np.ones(n)], y, rcond=None)[0]
      res = y - np.c_[x, np.ones(n)] @ fit
      r2s.append(1 - res.var() / y.var())
    lo, hi = intervals.r2_interval(0.8, n, k)
    se = (hi - lo) / (2 * 1.959964)
    self.assertAlmostEqual(se / np.std(r2s), 1.0, delta=0.2)

  def test_gram_twins_equal_the_svd_twins(self):
    # gradient.gram_twins (large heads, Gram sums by row blocks) against
    # logit_gradients.subspace_ratios (float64 SVD) on a small head with a
    # common direction.
    rng = np.random.default_rng(0)
    h = rng.standard_normal((40, 24)).astype(np.float32)
    w = (rng.standard_normal((3000, 24)) * 0.3 + np.eye(24)[0]).astype(
        np.float32)
    y = rng.integers(0, 3000, 40)
    ref = logit_gradients.subspace_ratios(h, w, None, y, draws=4)
    got = gradient.gram_twins(h, w, None, y, draws=4, rows=700)
    for k in ("trained", "counted"):  # The same matrices: equal.
      self.assertAlmostEqual(got[k], ref[k], places=9, msg=k)
    # Other Gaussians (float32 draws): the same law.
    self.assertAlmostEqual(got["random"], ref["random"],
                           delta=4 * ref["random_std"])
    self.assertBetween(got["random_std"] / ref["random_std"], 0.2, 5.0)
    row = real_llm_rows.gradient_row("m", dict(_gradient(), random_head=got),
                                     {"subject": {"V": 3000, "D": 24},
                                      "pass": {"text": "", "tokens": 40}})
    self.assertIn(f"Gaussian heads of its shape {got['random']:.4f}",
                  row.ours)


if __name__ == "__main__":
  absltest.main()
