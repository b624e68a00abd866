"""Ledger rows of seed 002's eq. (6), Props. 2.5, 2.6 (train/report/
seed002_theory.py): both sides of each check, fed the section's numbers;
and the numbers of a real section on a trained head, from bottleneck/
gradient_theory.py, give 'reproduced' on all three."""

from absl.testing import absltest
import numpy as np

from bottleneck import gradient_theory
from tests import ledger_sides
from tests.ledger_sides import Case
from train.report import claim

R, D, NA = claim.REPRODUCED, claim.DISAGREES, claim.NOT_APPLICABLE
EQ6, P25, P26 = "eq. (6)", "Prop. 2.5", "Prop. 2.6"


def _numbers(**change):
  r = {"contexts": 1000, "tokens": 1024, "V": 4096, "D": 64, "bias": True,
       "C_u": 1000, "C_uu": 600, "D_u": 600, "p_in_open_unit": True,
       "rank_error": 1000, "rank_delta": 128, "rank_delta_cap": 129,
       "rank_h": 64, "rank_w": 64, "error_at_bound": 1e-3,
       "delta_last": 1e-3, "delta_gap": 1e-16, "tail_bound": 5.0,
       "residual": 40.0, "residual_scaled": 20.0, "tail_share": 0.3}
  r.update(change)
  return {"gradient_theory": {"probe model": r}}


def case(where, numbers, verdict, note):
  return Case("002", where, numbers, {}, {"probe model": verdict}, note)


CASES = [
    case(EQ6, _numbers(), R, "rank 128 under the cap 129"),
    case(EQ6, _numbers(rank_delta=140), D, "rank past 2D + 1"),
    case(P25, _numbers(), R, "rank 1000 >= D^u 600"),
    case(P25, _numbers(rank_error=500), D, "rank under D^u"),
    case(P25, _numbers(rank_error=0, p_in_open_unit=False), NA,
         "P leaves (0, 1): the premise fails"),
    case(P26, _numbers(), R, "both residuals over the tail bound"),
    case(P26, _numbers(residual_scaled=4.0), D,
         "the best multiple of Delta comes closer than the bound"),
    case(P26, _numbers(D_u=100, C_uu=100, tail_bound=0.0), NA,
         "D^u under the cap: the tail sum is empty"),
]


class LedgerRowsSeed002TheoryTest(absltest.TestCase):

  def test_both_sides_of_every_check(self):
    ledger_sides.check(self, CASES)

  def test_rows_say_they_are_checks(self):
    for where in (EQ6, P25, P26):
      row, = ledger_sides.claim_of("002", where).read(_numbers(), {})
      self.assertIs(row.can_disagree, False)
      self.assertEqual(row.subject, "probe model")

  def test_a_real_check_reads_reproduced(self):
    """The section's own numbers (gradient_theory.check) on a random
    head and random contexts: all three hold."""
    rng = np.random.default_rng(3)
    x = rng.integers(0, 50, (8, 16))
    ids = gradient_theory.context_ids(x)
    y = rng.integers(0, 50, x.size)
    ctx = gradient_theory.group(ids, y, 60)
    h, w = rng.normal(size=(ctx.n, 4)), rng.normal(size=(60, 4))
    out = gradient_theory.check(h, w, rng.normal(size=60), ctx)
    out.pop("singular_values")
    numbers = {"gradient_theory": {"probe model": dict(out, tokens=y.size)}}
    for where in (EQ6, P25, P26):
      row, = ledger_sides.claim_of("002", where).read(numbers, {})
      self.assertEqual(row.verdict, R, where)

  def test_sub_head_keeps_every_next_token(self):
    """A real head's row subset (seed002_theory.sub_head): every target
    kept and re-indexed, the size asked, the statements checked on it;
    a subset too small for the targets is refused by its field."""
    from train.report import seed002_theory  # pylint: disable=g-import-not-at-top
    rng = np.random.default_rng(4)
    y = rng.choice([3, 17, 99, 250], 40)
    rows, y_sub = seed002_theory.sub_head(y, 300, 32, seed=0)
    self.assertLen(rows, 32)
    self.assertLen(set(rows.tolist()), 32)
    np.testing.assert_array_equal(rows[y_sub], y)
    with self.assertRaisesRegex(ValueError, "probes.theory_vocab"):
      seed002_theory.sub_head(y, 300, 3, seed=0)
    with self.assertRaisesRegex(ValueError, "probes.theory_vocab"):
      seed002_theory.sub_head(y, 300, 301, seed=0)
    x = rng.choice([3, 17, 99, 250], (4, 10))
    ids = gradient_theory.context_ids(x)
    rows, y_sub = seed002_theory.sub_head(np.roll(x, -1, 1).ravel(), 300,
                                          8, seed=0)
    ctx = gradient_theory.group(ids, y_sub, rows.size)
    w = rng.normal(size=(300, 2))
    out = gradient_theory.check(rng.normal(size=(ctx.n, 2)), w[rows], None,
                                ctx)
    self.assertTrue(out["eq6_holds"])
    self.assertEqual(out["V"], 8)


if __name__ == "__main__":
  absltest.main()
