"""The main job end to end at its tiny scale."""

import json
import os
import subprocess
import sys

from absl.testing import absltest

from configs import report as report_config
from train.report import runner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIRST_HALF = ("table1", "figure5", "prescribed", "signrank", "figure1",
              "figure3", "natural", "trained")
# On SmolLM2 the real-LLM section is exercised by colab 06; here it runs on
# a small Llama GGUF the test writes (same code path, seconds instead of
# minutes).
REAL_LLM = ("real_llm",)


class ReportTest(absltest.TestCase):

  def _run_binary(self, sections):
    """The binary itself, on one CPU device (as a user runs it)."""
    outdir = self.create_tempdir().full_path
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("XLA_FLAGS", None)
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
    for png in (f for f in os.listdir(outdir) if f.endswith(".png")):
      self.assertGreater(os.path.getsize(os.path.join(outdir, png)), 5000)
      self.assertIn(f"]({png})", md)
    return md, saved

  def test_tiny_report_paper_one_sections(self):
    # Split in two halves so that pytest -n 2 runs them side by side.
    md, saved = self._run_binary(FIRST_HALF)
    self.assertEqual(
        saved["sections"]["table1"]["rows_matching_paper"]["gumbel"], 22)
    self.assertIn("## Corollary 3", md)
    self.assertIn("figure2_bounds.png", md)

  def test_tiny_report_training_and_probe_sections(self):
    md, saved = self._run_binary(
        [s for s in runner.SECTIONS if s not in FIRST_HALF + REAL_LLM])
    self.assertIn("## Seed 003", md)
    grad = list(saved["sections"]["gradient"].values())[0]
    self.assertTrue(0 < grad["norm_ratio"] < 1)

  def test_real_llm_section_on_a_small_gguf(self):
    from tests import llama_test  # pylint: disable=g-import-not-at-top
    outdir = self.create_tempdir().full_path
    path = os.path.join(outdir, "tiny.gguf")
    llama_test.write_gguf(path, llama_test._weights(6))  # pylint: disable=protected-access
    config = report_config.get_config("tiny")
    config.real_llm.update(model=f"gguf:{path}", lp_m="4,8", natural_m="3",
                           new_tokens=3)
    saved = runner.run(config, outdir, list(REAL_LLM))
    numbers = saved["sections"]["real_llm"]
    self.assertTrue(0 < numbers["gradient"]["norm_ratio"] < 1)
    self.assertGreater(numbers["sanity"]["perplexity"], 1.0)
    self.assertEqual([r["m"] for r in numbers["figure1"]["trained head"]],
                     [4, 8])
    with open(os.path.join(outdir, "report.md")) as f:
      md = f.read()
    self.assertIn("## Real LLM: tiny", md)
    self.assertIn("| seed 003 Table 1: adj. R^2 of -log alpha on W |", md)
    self.assertIn("real_llm_figure1.png", md)

  def test_unknown_section_and_scale(self):
    with self.assertRaisesRegex(ValueError, "`sections`"):
      runner.run(report_config.get_config("tiny"),
                 self.create_tempdir().full_path, ["nope"])
    with self.assertRaisesRegex(ValueError, "`scale`"):
      report_config.get_config("huge")


if __name__ == "__main__":
  absltest.main()
