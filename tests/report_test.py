"""The main job end to end at its tiny scale."""

import json
import os
import subprocess
import sys
from unittest import mock

import numpy as np

from absl.testing import absltest

from configs import report as report_config
from train.report import ledger, runner
from train.report import section as section_lib
from train.report import thesis_completions
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST_HALF = ("table1", "figure5", "prescribed", "signrank", "figure1",
              "figure3", "natural", "trained")
# The training sections in two groups that share no run (the probe model's
# sections need lowrank's runs too), so that pytest's workers run them side
# by side: one test of all of them was the suite's longest by 3x.
TRAINING = ("training", "spamlang")
PROBES = ("gradient", "gradient_theory", "lowrank", "encoding", "appendices")
# On SmolLM2 and Gemma 3 the real-LLM comparison is exercised by colab 06;
# here it compares two small GGUFs of different families that the test
# writes (same code path, seconds instead of minutes).
REAL_LLM = ("real_llm",)


class ReportTest(absltest.TestCase):

  def _run_binary(self, sections):
    """The binary itself, on one CPU device (as a user runs it)."""
    outdir = self.create_tempdir().full_path
    env = tests.one_device_env()
    proc = subprocess.run([sys.executable, "-m", "train.report",
                           "--scale=tiny", f"--outdir={outdir}",
                           f"--sections={','.join(sections)}"], cwd=ROOT,
                          env=env, capture_output=True, text=True,
                          timeout=900)
    self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
    with open(os.path.join(outdir, "report.md")) as f:
      md = f.read()
    with open(os.path.join(outdir, "results.json")) as f:
      saved = json.load(f)
    self.assertEqual(list(saved["sections"]), list(sections))
    for name in sections:
      self.assertIn("seconds", saved["sections"][name])
    self.assertNotRegex(md, r"\{[a-z_\[\]'\"]+\}")  # No unformatted {...}.
    for png in (f for f in os.listdir(outdir) if f.endswith(".png")):
      self.assertGreater(os.path.getsize(os.path.join(outdir, png)), 5000)
      self.assertIn(f"]({png})", md)
    return md, saved

  def test_tiny_report_paper_one_sections(self):
    # The paper-one sections apart from the others, so that pytest's workers
    # run them side by side.
    md, saved = self._run_binary(FIRST_HALF)
    self.assertEqual(
        saved["sections"]["table1"]["rows_matching_paper"]["gumbel"], 22)
    self.assertIn("## Corollary 3", md)
    self.assertIn("figure2_bounds.png", md)

  def test_the_groups_cover_every_section_once(self):
    groups = FIRST_HALF + TRAINING + PROBES + REAL_LLM
    self.assertCountEqual(groups, runner.SECTIONS)
    for name in PROBES:  # Every section a probe section needs is in PROBES.
      self.assertContainsSubset(runner.SECTIONS[name].blocks or (), PROBES +
                                ("probes",))

  def test_tiny_report_probe_sections(self):
    md, saved = self._run_binary(list(PROBES))
    self.assertIn("## Seed 003", md)
    grad = list(saved["sections"]["gradient"].values())[0]
    self.assertTrue(0 < grad["norm_ratio"] < 1)
    # Seed 003 Fig. 7 on the llama-like low-rank run: every checkpoint, the
    # initial parameters first, the last one the final parameters.
    freq = saved["sections"]["encoding"]["frequency_llama"]["rows"]
    self.assertEqual([r["step"] for r in freq][:2], [0, 1])
    self.assertEqual(freq[0]["conv_qkv_0"], 0.0)
    self.assertAlmostEqual(freq[-1]["conv_qkv_0"], 1.0)
    self.assertIsNotNone(freq[-1]["val_loss"])
    self.assertIn("Frequency probe on a llama-like real-text run", md)

  def test_tiny_report_training_sections(self):
    md, saved = self._run_binary(list(TRAINING))
    self.assertIn("## Seed 002 Fig. 14: SpamLang", md)
    # Seed 004's completions scored per run and length (issue 78); a
    # model not below the unigram on the originals is named first.
    runs = saved["sections"]["training"]["runs"]
    # §5.1 over seeds: Models 1-6 again at alike_seeds, on the same windows.
    extra = saved["sections"]["training"]["seed_runs"]
    self.assertEqual([(r["run"], r["seed"]) for r in extra],
                     [("model1,cpu", 1)])
    self.assertLen(extra[0]["window_losses"], len(runs[0]["window_losses"]))
    self.assertNotEqual(extra[0]["window_losses"], runs[0]["window_losses"])
    tokens = list(report_config.get_config("tiny").training.tokens)
    for r in runs:
      self.assertEqual([s["tokens"] for s in r["completion_scores"]], tokens)
    body = md.split("## Seed 004: the thesis's small GPT models\n\n")[1]
    first = thesis_completions.untrained(runs)
    self.assertTrue(body.startswith(first or "**"), body[:200])
    self.assertIn(thesis_completions.table(runs), body)

  def test_real_llm_section_compares_two_small_ggufs(self):
    from tests import families_reference  # pylint: disable=g-import-not-at-top
    outdir = self.create_tempdir().full_path
    specs = []
    for arch in ("llama", "gemma3"):
      path = os.path.join(outdir, f"tiny_{arch}.gguf")
      families_reference.write_gguf(path, arch, families_reference.weights(arch, 6))
      specs.append(f"gguf:{path}")
    config = report_config.get_config("tiny")
    config.real_llm.models = tuple(specs)
    fractions = []  # The section's own progress, as the ETA sees it.
    with section_lib.progress_to(fractions.append):
      saved = runner.run(config, outdir, list(REAL_LLM))
    self.assertEqual(fractions, sorted(fractions))
    self.assertIn(0.5, np.round(fractions, 9))  # One of two (equal) models.
    self.assertAlmostEqual(fractions[-1], 1.0)
    models = saved["sections"]["real_llm"]["models"]
    self.assertEqual(list(models), ["tiny_llama", "tiny_gemma3"])
    for numbers in models.values():
      self.assertTrue(0 < numbers["gradient"]["norm_ratio"] < 1)
      self.assertGreater(numbers["sanity"]["perplexity"], 1.0)
      self.assertEqual(numbers["pass"]["tokens"], config.real_llm.windows *
                       config.real_llm.window)
      self.assertEqual([r["m"] for r in numbers["figure1"]["trained"]],
                       [4, 8])
    self.assertEqual(models["tiny_gemma3"]["subject"]["family"], "gemma3")
    from train.probes import compare  # pylint: disable=g-import-not-at-top
    for rows in compare.tables(models).values():  # Every spec's cells read.
      for row in rows:
        if "Q8_0" not in row["result"]:  # These GGUFs store float32.
          for name in models:
            self.assertNotEqual(row[name], "-", (row["result"], name))
    with open(os.path.join(outdir, "report.md")) as f:
      md = f.read()
    self.assertIn("## Real LLMs: tiny_llama vs tiny_gemma3", md)
    self.assertIn("| Table 1: adj. R^2 of -log alpha on W (random / "
                  "shuffled) |", md)
    self.assertIn("real_llm_figure1.png", md)
    self.assertNotRegex(md, r"\{[a-z_\[\]'\"]+\}")  # No unformatted {...}.

  def test_sections_rerun_keeps_the_others(self):
    outdir = self.create_tempdir().full_path
    config = report_config.get_config("tiny")
    runner.run(config, outdir, ["table1"])
    runner.run(config, outdir, ["signrank"])
    with open(os.path.join(outdir, "results.json")) as f:
      self.assertEqual(sorted(json.load(f)["sections"]),
                       ["signrank", "table1"])
    with open(os.path.join(outdir, "report.md")) as f:
      md = f.read()
    heads = [l for l in md.splitlines() if l.startswith("## ")]
    # The ledger, the two sections, then costs:
    self.assertEqual((heads[0], heads[-1]), ("## Claims ledger",
                                              "## Time and memory"))
    self.assertLen(heads, 4)
    self.assertRegex(md, r"\| seed 001 \| Table 1 \| m\* for 22 models .*"
                     r"\| 22/22 rows equal in the Gumbel form.*\| reproduced")
    self.assertRegex(md, r"\| table1 \| \d+ \|.*\n\| signrank \| \d+ \|")
    self.assertIn("Partial report", md)  # 2 of the sections only.

  def test_a_section_rerun_at_another_commit_is_said(self):
    outdir = self.create_tempdir().full_path
    config = report_config.get_config("tiny")
    real_env = runner.environment()
    for commit, section in (("aaaaaaa", "table1"), ("bbbbbbb", "signrank")):
      with mock.patch.object(runner, "environment",
                             lambda c=commit: dict(real_env, commit=c)):
        runner.run(config, outdir, [section])
    with open(os.path.join(outdir, "report.md")) as f:
      md = f.read()
    self.assertIn("commit bbbbbbb; section(s) table1 at commit aaaaaaa", md)
    _, _, commits = ledger.recomputed(outdir)
    self.assertEqual(commits, "commit bbbbbbb; section(s) table1 at commit "
                     "aaaaaaa")
    # A section saved before sections recorded their commit: the folder's.
    path = os.path.join(outdir, "results.json")
    with open(path) as f:
      saved = json.load(f)
    del saved["sections"]["table1"]["commit"]
    with open(path, "w") as f:
      json.dump(saved, f)
    with mock.patch.object(runner, "environment",
                           lambda: dict(real_env, commit="ccccccc")):
      runner.run(config, outdir, ["signrank"])
    _, _, commits = ledger.recomputed(outdir)
    self.assertEqual(commits, "commit ccccccc; section(s) table1 at or "
                     "before commit bbbbbbb")
    # Read without the runner's stamp (a folder never re-run since): the
    # same; no commit at all, or one no git wrote: 'unknown'.
    self.assertEqual(
        ledger.commits_said({"a": {}, "b": {"commit": "x1"}}, "x1"),
        "commit x1; section(s) a at or before commit x1")
    self.assertEqual(
        ledger.commits_said({"a": {"commit": "1\n# x"}}, None),
        "commit unknown; section(s) a at commit unknown")
    env = runner.environment()["commit"]
    self.assertRegex(env or "", r"^([0-9a-f]{7,}(-dirty)?)?$")

  def test_costs_state_the_budget_verdict(self):
    sections = {n: {"seconds": 10.0, "peak_rss_gb_so_far": 1.0}
                for n in runner.SECTIONS}
    sections["real_llm"] = {"seconds": 1300.0, "peak_rss_gb_so_far": 4.5,
                            "models": {"gemma3": {"seconds": {
                                "forward": 300.0, "figure1 LP": 500.0,
                                "total": 990.0}}}}
    text = runner._costs(sections, list(runner.SECTIONS), "quick")
    self.assertIn("`real_llm` on gemma3: figure1 LP 500 s, forward 300 s.",
                  text)
    over = 10 * (len(sections) - 1) + 1300 - 1200  # The quick budget.
    self.assertRegex(text, rf"over it by {over // 60}m{over % 60:02d}s; the "
                     r"costliest sections are `real_llm` \(1300 s\)")
    self.assertIn("Memory: 4.50 GB, over it.", text)
    for n in sections:
      sections[n]["seconds"], sections[n]["peak_rss_gb_so_far"] = 1.0, 1.0
    text = runner._costs(sections, list(runner.SECTIONS), "quick")
    self.assertIn(f"Time: {len(sections)}s, within it.", text)
    self.assertIn("Memory: 1.00 GB, within it.", text)

  def test_eta_is_not_fooled_by_one_fast_section(self):
    eta = runner.Eta(["table1", "figure5"], "quick")
    eta.begin("figure5")
    eta.done_s, eta.done_est = 2.0, runner.ESTIMATE_S["quick"]["table1"]
    left = eta.remaining()  # table1 ran faster than estimated.
    full = runner.ESTIMATE_S["quick"]["figure5"]
    self.assertBetween(left, 0.8 * full, full)
    self.assertIn("[report 2/2 figure5]", eta.line())

  def test_eta_follows_a_section_that_reports_its_progress(self):
    eta = runner.Eta(["real_llm"], "quick")
    eta.begin("real_llm")
    eta.current_start -= 100.0  # 100 s into a section estimated at 430 s.
    est = runner.ESTIMATE_S["quick"]["real_llm"]
    self.assertBetween(eta.remaining(), est - 101, est - 99)
    with section_lib.progress_to(eta.section_progress):
      section_lib.progress(0.5)  # Twice the estimated pace.
    # Total: half the estimate + the 100 s it took for half; 100 s spent.
    self.assertBetween(eta.remaining(), 0.5 * est - 1, 0.5 * est + 1)
    eta.current_start -= 50.0  # 50 s later, no new word: counted down.
    self.assertBetween(eta.remaining(), 0.5 * est - 51, 0.5 * est - 49)
    section_lib.progress(0.9)  # No sink: nobody listens, nothing changes.
    self.assertEqual(eta.fraction, 0.5)
    eta.end(200.0)
    self.assertEqual(eta.remaining(), 0.0)  # Written: nothing left.

  def test_unknown_section_and_scale(self):
    with self.assertRaisesRegex(ValueError, "`sections`"):
      runner.run(report_config.get_config("tiny"),
                 self.create_tempdir().full_path, ["nope"])
    with self.assertRaisesRegex(ValueError, "`scale`"):
      report_config.get_config("huge")


if __name__ == "__main__":
  absltest.main()
