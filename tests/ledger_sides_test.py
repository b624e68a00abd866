"""Every ledger row is a test that can fail (issue 77): over the CASES of
tests/ledger_rows_*_test.py, each claim of ledger.CLAIMS gives at least two
different verdicts, 'disagrees' among them when it declares
`can_disagree`; a claim that cannot disagree is a consistency check and
its rows say so."""

import glob
import importlib
import os

from absl.testing import absltest

from tests import ledger_sides
from train.report import claim, ledger


def all_cases() -> list[ledger_sides.Case]:
  here = os.path.dirname(os.path.abspath(__file__))
  out = []
  for path in sorted(glob.glob(os.path.join(here, "ledger_rows_*_test.py"))):
    name = os.path.splitext(os.path.basename(path))[0]
    out += importlib.import_module(f"tests.{name}").CASES
  return out


class LedgerSidesTest(absltest.TestCase):

  def test_every_claim_is_fed_both_sides_of_its_threshold(self):
    seen: dict[tuple[str, str], set[str]] = {}
    for case in all_cases():
      got = ledger_sides.verdicts(case)
      self.assertEqual(got, case.verdicts, f"{case.where}: {case.note}")
      seen.setdefault((case.paper, case.where), set()).update(got.values())
    for c in ledger.CLAIMS:
      words = seen.get((c.paper, c.where), set())
      with self.subTest(paper=c.paper, where=c.where):
        self.assertGreaterEqual(len(words - {claim.NOT_RUN}), 2, words)
        if c.can_disagree:
          self.assertIn(claim.DISAGREES, words)

  def test_a_row_that_cannot_disagree_says_it_is_a_check(self):
    row = {"verdict": claim.REPRODUCED, "can_disagree": False, "why": ""}
    self.assertIn("consistency check", ledger.verdict_text(row))
    row["can_disagree"] = True
    self.assertEqual(ledger.verdict_text(row), claim.REPRODUCED)


if __name__ == "__main__":
  absltest.main()
