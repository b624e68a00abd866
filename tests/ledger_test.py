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


def lp_records(feasible, trials=10, start=10):
  return [{"m": start + 10 * i, "trials": trials, "feasible": k,
           "fraction": k / trials} for i, k in enumerate(feasible)]


class LedgerTest(absltest.TestCase):

  def test_table1_row_follows_the_numbers(self):
    s = {"table1": {"rows": [{}] * 22,
                    "rows_matching_paper": {"gumbel": 22}}}
    self.assertEqual(row(s, "Table 1")["verdict"], ledger.REPRODUCED)
    s["table1"]["rows_matching_paper"]["gumbel"] = 21
    r = row(s, "Table 1")
    self.assertEqual(r["ours"], "21/22 rows equal (Gumbel form)")
    self.assertStartsWith(r["verdict"], "disagrees: 1 rows differ")

  def test_figure3_speaks_only_in_the_papers_regime(self):
    by_d = lambda n, ds, ratio: [
        {"N": n, "d": d, "N_over_d": n / d, "m_star_lp": round(ratio * d)}
        for d in ds]
    s = {"figure3": {"by_d": by_d(2000, (128, 256), 0.2), "slope": 0.2}}
    self.assertStartsWith(row(s, "Fig. 3")["verdict"], "cannot tell")
    s = {"figure3": {"by_d": by_d(32000, (128, 256, 512), 0.2),
                     "slope": 0.2}}
    self.assertStartsWith(row(s, "Fig. 3")["verdict"], ledger.SMALLER)
    s = {"figure3": {"by_d": by_d(32000, (128, 256, 512), 0.12),
                     "slope": 0.12}}
    self.assertStartsWith(row(s, "Fig. 3")["verdict"], "disagrees: 0.119")

  def test_figure1_wider_panels_row_follows_the_numbers(self):
    where = "Fig. 1 (bottom)"
    self.assertStartsWith(row({"figure1": {}}, where)["verdict"], "not run")
    panel = lambda fractions, trials=10: {
        "records": [{"m": 300 + 25 * i, "trials": trials, "fraction": f}
                    for i, f in enumerate(fractions)],
        "seconds_per_instance": 2.0}
    s = {"figure1": {"wide": {"32000x2048": panel([1, 1, 1, 1, .5, 0])}}}
    r = row(s, where)  # m* = 375, within 10 % of the paper's ~400.
    self.assertEqual(r["ours"], "32000x2048: m* = 375 (2.0 s per instance)")
    self.assertEqual(r["verdict"], ledger.SMALLER +
                     "; 32000x4096 not run (--scale=paper)")
    s["figure1"]["wide"]["32000x2048"] = panel([1, .5, 0, 0, 0, 0])
    self.assertStartsWith(row(s, where)["verdict"],
                          "disagrees: more than 10 % off for 32000x2048")
    s["figure1"]["wide"] = {"32000x2048": panel([1, 1, 1, 1, .5, 0], 100),
                            "32000x4096": {
                                "records": [{"m": 1000 + 100 * i,
                                             "trials": 100, "fraction": f}
                                            for i, f in enumerate([1, .5])],
                                "seconds_per_instance": 60.0}}
    self.assertEqual(row(s, where)["verdict"], ledger.REPRODUCED)

  def test_trained_vs_random_two_proportion_test(self):
    name = "minilm (all-MiniLM-L6-v2 word embeddings) (30522x384)"
    s = {"trained": {name: lp_records([20, 15, 10], 20),
                     "random 30522x384": lp_records([20, 14, 11], 20)}}
    self.assertStartsWith(row(s, "Fig. 1 (solid vs dotted)")["verdict"],
                          ledger.SMALLER)
    s["trained"][name] = lp_records([20, 4, 10], 20)
    r = row(s, "Fig. 1 (solid vs dotted)")
    self.assertStartsWith(r["verdict"], "disagrees")
    self.assertIn("at m = 20", r["ours"])

  def test_gradient_row_sets_dimension_counting_beside(self):
    s = {"gradient": {"probe": {"norm_ratio": 0.9916, "D_over_V": 1 / 64}}}
    r = row(s, "Fig. 6, eq. (10)")
    self.assertIn("0.9916 (sqrt(1 - D/V) = 0.9922)", r["ours"])
    self.assertIn("against dimension counting: probe -0.0006 (no twin)",
                  r["verdict"])
    self.assertStartsWith(r["verdict"], ledger.SMALLER)
    s["gradient"]["probe"]["random_head"] = {
        "trained": 0.99, "random": 0.98, "random_std": 0.001}
    self.assertIn("probe more than its Gaussian twins (+0.0100)",
                  row(s, "Fig. 6, eq. (10)")["verdict"])
    s["gradient"]["probe"]["random_head"]["random_std"] = 0.01
    self.assertIn("probe no more than its Gaussian twins",
                  row(s, "Fig. 6, eq. (10)")["verdict"])
    s["gradient"]["probe"]["norm_ratio"] = 0.5
    self.assertStartsWith(row(s, "Fig. 6, eq. (10)")["verdict"],
                          "disagrees")

  def test_gradient_rank_past_v(self):
    long = lambda ranks: [{"tokens": t, "rank": r, "max_rank": min(t, 64)}
                          for t, r in zip((32, 64, 128), ranks)]
    s = {"gradient": {"probe": {"norm_ratio": 0.99, "D_over_V": 0.125,
                                "V": 64, "rank_vs_tokens_long":
                                    long((32, 63, 64))}}}
    self.assertEqual(row(s, "Fig. 2")["verdict"], ledger.SMALLER)
    s["gradient"]["probe"]["rank_vs_tokens_long"] = long((32, 50, 50))
    self.assertEqual(row(s, "Fig. 2")["verdict"],
                     "disagrees: 78.1% of min(T, V) at T = 128")

  def test_verdict_sentences_of_the_sections(self):
    from tests import verdicts_test  # pylint: disable=g-import-not-at-top
    s = {"spamlang": {"rows": verdicts_test.spam_rows([0.01, 3.7])}}
    self.assertEqual(row(s, "Fig. 14 (§3.2)")["verdict"], ledger.SMALLER)
    s = {"spamlang": {"rows": verdicts_test.spam_rows([0.02, 0.03])}}
    r = row(s, "Fig. 14 (§3.2)")
    self.assertEqual(r["verdict"], ledger.DISAGREES)
    self.assertNotIn("the paper", r["ours"][:40])

  def test_seed003_rows_name_each_subject(self):
    prune = lambda sal, adv: {"ratios": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
                              "saliency": [0] * 3 + [sal, 0, sal],
                              "adversarial": [0] * 3 + [adv, 0, adv]}
    s = {"encoding": {"encoding": {"adj_r2": 0.9, "V": 64,
                                   "median_dim_abs_spearman": 0.6,
                                   "adj_r2_input_embeddings": 0.7},
                      "prune": prune(0.5, 0.4)},
         "real_llm": {"models": {"smol": {
             "encoding": {"median_dim_abs_spearman": 0.05},
             "prune": prune(0.5, 1.0)}}}}
    self.assertEqual(row(s, "Fig. 3", paper="seed 003")["verdict"],
                     "disagrees on probe model; reproduced on smol")
    self.assertEqual(row(s, "Table 1 (input embeddings)")["verdict"],
                     "reproduced on probe model")
    self.assertEqual(row(s, "Fig. 6")["verdict"],
                     "disagrees on probe model; reproduced on smol")
    s["encoding"]["prune"] = prune(0.5, 0.52)
    self.assertStartsWith(row(s, "Fig. 6")["verdict"],
                          "cannot tell on probe model")

  def test_row_norms_with_the_storage_noise(self):
    stat = lambda std: {"norm_mean": 1.0, "norm_std": std}
    s = {"real_llm": {"models": {
        "a": {"rowstats": {"trained": stat(0.18), "random": stat(0.03),
                           "quantisation": {"noise_rel_rms": 0.0003}}},
        "b": {"rowstats": {"trained": stat(0.0005), "random": stat(0.03)}}}}}
    r = row(s, "App. E on real LLMs")
    self.assertEqual(r["verdict"], "disagrees on b; reproduced on a")
    self.assertIn("a: 0.1800 (Gaussian 0.0300), of which Q8_0 rounding "
                  "~0.0003", r["ours"])

  def test_absent_and_older_sections(self):
    rows = ledger.rows({}, report_config.get_config("quick").to_dict())
    self.assertLen(rows, len(ledger.CLAIMS))
    self.assertTrue(all(r["verdict"].startswith("not run") for r in rows))
    r = row({"encoding": {"encoding": {"adj_r2": 0.9, "V": 4096}}},
            "Fig. 7 (§5)")
    self.assertIn("lacks 'frequency_llama' (older version)", r["verdict"])

  def test_nan_null_and_empty_numbers_are_not_run(self):
    for value, said in ((float("nan"), "is nan"), (None, "is null")):
      s = {"real_llm": {"models": {"smol": {"encoding": {"adj_r2": value}}}},
           "encoding": {"encoding": {"adj_r2": value, "V": 64}},
           "training": {"runs": [{"run": "model8", "final_val_loss": value},
                                 {"run": "model1", "final_val_loss": 3.0}]}}
      for paper, where, field in (
          ("seed 003", "Table 1 on real LLMs", "models.smol.encoding.adj_r2"),
          ("seed 003", "Table 1", "`encoding.adj_r2"),
          ("seed 004", "Fig. 5.1", "`runs[0].final_val_loss")):
        verdict = row(s, where, paper=paper)["verdict"]
        self.assertStartsWith(verdict, "not run: ", (where, value))
        self.assertIn(f"{field}` {said}", verdict)
    s = {"table1": {"rows": [], "rows_matching_paper": {"gumbel": 0}}}
    self.assertEqual(row(s, "Table 1", paper="seed 001")["verdict"],
                     "not run: `rows` is empty")

  def test_no_real_models_is_not_run(self):
    rows = ledger.rows({"real_llm": {"models": {}}},
                       report_config.get_config("quick").to_dict())
    real = [r for r in rows if "real LLMs" in r["where"]]
    self.assertLen(real, 4)
    for r in real:
      self.assertStartsWith(r["verdict"], "not run: no real LLM", r["where"])

  def test_malformed_results_json_is_one_error(self):
    outdir = self.create_tempdir().full_path
    path = os.path.join(outdir, "results.json")
    good = {"version": ledger.RESULTS_VERSION, "config": {"scale": "quick"},
            "sections": {}}
    deep = "[" * 5000 + "]" * 5000
    for text, field in (
        (json.dumps(dict(good, version="2")), "'version' is a str"),
        (json.dumps(dict(good, sections=[1])), "'sections'"),
        (json.dumps(dict(good, config=[1])), "'config'"),
        (json.dumps(dict(good, sections={"table1": [1]})), "'table1'"),
        (json.dumps(dict(good, sections={"table1": {"x": "X"}})).replace(
            '"X"', "[" * 70 + "]" * 70), "deeper than 64"),
        (json.dumps(good)[:-1] + ', "deep": ' + deep + "}", "deeper"),
        (json.dumps(dict(good, sections={"table1": {
            "rows": [{}], "rows_matching_paper": {"gumbel": "22"}}})),
         "`rows_matching_paper.gumbel` is a str, not a number")):
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
      json.dump({"version": ledger.RESULTS_VERSION,
                 "config": {"scale": "quick"}, "sections": {}}, f)
    run = subprocess.run([sys.executable, "-m", "train.report.ledger",
                          f"--outdir={outdir}"], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    self.assertIn("## Claims ledger", run.stdout)


if __name__ == "__main__":
  absltest.main()
