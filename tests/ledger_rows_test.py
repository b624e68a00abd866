"""The ledger's rows are data, and the same numbers give the same verdict
at every scale (issue 77): a row may change its verdict between quick and
full only because its numbers changed.

tests/testdata/ledger_rows.json holds the sections and config of a tiny
report's results.json (`python -m train.report --scale=tiny`, every
section; markdown, figure lists and plot point clouds stripped).
Regenerate it when the sections' numbers change shape:
`python -m tests.ledger_rows_test --write --from=report_tiny`.
"""

import json
import os
import sys

from absl.testing import absltest

from configs import report as report_config
from train.report import claim, ledger

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "testdata", "ledger_rows.json")


def _load() -> dict:
  with open(FIXTURE) as f:
    return json.load(f)


def _verdicts(rows) -> list[tuple]:
  return [(r["paper"], r["where"], r["subject"], r["verdict"], r["why"])
          for r in rows]


class LedgerRowsTest(absltest.TestCase):

  def test_the_same_numbers_give_the_same_verdict_at_every_scale(self):
    sections = _load()["report"]["sections"]
    by_scale = {s: _verdicts(ledger.rows(
        sections, report_config.get_config(s).to_dict(), strict=True))
                for s in ("tiny", "quick", "full")}
    self.assertEqual(by_scale["quick"], by_scale["tiny"])
    self.assertEqual(by_scale["full"], by_scale["tiny"])
    # Every claim reads this report: none is 'not run' for an old field.
    self.assertEqual([v for v in by_scale["tiny"] if v[3] == claim.NOT_RUN
                      and "older version" in v[4]], [])

  def test_every_row_is_a_test_as_data(self):
    report = _load()["report"]
    rows = ledger.rows(report["sections"], report["config"], strict=True)
    self.assertGreaterEqual(len(rows), len(ledger.CLAIMS))
    for r in rows:
      with self.subTest(where=r["where"], subject=r["subject"]):
        self.assertEqual(tuple(r), ledger.FIELDS)
        self.assertIn(r["verdict"], claim.WORDS)
        if r["verdict"] in claim.NEEDS_WHY:
          self.assertNotEqual(r["why"], "")
        self.assertIsInstance(r["deviations"], list)
        self.assertIsInstance(r["can_disagree"], bool)
        if r["verdict"] != claim.NOT_RUN:
          for field in ("statistic", "ours", "n", "uncertainty"):
            self.assertNotIn(r[field], ("", "-"), field)
    papers = [r["paper"] for r in rows]  # In paper order.
    self.assertEqual(papers, sorted(papers))
    # The table is printed from the rows: each verdict appears in it.
    text = ledger.markdown(rows, "tiny")
    for r in rows:
      self.assertIn(ledger.verdict_text(r).replace("|", "\\|")[:60], text)

  def test_a_row_of_a_sections_verdict(self):
    v = claim.Verdict(claim.CANNOT, "x" * 500, "the claim")
    r = claim.row_of(v, statistic="s", n="n", uncertainty="u")
    self.assertEqual((len(r.ours), r.ours[-3:], r.verdict, r.why),
                     (claim.MAX_OURS, "...", claim.TOO_SMALL, r.ours))
    r = claim.row_of(v._replace(word=claim.SMALLER), statistic="s", n="n",
                     uncertainty="u", deviations=("corpus",))
    self.assertEqual((r.verdict, r.why, r.deviations),
                     (claim.REPRODUCED, "", ("corpus",)))
    self.assertEqual(claim.markdown(v._replace(sentence="s.")),
                     "**Cannot tell** (the claim): s.")
    self.assertEqual(claim.markdown(v._replace(word=claim.DISAGREES,
                                               sentence="s.")),
                     "**Disagrees with the claim**: s.")

  def test_a_malformed_row_is_refused(self):
    good = claim.Row(claim.REPRODUCED, "o", "s", "n", "u")
    self.assertIs(claim.check_row(good), good)
    for bad, said in ((good._replace(verdict="agrees"), "not one of"),
                      (good._replace(verdict=claim.TOO_SMALL), "needs a"),
                      (good._replace(deviations=["x"]), "tuple of strings")):
      with self.assertRaisesRegex(ValueError, said):
        claim.check_row(bad)
    with self.assertRaisesRegex(TypeError, "not a claim.Row"):
      claim.check_row(("reproduced", "o"))

  def test_side_of_an_interval(self):
    self.assertEqual(claim.side(0.991, 1.0, 0.99), claim.REPRODUCED)
    self.assertEqual(claim.side(0.5, 0.98, 0.99), claim.DISAGREES)
    self.assertEqual(claim.side(0.69, 1.0, 0.99), claim.TOO_SMALL)
    self.assertEqual(claim.side(0.5, 0.98, 0.99, agrees_above=False),
                     claim.REPRODUCED)
    with self.assertRaisesRegex(ValueError, "`lo`"):
      claim.side(1.0, 0.5, 0.9)


def _drop_plot_points(tree):
  """Removes the figures' point clouds (`scatter`), which no row reads."""
  if isinstance(tree, dict):
    tree.pop("scatter", None)
    for v in tree.values():
      _drop_plot_points(v)
  elif isinstance(tree, list):
    for v in tree:
      _drop_plot_points(v)


def write(outdir: str):
  """Stores the sections and config of the tiny report in `outdir`."""
  with open(os.path.join(outdir, "results.json")) as f:
    saved = json.load(f)
  for section in saved["sections"].values():
    for k in ("markdown", "figures"):
      section.pop(k, None)
  _drop_plot_points(saved["sections"])
  with open(FIXTURE, "w") as f:
    json.dump({"report": {"sections": saved["sections"],
                          "config": saved["config"]}}, f, indent=1)
    f.write("\n")


if __name__ == "__main__":
  if "--write" in sys.argv:
    write(next(a.split("=", 1)[1] for a in sys.argv if a.startswith(
        "--from=")))
  else:
    absltest.main()
