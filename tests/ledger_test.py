"""The claims ledger reads its rows from a report's numbers (issue 60):
change a number, the row changes; a folder without a current results.json
is one error line."""

import json
import os
import subprocess
import sys

from absl.testing import absltest

from configs import report as report_config
from train.report import ledger

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def row(sections, where, config=None, paper=None):
  config = config or report_config.get_config("quick").to_dict()
  return next(r for r in ledger.rows(sections, config)
              if r["where"] == where and paper in (None, r["paper"]))


class LedgerTest(absltest.TestCase):

  # Seed 001's closed-form rows (Table 1, Fig. 5, Prop. 2, Cor. 3):
  # tests/ledger_rows_seed001_bounds_test.py.
  # Seed 001's LP rows (Figs. 1 and 3, App. D, trained vs random):
  # tests/ledger_rows_seed001_lp_test.py.
  # Seed 002's rows (eq. (10), App. D, Figs. 1, 2, 8, 14):
  # tests/ledger_rows_seed002_test.py.
  # Seed 003's and the real-LLM rows: tests/ledger_rows_seed003_test.py.

  def test_absent_and_older_sections(self):
    rows = ledger.rows({}, report_config.get_config("quick").to_dict())
    self.assertLen(rows, len(ledger.CLAIMS))
    self.assertTrue(all(r["verdict"] == "not run" and "not in this report"
                        in r["why"] for r in rows))
    r = row({"encoding": {"encoding": {"adj_r2": 0.9, "V": 4096}}},
            "Fig. 7 (§5)")
    self.assertEqual(r["verdict"], "not run")
    self.assertIn("lacks 'frequency_llama' (older version)", r["why"])

  def test_nan_null_and_empty_numbers_are_not_run(self):
    for value, said in ((float("nan"), "is nan"), (None, "is null")):
      s = {"real_llm": {"models": {"smol": {"encoding": {"adj_r2": value}}}},
           "encoding": {"encoding": {"adj_r2": value, "V": 64}},
           "training": {"runs": [{"run": "model8", "final_val_loss": value},
                                 {"run": "model1", "final_val_loss": 3.0}]}}
      for paper, where, field in (
          ("seed 003", "Table 1", "`encoding.adj_r2"),
          ("seed 004", "Fig. 5.1", "`runs[0].final_val_loss")):
        r = row(s, where, paper=paper)
        self.assertEqual(r["verdict"], "not run", (where, value))
        self.assertIn(f"{field}` {said}", r["why"])
    s = {"table1": {"rows": [], "rows_matching_paper": {"gumbel": 0}}}
    r = row(s, "Table 1", paper="seed 001")
    self.assertEqual((r["verdict"], r["why"]),
                     ("not run", "`rows` is empty"))

  def test_no_real_models_is_not_run(self):
    rows = ledger.rows({"real_llm": {"models": {}}},
                       report_config.get_config("quick").to_dict())
    real = [r for r in rows if "real LLMs" in r["where"]]
    self.assertGreaterEqual(len(real), 4)
    for r in real:
      self.assertEqual(r["verdict"], "not run", r["where"])
      self.assertStartsWith(r["why"], "no real LLM", r["where"])

  def test_malformed_results_json_is_one_error(self):
    outdir = self.create_tempdir().full_path
    path = os.path.join(outdir, "results.json")
    good = {"version": ledger.RESULTS_VERSION, "config": {"scale": "quick"},
            "sections": {}, "ledger": []}
    one = ledger.rows({}, {})[0]
    deep = "[" * 5000 + "]" * 5000
    for text, field in (
        (json.dumps(dict(good, version="2")), "'version' is a str"),
        (json.dumps(dict(good, sections=[1])), "'sections'"),
        (json.dumps(dict(good, config=[1])), "'config'"),
        (json.dumps(dict(good, sections={"table1": [1]})), "'table1'"),
        (json.dumps(dict(good, sections={"table1": {"x": "X"}})).replace(
            '"X"', "[" * 70 + "]" * 70), "deeper than 64"),
        (json.dumps(good)[:-1] + ', "deep": ' + deep + "}", "deeper"),
        (json.dumps(dict(good, ledger={"rows": 1})),
         "'ledger' is a dict, not a list"),
        (json.dumps(dict(good, ledger=[{"paper": "seed 001"}])),
         r"ledger\[0\] lacks where, subject"),
        (json.dumps(dict(good, ledger=[one, dict(one, verdict="agrees")])),
         r"ledger\[1\] has verdict 'agrees', not one of")):
      with open(path, "w") as f:
        f.write(text)
      with self.assertRaisesRegex(ValueError, f"`outdir` '{path}'.*{field}",
                                  msg=text[:80]) as e:
        ledger.from_folder(outdir)
      # One line: the binary prints it as `error: ...`, exit 2 (see
      # test_folder_errors_are_one_line).
      self.assertNotIn("\n", str(e.exception))

  def test_folder_errors_are_one_line(self):
    outdir = self.create_tempdir().full_path
    with self.assertRaisesRegex(ValueError, "holds no results.json"):
      ledger.from_folder(outdir)
    with open(os.path.join(outdir, "results.json"), "w") as f:
      json.dump({"config": {"scale": "quick"}, "sections": {}}, f)
    with self.assertRaisesRegex(ValueError, "older version"):
      ledger.from_folder(outdir)
    run = subprocess.run([sys.executable, "-m", "train.report.ledger",
                          f"--outdir={outdir}"], cwd=ROOT,
                         capture_output=True, text=True, check=False)
    self.assertEqual(run.returncode, 2)
    self.assertStartsWith(run.stderr.strip().splitlines()[-1],
                          "error: `outdir`")
    self.assertNotIn("Traceback", run.stderr)
    with open(os.path.join(outdir, "results.json"), "w") as f:
      json.dump({"version": 2, "config": {"scale": "quick"},
                 "sections": {}}, f)
    with self.assertRaisesRegex(ValueError, "older version"):
      ledger.from_folder(outdir)
    saved = {"version": ledger.RESULTS_VERSION, "config": {"scale": "quick"},
             "sections": {}, "ledger": ledger.rows({}, {})}
    saved["ledger"][0]["ours"] = "a number only the saved ledger holds"
    with open(os.path.join(outdir, "results.json"), "w") as f:
      json.dump(saved, f)
    run = subprocess.run([sys.executable, "-m", "train.report.ledger",
                          f"--outdir={outdir}"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    self.assertIn("## Claims ledger", run.stdout)
    # It prints the saved rows, not rows recomputed from the sections.
    self.assertIn("a number only the saved ledger holds", run.stdout)
    # --recompute reads them afresh from the sections, naming the commit.
    saved["environment"] = {"commit": "abc1234"}
    with open(os.path.join(outdir, "results.json"), "w") as f:
      json.dump(saved, f)
    run = subprocess.run([sys.executable, "-m", "train.report.ledger",
                          f"--outdir={outdir}", "--recompute"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    self.assertNotIn("a number only the saved ledger holds", run.stdout)
    self.assertIn("report at commit abc1234 (--recompute)", run.stdout)
    self.assertEqual(ledger.recomputed(outdir)[0], ledger.rows({}, {
        "scale": "quick"}))


if __name__ == "__main__":
  absltest.main()
