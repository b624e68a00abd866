"""Both sides of the thresholds of seed 002's rows (seed002.py: eq. (10),
App. D's cosine, Figs. 2 and 8; lowrank.py: Fig. 1; spamlang.py: Fig. 14),
the same verdict at every scale's config, and the new intervals against
scipy (issue 77)."""

import math
import warnings

from absl.testing import absltest
import numpy as np
from scipy import stats as sps

from configs import report as report_config
from tests import ledger_sides
from tests.ledger_sides import Case
from train.report import claim, lowrank, seed002, spamlang
from train.report import spamlang_effects

R, D, T, C = (claim.REPRODUCED, claim.DISAGREES, claim.TOO_SMALL,
              claim.CONSISTENT)
CFG = {"lowrank": {"flat": 0.01}, "spamlang": {"learned": 0.95}}
PROBE = "probe_model1_shakespeare_bpe4096_0123456789"


def _head(ratio=0.9916, twin=(0.9915, 0.9920, 0.0002), cosines=None,
          decrease=(0.05, 0.002), rank=((512, 512), (4096, 4090)),
          d_over_v=1 / 64):
  """One probed head's numbers as the gradient section saves them."""
  out = {"norm_ratio": ratio, "D_over_V": d_over_v, "V": 4096, "D": 64,
         "tokens": 8192, "mean_cosine": 0.125,
         "cosine_windows": list(cosines or [0.12, 0.13, 0.125, 0.128]),
         "efficiency_batches": {
             "tokens_per_batch": 1024, "fraction": 0.01,
             "logit_decrease": [decrease[0] * (1 + 0.01 * i)
                                for i in range(4)],
             "hidden_decrease": [decrease[1] * (1 - 0.01 * i)
                                 for i in range(4)]},
         "rank_vs_tokens_long": [{"tokens": t, "rank": k} for t, k in rank]}
  if twin:
    out["random_head"] = {"trained": twin[0], "random": twin[1],
                          "random_std": twin[2], "counted": 0.9922,
                          "tokens": 512}
  return {"gradient": {PROBE: out}}


def _ratio_windows(windows, d_over_v=0.2):
  """A head with per-window eq. (10) ratios and no twin."""
  out = _head(ratio=float(np.mean(windows)), d_over_v=d_over_v, twin=None)
  out["gradient"][PROBE]["ratio_windows"] = list(windows)
  return out


def _efficiency(logit, hidden):
  """A head whose Fig. 8 batches decrease the loss by `logit` / `hidden`."""
  return {"gradient": {PROBE: dict(_head()["gradient"][PROBE],
                                   efficiency_batches={
                                       "tokens_per_batch": 1024,
                                       "fraction": 0.01,
                                       "logit_decrease": list(logit),
                                       "hidden_decrease": list(hidden)})}}


def grad(where, head, verdict, note):
  return Case("002", where, head, CFG, {"probe model": verdict}, note)


EQ10, COS, FIG8, FIG2 = ("Fig. 6, eq. (10)", "App. D / Fig. 11",
                         "Fig. 8 (§3.4)", "Fig. 2")


