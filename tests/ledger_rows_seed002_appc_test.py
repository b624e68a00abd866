"""Both sides of the thresholds of seed 002 App. C's rows
(train/report/seed002_appc.py: Figs. 9 and 10 on the real LLMs), the
interval against scipy, and bad fields named."""

import copy

from absl.testing import absltest
from scipy import stats as sps

from tests import ledger_sides
from tests.ledger_sides import Case
from train.report import claim, seed002_appc

R, D, T, N = (claim.REPRODUCED, claim.DISAGREES, claim.TOO_SMALL,
              claim.NOT_APPLICABLE)


def _batches(once=0.99, seen=30000, text=2_500_000, over=300, positions=1024,
             v=49152, cuu=9000, windows=None):
  top = min(text, 1 << 21)
  curve = [{"tokens": 1024, "seen_once": 1000, "C_uu": 300,
            "distinct_tokens": 500},
           {"tokens": top, "seen_once": int(once * top), "C_uu": cuu,
            "distinct_tokens": seen}]
  if windows is None:  # Spread evenly over 4 windows.
    windows = [[over // 4 + (i < over % 4), positions // 4] for i in range(4)]
  return {"V": v, "window": 1024, "text_tokens": text, "curve": curve,
          "entropy": {"positions": positions, "over_high": over,
                      "over_high_windows": windows,
                      "high": 5.0, "median": 1.9, "q90": 4.8, "max": 8.0,
                      "ln_V": 10.8}}


def _sections(name="smollm2", **kw):
  return {"real_llm": {"models": {name: {
      "subject": {"V": 49152, "D": 576},
      "pass": {"text": "", "tokens": 16384, "window": 1024},
      "batches": _batches(**kw)}}}}


def case(where, verdict, note, name="smollm2", **kw):
  return Case("002", where, _sections(name, **kw), {}, {name: verdict}, note)


FIG9C, FIG9T, CUU, FIG10 = (
    "App. C / Fig. 9 (contexts)", "App. C / Fig. 9 (tokens)",
    "§2.3 / App. C (|C^uu| >> D)", "App. C / Fig. 10")
CASES = [
    case(FIG9C, R, "99 % seen once in 2M tokens"),
    case(FIG9C, D, "80 % seen once", once=0.8),
    case(FIG9C, T, "99 % seen once, but a 1.3M-token text", text=1_300_000),
    case(FIG9T, R, "30000 of 49152 seen", seen=30000),
    case(FIG9T, D, "15000 of 49152 in 2M tokens", seen=15000),
    case(FIG9T, T, "15000 of 49152 in a 1.3M-token text", seen=15000,
         text=1_300_000),
    case(FIG9T, N, "not SmolLM2's tokenizer", name="gemma3", seen=8000),
    case(CUU, R, "9000 >= 10 x 576"),
    case(CUU, D, "3000 < 5760 in 2M tokens", cuu=3000),
    case(CUU, T, "3000 in a 1.3M-token text", cuu=3000, text=1_300_000),
    case(CUU, N, "not SmolLM2's tokenizer", name="gemma3"),
    case(FIG10, R, "300 of 1024 above 5 nats over 4 windows"),
    case(FIG10, D, "0 of 1024", over=0),
    case(FIG10, T, "4 of 1024, all in one of 4 windows", over=4,
         windows=[[4, 256], [0, 256], [0, 256], [0, 256]]),
    case(FIG10, T, "3 of 256 in one window: [0.002, 0.034]", over=3,
         positions=256, windows=[[3, 256]]),
]


class LedgerRowsSeed002AppCTest(absltest.TestCase):

  def test_both_sides_of_every_threshold(self):
    ledger_sides.check(self, CASES)

  def test_interval_is_clopper_pearson(self):
    row, = ledger_sides.claim_of("002", FIG10).read(
        _sections(over=3, positions=256, windows=[[3, 256]]), {})
    ref = sps.binomtest(3, 256).proportion_ci(0.95, method="exact")
    self.assertIn(f"{ref.low:.3f} .. {ref.high:.3f}", row.uncertainty)

  def test_window_interval_is_students_t(self):
    windows = [[10, 100], [30, 100], [20, 100]]
    row, = ledger_sides.claim_of("002", FIG10).read(
        _sections(over=60, positions=300, windows=windows), {})
    lo, hi = sps.t.interval(0.95, 2, loc=0.2, scale=sps.sem([.1, .3, .2]))
    self.assertIn(f"{max(lo, 0):.3f} .. {hi:.3f}", row.uncertainty)

  def test_inferred_thresholds_are_deviations(self):
    for where, word in ((FIG9C, "nearly all"), (FIG9T, "most tokens"),
                        (CUU, "'>>'"), (FIG10, "non-negligible"),
                        (FIG9T, "few million")):
      row, = ledger_sides.claim_of("002", where).read(_sections(), {})
      self.assertTrue(any(word in d for d in row.deviations), (where, word))
    row, = ledger_sides.claim_of("002", FIG9T).read(_sections(), {})
    self.assertFalse(any("tokenizer:" in d for d in row.deviations))
    row, = ledger_sides.claim_of("002", FIG10).read(_sections(), {})
    self.assertTrue(any("Instruct" in d for d in row.deviations))

  def test_bad_fields_are_rejected_by_name(self):
    m = _sections()["real_llm"]["models"]["smollm2"]
    b = copy.deepcopy(m["batches"])
    b["curve"][1]["seen_once"] = b["curve"][1]["tokens"] + 1
    with self.assertRaisesRegex(ValueError, "seen_once"):
      seed002_appc.contexts_row("smollm2", b, m)
    b = copy.deepcopy(m["batches"])
    b["entropy"]["over_high"] = 2000
    with self.assertRaisesRegex(ValueError, "over_high"):
      seed002_appc.entropy_row("smollm2", b, m)
    b = copy.deepcopy(m["batches"])
    b["entropy"]["over_high_windows"] = [[1, 10]]  # 10 of 1024 positions.
    with self.assertRaisesRegex(ValueError, "over_high_windows"):
      seed002_appc.entropy_row("smollm2", b, m)
    b = copy.deepcopy(m["batches"])
    b["curve"] = []
    with self.assertRaises(claim.Unread):
      seed002_appc.tokens_row("smollm2", b, m)
    b = copy.deepcopy(m["batches"])
    b["V"] = None
    with self.assertRaises(claim.Unread):
      seed002_appc.tokens_row("smollm2", b, m)


if __name__ == "__main__":
  absltest.main()
