"""The ledger and the sections' verdicts are what they were before issue 76
moved the training experiments into train/report/ and made verdicts data.

tests/testdata/ledger_rows.json holds (a) the sections and config of a
tiny report's results.json (`python -m train.report --scale=tiny`, every
section; markdown and figure lists stripped) with the ledger rows the code
at 4559ea9 computed from them, and the rows of a report without sections;
(b) inputs reaching every branch of the sections' verdict functions, with
the markdown sentence each printed at 4559ea9 and the ledger's reading of
it (ours, verdict word). Regenerate only when a reading changes on
purpose: `python -m tests.ledger_rows_test --write` stores the current
code's rows and sentences for the same inputs.
"""

import json
import os
import sys

from absl.testing import absltest

from train.report import (claim, ledger, lowrank, seed001_lp, seed003,
                          seed004, spamlang)

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "testdata", "ledger_rows.json")
VERDICTS = {"spamlang": spamlang.verdict, "lowrank": lowrank.verdict,
            "thesis": seed004.thesis_verdict,
            "frequency": seed003.frequency_verdict,
            "natural": seed001_lp.natural_verdict,
            "trained": seed001_lp.trained_verdict}


def _load() -> dict:
  with open(FIXTURE) as f:
    return json.load(f)


def _said(case) -> dict:
  """The current code's sentence and reading of one verdict case."""
  v = VERDICTS[case["fn"]](*case["args"], **case["kwargs"])
  ours, _, word = claim.reading(v, "-")
  return {"markdown": claim.markdown(v), "ours": ours, "word": word}


def _by_claim(rows) -> dict:
  return {(r["paper"], r["where"]): r for r in rows}


class LedgerRowsTest(absltest.TestCase):

  def test_a_tiny_reports_rows_are_unchanged(self):
    report = _load()["report"]
    rows = ledger.rows(report["sections"], report["config"], strict=True)
    self.assertLen(rows, len(report["rows"]))
    self.assertEqual(_by_claim(rows), _by_claim(report["rows"]))
    # In paper order (each paper's rows in the registry's order).
    papers = [r["paper"] for r in rows]
    self.assertEqual(papers, sorted(papers))

  def test_a_report_without_sections_is_not_run_as_before(self):
    data = _load()
    rows = ledger.rows({}, data["report"]["config"])
    self.assertEqual(_by_claim(rows), _by_claim(data["rows_without_sections"]))

  def test_every_verdict_branch_says_what_it_said(self):
    cases = _load()["verdicts"]
    self.assertEqual({(c["fn"], c["word"]) for c in cases}, {
        (fn, w) for fn in VERDICTS for w in (claim.SMALLER, claim.DISAGREES,
                                             claim.CANNOT)
        if (fn, w) not in {("natural", claim.CANNOT),
                           ("trained", claim.CANNOT)}})
    for case in cases:
      self.assertEqual(_said(case), {k: case[k] for k in (
          "markdown", "ours", "word")}, case["fn"])

  def test_the_ledger_reads_the_verdict_not_its_markdown(self):
    v = claim.Verdict(claim.DISAGREES, "x" * 500, "the claim")
    ours, scale, word = claim.reading(v, "tiny")
    self.assertEqual((len(ours), ours[-3:], scale, word),
                     (claim.MAX_OURS, "...", "tiny", claim.DISAGREES))
    self.assertEqual(claim.markdown(v._replace(sentence="s.")),
                     "**Disagrees with the claim**: s.")
    self.assertEqual(claim.markdown(v._replace(word=claim.CANNOT,
                                               sentence="s.", cite="Fig. 7")),
                     "**Cannot tell** (Fig. 7; the claim): s.")


def write():
  """Stores the current code's rows and sentences (see the docstring)."""
  data = _load()
  report = data["report"]
  report["rows"] = ledger.rows(report["sections"], report["config"])
  data["rows_without_sections"] = ledger.rows({}, report["config"])
  data["verdicts"] = [dict(c, **_said(c)) for c in data["verdicts"]]
  with open(FIXTURE, "w") as f:
    json.dump(data, f, indent=1)
    f.write("\n")


if __name__ == "__main__":
  if "--write" in sys.argv:
    write()
  else:
    absltest.main()