def _curve(top_end, fall=0.0, noise=0.0, steps=1200):
  """A largest-D validation curve: 6.0 at the first evaluation down to
  `top_end` at 3/4 of the stable phase, then falling by `fall` (relative)
  over its last quarter, each evaluation off by +-noise (relative), and a
  decay drop after it."""
  stable = steps - steps // 10
  out = [(s, 6.0 - (6.0 - top_end) * s / (0.75 * stable))
         for s in range(steps // 12, int(0.75 * stable), steps // 12)]
  for i, s in enumerate(sorted(lowrank.window_evals(steps, stable))):
    x = (s - 0.75 * stable) / (0.25 * stable)
    out.append((s, top_end * (1 - fall * x) * (1 + noise * (-1) ** i)))
  return sorted(out) + [(steps, top_end * 0.97)]


def _lowrank_rows(low_final=5.2, fall=0.0, noise=0.0, seeds=(0, 1),
                  top_end=5.0, steps=1200):
  rows = []
  for seed in seeds:
    end = top_end if not isinstance(top_end, tuple) else top_end[seed]
    curve = _curve(end, fall, noise, steps)
    f = lowrank.flatness(curve, 0.01, until=steps - steps // 10)
    low_curve = [(steps // 2, 6.0), (steps, low_final)]
    common = {"V": 4096, "seed": seed, "steps": steps, "width": 256,
              "tokens_per_step": 1024, "val_tokens": 8192,
              "stable_until": steps - steps // 10}
    lf = lowrank.flatness(low_curve, 0.01, until=steps - steps // 10)
    rows.append(dict(common, D=8, final_val_loss=low_final, curve=low_curve,
                     fall=lf["fall"], flat=False, flatness=lf))
    rows.append(dict(common, D=256, final_val_loss=curve[-1][1],
                     curve=curve, fall=f["fall"], flat=f["state"] == "flat",
                     flatness=f))
  return {"lowrank": {"rows": rows}}


def _lowrank_nan(field):
  """_lowrank_rows with the largest D's flatness `field` NaN (inf for
  'noise') on seed 0."""
  out = _lowrank_rows()
  for r in out["lowrank"]["rows"]:
    if r["D"] == 256 and r["seed"] == 0:
      r["flatness"] = dict(r["flatness"], **{
          field: math.inf if field == "noise" else math.nan})
  return out


def _lowrank_state(state, **kw):
  """_lowrank_rows(**kw) whose saved flatness states all read `state`."""
  out = _lowrank_rows(**kw)
  for r in out["lowrank"]["rows"]:
    r["flatness"] = dict(r["flatness"], state=state)
  return out


def _spam_rows(low_losses, full_acc=0.99, low_acc=0.2,
               vocabs=(256, 4096), full_loss=0.05):
  rows = []
  for v, low in zip(vocabs, low_losses):
    common = {"V": v, "seed": 0, "steps": 250, "lr": 3e-3, "b2": 0.999,
              "sequences": 256}
    rows.append(dict(common, D=128, full_rank=True, final_val_loss=full_loss,
                     accuracy=full_acc))
    rows.append(dict(common, D=8, full_rank=False, final_val_loss=low,
                     accuracy=low_acc))
  return rows


def _arm_rows(full_losses, seeds=(0, 1), vocabs=(256, 4096), tied=None,
              arm="", b2=0.999, variant="repeat"):
  """Rows in the sweep's own format (settings on every row): the full-rank
  head's final loss per V (one per seed: `full_losses[v][seed]`), and a
  tied head's where `tied` gives its losses likewise."""
  rows = []
  for v, losses in zip(vocabs, full_losses):
    for seed, loss in zip(seeds, losses):
      common = {"V": v, "seed": seed, "steps": 250, "lr": 3e-3, "b2": b2,
                "sequences": 256, "variant": variant, "floor": 0.0,
                "arm": arm, "D": 128, "full_rank": True, "accuracy": 0.99}
      rows.append(dict(common, tied=False, final_val_loss=loss))
  for v, losses in zip(vocabs, tied or ()):
    for seed, loss in zip(seeds, losses):
      rows.append(dict(rows[0], V=v, seed=seed, tied=True, arm="tied",
                       final_val_loss=loss))
  return rows


def _grid_rows(loss_at, vocabs=(1024, 4096, 16384), lrs=(3e-3, 1e-3),
               cap=4096, seeds=(0, 1), **kw):
  """Rows of a sweep whose lrs past the first stop at V <= cap
  (spamlang.lr_grid_vocab): loss_at(head, v, lr) per (head, V, lr, seed),
  heads 'full', 'low' (D = 8) and 'tied'."""
  rows = []
  for head in ("full", "low", "tied"):
    for v in vocabs:
      for lr in lrs:
        if lr != lrs[0] and v > cap:
          continue
        for seed in seeds:
          rows.append({"V": v, "seed": seed, "steps": 250, "lr": lr,
                       "b2": 0.999, "sequences": 256, "variant": "repeat",
                       "floor": 0.0, "arm": "tied" if head == "tied" else "",
                       "D": 8 if head == "low" else 128,
                       "full_rank": head != "low", "tied": head == "tied",
                       "accuracy": 0.2 if head == "low" else 0.99,
                       "final_val_loss": loss_at(head, v, lr) + 0.001 * seed,
                       **kw})
  return rows


# The tied head best at 1e-3, which V = 16384 never ran: compared at the
# lr run at every V (3e-3), not its tuned rate against an untuned one.
TIED_GRID = _grid_rows(lambda h, v, lr: 0.10 if h == "full" else (
    0.10 if lr == 1e-3 else 0.30) if h == "tied" else 0.5)
# The low rank flat in V at every lr (0.5 at 1e-3, 0.7 at 3e-3): best-of-
# two at V <= 4096 against 3e-3 alone at 16384 would read a rise.
FLAT_GRID = _grid_rows(lambda h, v, lr: 0.05 if h != "low" else (
    0.5 if lr == 1e-3 else 0.7))


def effect(rows, verdict, note):
  return Case("002", EFFECT, {"spamlang": {"rows": rows}}, CFG,
              {"": verdict}, note)


def tied(rows, verdict, note):
  return Case("002", TIED, {"spamlang": {"rows": rows}}, CFG,
              {"": verdict}, note)


ORDER = "Fig. 1 (§3.1) ordering"
EFFECT = "§1 contributions / Fig. 14"
TIED = "Fig. 14 caption (tied)"


def spam(rows, verdict, note, b2_rows=()):
  return Case("002", "Fig. 14 (§3.2)",
              {"spamlang": {"rows": rows, "b2_rows": list(b2_rows)}}, CFG,
              {"": verdict}, note)


LOW = "Fig. 1 (§3.1)"
CASES = [
    tied(TIED_GRID, D, "at the lr every V ran (3e-3) the tied head is 0.2 "
         "above at every V (best-of-two at V <= 4096 would read 0 there)"),
    spam([r for r in FLAT_GRID if not r["tied"]], T, "the low rank flat in "
         "V at the shared lr: no rise (best-of-two at small V read one)"),
    grad(EQ10, _head(), R, "trained within its Gaussian twins' interval"),
    grad(EQ10, _head(twin=(0.9900, 0.9920, 0.0002)), D,
         "trained clear below its twins: passes more than its rank forces"),
    grad(EQ10, _head(ratio=0.93, d_over_v=0.2), D, "under 0.95"),
    grad(EQ10, _head(twin=(0.9921, 0.9920, 0.02)), T,
         "the twins' spread reaches below 0.95"),
    grad(EQ10, _head(twin=None), R, "no twin: a consistency check"),
    grad(EQ10, _head(ratio=0.9503, d_over_v=0.2), T, "0.9503 +- the twins' "
         "0.0006 straddles 0.95 (the point ratio is above it)"),
    grad(EQ10, _head(ratio=0.97, d_over_v=0.2, twin=None), T,
         "no twin, no windows, not forced by the rank: no interval"),
    grad(EQ10, _ratio_windows([0.96, 0.97, 0.965, 0.962]), R,
         "window interval clear above 0.95"),
    grad(EQ10, _ratio_windows([0.93, 0.97, 0.94, 0.98]), T,
         "window interval straddles 0.95"),
    grad(EQ10, _ratio_windows([0.90, 0.91, 0.905, 0.90]), D,
         "window interval clear under 0.95"),
    grad(COS, _head(), R, "window interval inside 0.1-0.3"),
    grad(COS, _head(cosines=[0.24, 0.25, 0.26, 0.25]), R,
         "0.25: inside App. D's 0.1-0.3 (outside §3.3's 0.1-0.2)"),
    grad(COS, _head(cosines=[0.40, 0.41, 0.39, 0.40]), D, "above 0.3"),
    grad(COS, _head(cosines=[0.27, 0.32, 0.28, 0.33]), T, "straddles 0.3"),
    grad(COS, _head(cosines=[0.08, 0.12, 0.09, 0.13]), T, "straddles 0.1"),
    grad(FIG8, _head(decrease=(0.05, 0.001)), R, "x50: over x10"),
    grad(FIG8, _head(decrease=(0.05, 0.01)), D, "x5: under x10"),
    Case("002", FIG8, {"gradient": {PROBE: dict(
        _head()["gradient"][PROBE], efficiency_batches={
            "tokens_per_batch": 1024, "fraction": 0.01,
            "logit_decrease": [0.05, 0.05, 0.05],
            "hidden_decrease": [0.02, 0.002, 0.0005]})}}, CFG,
         {"probe model": T}, "batches from x2.5 to x100: straddles x10"),
    grad(FIG2, _head(), R, "4090 of 4096 at T = 4096"),
    grad(FIG8, _efficiency([0.05, 0.05, 0.05], [0.002, -0.001, 0.002]),
         claim.NOT_RUN, "a non-positive decrease along H: not run"),
    grad(FIG8, _efficiency([0.05, 0.0, 0.05], [0.002, 0.002, 0.002]),
         claim.NOT_RUN, "a zero decrease along the logits: not run"),
    grad(FIG2, _head(rank=((512, 512), (4096, 2951))), D, "72 % of V"),
    grad(FIG2, _head(rank=((512, 512), (4096, 3016), (8192, 4087))), D,
         "99.8 % at T = 2V but 73.6 % at T = V: the lowest decides"),
    Case("002", LOW, _lowrank_rows(), CFG, {"": C},
         "flat on both seeds, D = 256 reaches D = 8's loss sooner"),
    Case("002", LOW, _lowrank_rows(top_end=5.5), CFG, {"": D},
         "flat, D = 256 never reaches D = 8's final loss"),
    Case("002", LOW, _lowrank_rows(fall=0.03), CFG, {"": T},
         "still falling 3 % over the last quarter"),
    Case("002", LOW, _lowrank_rows(noise=0.01), CFG, {"": T},
         "scatter of 1 % straddles the 1 % criterion"),
    Case("002", LOW, _lowrank_rows(top_end=(5.0, 5.5)), CFG, {"": T},
         "the seeds disagree in direction"),
    Case("002", LOW, _lowrank_rows(top_end=5.3), CFG, {"": T},
         "x1.0x: D = 256 reaches D = 8's loss only at its last evaluation: "
         "the speed-up's lower end is not clear of x1"),
    Case("002", LOW, _lowrank_nan("lo"), CFG, {"": claim.NOT_RUN},
         "a NaN in the flatness interval is not run, never flat"),
    Case("002", LOW, _lowrank_nan("noise"), CFG, {"": claim.NOT_RUN},
         "an inf evaluation noise is not run"),
    Case("002", LOW, _lowrank_state("flat", fall=0.03), CFG, {"": T},
         "the saved state says flat, the numbers say falling"),
    Case("002", LOW, {"lowrank": {"rows": [
        r for r in _lowrank_rows()["lowrank"]["rows"]
        if (r["seed"], r["D"]) != (1, 8)]}}, CFG, {"": claim.NOT_RUN},
         "seed 1 lacks the smallest D: not run, naming it"),
    spam(_spam_rows([0.01, 3.7]), C, "loss rises, accuracy lower, control "
         "learned"),
    spam(_spam_rows([0.02, 0.03], low_acc=0.99), D,
         "flat loss, equal accuracy"),
    spam(_spam_rows([0.01, 3.7], full_acc=0.4), T, "control did not learn"),
    spam(_spam_rows([0.01, 3.7], full_acc=0.95), T,
         "control's bracket straddles 0.95"),
    spam(_spam_rows([0.02, 0.03], low_acc=0.2), T,
         "flat loss but lower accuracy: mixed"),
    spam(_spam_rows([0.01, 3.7]), T, "the control fails at Table 3's "
         "beta2: the setting decides the control",
         b2_rows=[dict(_spam_rows([0])[0], b2=0.95, accuracy=0.871)]),
    spam(_spam_rows([0.01, 3.7]), C, "the control learns at Table 3's "
         "beta2 too", b2_rows=[dict(_spam_rows([0])[0], b2=0.95,
                                    accuracy=0.99)]),
    spam(_spam_rows([0.02, 0.03], low_acc=0.99), T, "low ranks keep up, "
         "but the control at Table 3's beta2 straddles 0.95",
         b2_rows=[dict(_spam_rows([0])[0], b2=0.95, accuracy=0.95)]),
    spam(_spam_rows([0.01, 3.7]) + [dict(_spam_rows([0])[0], b2=0.95,
                                         accuracy=0.871, arm="b2=0.95")],
         T, "Table 3's beta2 as an arm of the sweep: the same reading"),
    Case("002", ORDER, _lowrank_rows(low_final=5.2, noise=0.002), CFG,
         {"": R}, "D = 8 0.2 nats above D = 256 on both seeds"),
    Case("002", ORDER, _lowrank_rows(low_final=4.8, noise=0.002), CFG,
         {"": D}, "D = 8 0.2 nats below D = 256 on both seeds"),
    Case("002", ORDER, _lowrank_rows(low_final=4.86, noise=0.002), CFG,
         {"": T}, "a gap inside the evaluation noise (D = 256 ends 4.85)"),
    Case("002", ORDER, _lowrank_rows(low_final=5.0, noise=0.002,
                                     top_end=(5.0, 5.3)), CFG,
         {"": T}, "seeds on both sides of 0 (4.85 and 5.14)"),
    effect(_arm_rows([[0.05, 0.06, 0.05], [0.9, 1.0, 0.95]],
                     seeds=(0, 1, 2)), claim.REPRODUCED,
           "the width-W head's rise's interval above 0.1 (three seeds)"),
    effect(_arm_rows([[0.05, 0.06, 0.05], [0.07, 0.07, 0.06]],
                     seeds=(0, 1, 2)), D, "flat: the interval under 0.1"),
    effect(_arm_rows([[0.05, 0.06], [0.9, 0.08]]), T, "seeds disagree"),
    effect(_arm_rows([[0.05, 0.06], [0.9, 1.1]]), T,
           "two seeds both rising, a t(1) interval that straddles 0.1"),
    effect(_arm_rows([[0.05], [0.9]], seeds=(0,)), T, "one seed"),
    effect([dict(r, floor=math.log(r["V"] - 1) / 4) for r in _arm_rows(
        [[1.40, 1.39, 1.40], [2.09, 2.10, 2.09]], seeds=(0, 1, 2),
        variant="fresh_first")], D,
           "fresh_first: the raw loss rises with its floor ln(V - 1) / 4, "
           "the excess over it does not"),
    tied(_arm_rows([[0.05, 0.06], [0.5, 0.6]], tied=[[0.06, 0.071],
                                                     [0.51, 0.612]]),
         claim.REPRODUCED, "tied within 0.02 of untied at every V"),
    tied(_arm_rows([[0.05, 0.06], [0.5, 0.6]], tied=[[0.55, 0.58],
                                                     [0.5, 0.6]]),
         D, "tied 0.5 nats worse at V = 256"),
    tied(_arm_rows([[0.05], [0.5]], seeds=(0,), tied=[[0.06], [0.51]]),
         T, "one seed: no interval"),
]


class LedgerRowsSeed002Test(absltest.TestCase):

  def test_both_sides_of_every_threshold(self):
    ledger_sides.check(self, CASES)

  def test_the_same_numbers_give_the_same_verdict_at_every_scale(self):
    for case in CASES:
      got = {s: ledger_sides.verdicts(case._replace(
          config=report_config.get_config(s).to_dict()))
             for s in ("tiny", "quick", "full")}
      self.assertEqual(got["quick"], got["tiny"], case.note)
      self.assertEqual(got["full"], got["tiny"], case.note)

  def test_a_forced_bound_is_a_consistency_check(self):
    c = ledger_sides.claim_of("002", EQ10)
    row, = c.read(_head(twin=None), CFG)
    self.assertIs(row.can_disagree, False)
    row, = c.read(_head(), CFG)
    self.assertIsNone(row.can_disagree)  # The twin test can disagree.
    cos, = ledger_sides.claim_of("002", COS).read(_head(), CFG)
    self.assertIs(cos.can_disagree, False)  # sqrt(1/64) is in 0.1-0.3.

  def test_the_rows_name_beta2_and_the_inferred_definition(self):
    row = spamlang.read_claim({"rows": _spam_rows([0.01, 3.7]), "b2_rows": [
        dict(_spam_rows([0])[0], b2=0.95, accuracy=0.871)]}, CFG)
    text = " ".join(row.deviations)
    self.assertIn("beta2", text)
    self.assertIn("0.871", text)
    self.assertIn("definition inferred", text)
    self.assertIn("claim inferred", text)
    self.assertEqual(row.verdict, T)
    self.assertIn("beta2 = 0.95", row.why)
    self.assertIn("223/256", row.uncertainty)  # Both settings reported.
    self.assertIn("253/256", row.uncertainty)
    self.assertIn("counts are rounded", text)
    self.assertIn("same held-out sequences", text)
    self.assertIn("1 seed(s) per head: no spread", text)
    row = spamlang.read_claim({"rows": _spam_rows([0.01, 3.7])}, CFG)
    self.assertIn("not run at this scale", " ".join(row.deviations))
    two = _spam_rows([0.01, 3.7]) + [dict(r, seed=1)
                                     for r in _spam_rows([0.01, 3.7])]
    row = spamlang.read_claim({"rows": two}, CFG)
    self.assertIn("2 seed(s) per head, averaged", " ".join(row.deviations))

  def test_the_model_and_beta2_deviations_are_read_from_the_rows(self):
    """The CPU model's rows name their width, depth and beta2 against
    Table 3's; Table 3's own settings (30 layers of width 576, sequences
    of 64, beta2 0.95) are no deviation, in all three SpamLang rows."""
    cpu = [dict(r, layers=2, block=4) for r in _spam_rows([0.01, 3.7])]
    paper = [dict(r, layers=30, block=64, b2=0.95,
                  D=576 if r["full_rank"] else r["D"])
             for r in _spam_rows([0.01, 3.7])]
    tied = lambda rows: rows + [dict(r, tied=True, final_val_loss=0.05)
                                for r in rows if r["full_rank"]]
    for rows, width, deviates in ((cpu, 128, True), (paper, 576, False)):
      s = {"spamlang": {"rows": tied(rows)}}
      cfg = dict(CFG, spamlang=dict(CFG["spamlang"], cpu=deviates))
      for c in ("Fig. 14 (§3.2)", "§1 contributions / Fig. 14",
                "Fig. 14 caption (tied)"):
        row = ledger_sides.claim_of("002", c).read(s, cfg)
        text = " ".join(row.deviations)
        self.assertEqual(f"layers of width {width}" in text, deviates, c)
        self.assertEqual("Table 3: 0.95" in text, deviates, c)
        self.assertEqual("model is far smaller" in (row.why or ""),
                         deviates and c == "Fig. 14 (§3.2)", c)
    # The rows' own fields win over the config's scale; a field they lack
    # comes from configs/spamlang.py at that scale.
    said = lambda rows, cpu: " ".join(ledger_sides.claim_of(
        "002", "Fig. 14 (§3.2)").read({"spamlang": {"rows": rows}}, dict(
            CFG, spamlang=dict(CFG["spamlang"], cpu=cpu))).deviations)
    table3 = [dict(r, batch=128, dtype="bfloat16") for r in paper]
    self.assertNotIn("llama-like layers", said(table3, True))
    self.assertIn("2 llama-like layers of width 128, sequences of 4, batch "
                  "256, float32", said(_spam_rows([0.01, 3.7]), True))
    self.assertIn("30 llama-like layers of width 128", said(
        _spam_rows([0.01, 3.7]), False))  # Width from the rows.

  def test_beta2_decides_only_at_the_arms_own_lr(self):
    flat, rising = [[0.05], [0.06]], [[0.05], [0.9]]
    base = (_arm_rows(flat, seeds=(0,)) +
            [dict(r, lr=1e-3) for r in _arm_rows(rising, seeds=(0,))])
    arm = [dict(r, lr=1e-3) for r in _arm_rows(rising, seeds=(0,),
                                                arm="b2=0.95", b2=0.95)]
    # The base is flat at its best lr (3e-3) but rises at the arm's 1e-3,
    # as the arm does: beta2 does not decide.
    said = spamlang_effects.effects_said(base + arm)
    self.assertNotIn("beta2 alone decides", said)
    arm = [dict(r, lr=3e-3) for r in arm]  # Now matched at 3e-3: it does.
    said = spamlang_effects.effects_said(base + arm)
    self.assertIn("**Adam's beta2 alone decides** whether the full rank "
                  "head's task gets harder with V (variant repeat, lr 0.003 "
                  "in both): beta2 0.999: not harder, beta2 0.95: harder.",
                  said)

  def test_comparisons_across_v_use_the_rates_every_v_ran(self):
    got = spamlang_effects.tied_row(TIED_GRID)
    # At V = 1024 the tied head's 1e-3 (0.10) is not its pick: 3e-3 is the
    # rate V = 16384 ran too.
    self.assertIn("V = 1024: +0.200", got.ours)
    self.assertIn("lr 0.003 tied, 0.003 untied", got.ours)
    self.assertIn("0.001, 0.003 at V = 1024, 4096, 0.003 alone at V = "
                  "16384", " ".join(got.deviations))
    self.assertEqual(spamlang_effects.shared_lrs(TIED_GRID), {3e-3})
    self.assertIsNone(spamlang_effects.lr_grid_said(
        [r for r in TIED_GRID if r["lr"] == 3e-3]))

  def test_steps_said_counts_sequences_per_token(self):
    rows = _arm_rows([[0.05], [0.06]], seeds=(0,))
    said = spamlang_effects.steps_said([dict(r, batch=256) for r in rows])
    self.assertIn("V = 256: 250, V = 4096: 250", said)
    self.assertIn("sequences per token 250 at the smallest V, 15.6 at the "
                  "largest", said)

  def test_twin_interval_against_scipy(self):
    twin = {"trained": 0.99, "random": 0.992, "random_std": 0.001}
    gap, half = seed002.twin_interval(twin, draws=5)
    self.assertAlmostEqual(gap, -0.002)
    # A 95 % prediction interval for one more draw: t(4) sd sqrt(1 + 1/5).
    self.assertAlmostEqual(half, sps.t.interval(0.95, 4)[1] * 0.001
                           * math.sqrt(1.2))

  def test_flatness_interval_against_scipy(self):
    curve = [(100, 6.0), (300, 5.0), (325, 5.05), (350, 5.02), (375, 5.04),
             (400, 4.9)]
    f = lowrank.flatness(curve, 0.01)
    x, y = np.array(curve[1:], float).T
    fit = sps.linregress(x, y)
    start = fit.intercept + fit.slope * 300
    self.assertEqual(f["evaluations"], 5)
    self.assertAlmostEqual(f["fall"], -fit.slope * 100 / start)
    half = sps.t.ppf(0.975, 3) * fit.stderr * 100 / start
    self.assertAlmostEqual(f["hi"] - f["fall"], half)
    self.assertEqual(f["state"], "undecided")
    self.assertEqual(lowrank.flatness(curve[:4], 0.01)["state"], "few")

  def test_the_lowrank_row_carries_the_statistic_against_budget(self):
    rows = (_lowrank_rows(steps=600)["lowrank"]["rows"]
            + _lowrank_rows()["lowrank"]["rows"])
    row = lowrank.read_claim({"rows": rows}, CFG)
    self.assertIn("(600 steps); ", row.ours)
    self.assertIn("(1200 steps)", row.ours)

  def test_the_lowrank_row_names_what_it_reads(self):
    row = lowrank.read_claim(_lowrank_rows(top_end=5.3)["lowrank"], CFG)
    self.assertIn("x1.00 .. x1.", row.uncertainty)
    self.assertIn("not the validation set's sampling noise",
                  row.uncertainty)
    row = lowrank.read_claim(_lowrank_rows(fall=0.03)["lowrank"], CFG)
    self.assertIn("x13.79 / x11.70, were read with the older two-point",
                  row.why)
    rows = [r for r in _lowrank_rows()["lowrank"]["rows"]
            if (r["seed"], r["D"]) != (1, 256)]
    with self.assertRaisesRegex(claim.Unread, "seed 1 has no D = 256"):
      lowrank.speedups(rows)

  def test_fig8_twin_against_a_paired_t_interval(self):
    head = _efficiency([0.05, 0.051, 0.052, 0.05], [0.002, 0.0021, 0.0019,
                                                    0.002])
    e = head["gradient"][PROBE]["efficiency_batches"]
    e["twin_logit_decrease"] = [0.04, 0.041, 0.043, 0.04]
    e["twin_hidden_decrease"] = [0.01, 0.011, 0.009, 0.0105]
    row = seed002.efficiency_row(head["gradient"][PROBE])
    trained = np.log10(e["logit_decrease"]) - np.log10(e["hidden_decrease"])
    twin = (np.log10(e["twin_logit_decrease"])
            - np.log10(e["twin_hidden_decrease"]))
    lo, hi = sps.t.interval(0.95, 3, loc=np.mean(trained - twin),
                            scale=sps.sem(trained - twin))
    self.assertIn(f"x{10 ** np.mean(twin):.2f}, the trained head's ratio "
                  f"x{10 ** lo:.2f} .. x{10 ** hi:.2f} of it", row.ours)
    self.assertTrue(any("ours" in d for d in row.deviations))
    for bad, why in ((-1e-4, "non-positive"), (None, "its numbers"),
                     ("x", "its numbers")):
      e["twin_hidden_decrease"][2] = bad  # Said; the verdict stands.
      row2 = seed002.efficiency_row(head["gradient"][PROBE])
      self.assertIn("not measurable", row2.ours)
      self.assertIn(why, row2.ours)
      self.assertEqual(row2.verdict, row.verdict)
    e["twin_hidden_decrease"] = [0.01] * 5
    self.assertIn("5 twin batches against 4",
                  seed002.efficiency_row(head["gradient"][PROBE]).ours)
    e["hidden_decrease"] = e["hidden_decrease"][:3]  # Unequal: no verdict.
    with self.assertRaises(claim.Unread):
      seed002.efficiency_row(head["gradient"][PROBE])

  def test_fig8_far_apart_decreases_do_not_overflow(self):
    with warnings.catch_warnings():
      warnings.simplefilter("error")
      row = seed002.efficiency_row(_efficiency(
          [1e200, 1e150, 1e180], [1e-200, 1e-150, 1e-100])["gradient"][PROBE])
    self.assertEqual(row.verdict, R)
    self.assertIn("x1e+", row.uncertainty)
    with self.assertRaisesRegex(claim.Unread, "batch 1.*grad_H W"):
      seed002.efficiency_row(_efficiency(
          [0.05, 0.05], [0.002, 0.0])["gradient"][PROBE])

  def test_the_ratio_interval_is_the_twins_half_width(self):
    r = _head(ratio=0.9503, d_over_v=0.2)["gradient"][PROBE]
    lo, hi, _ = seed002.ratio_interval(r)
    half = seed002.twin_interval(r["random_head"])[1]
    self.assertAlmostEqual(lo, 0.9503 - half)
    self.assertAlmostEqual(hi, 0.9503 + half)
    w = [0.93, 0.97, 0.94, 0.98]
    lo, hi, _ = seed002.ratio_interval(
        _ratio_windows(w)["gradient"][PROBE])
    ref = sps.t.interval(0.95, 3, loc=np.mean(w), scale=sps.sem(w))
    self.assertAlmostEqual(lo, ref[0])
    self.assertAlmostEqual(hi, ref[1])

  def test_the_sections_open_with_their_rows(self):
    for rows, word in ((_lowrank_rows()["lowrank"]["rows"], "Agrees"),
                       (_lowrank_rows(fall=0.03)["lowrank"]["rows"],
                        "**Cannot tell**")):
      self.assertIn(word, claim.markdown(lowrank.verdict(rows)))
    self.assertIn("consistency check", seed002.opening(
        _head(twin=None)["gradient"]))


if __name__ == "__main__":
  absltest.main()
