"""The main job end to end at its tiny scale."""

import json
import os
import subprocess
import sys

from absl.testing import absltest

from configs import report as report_config
from train import report, sections

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class ReportTest(absltest.TestCase):

  def test_tiny_report_writes_every_section(self):
    # The binary itself, on one CPU device (as a user runs it).
    outdir = self.create_tempdir().full_path
    env = dict(os.environ, PYTHONPATH=ROOT)
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run([sys.executable, "-m", "train.report",
                           "--scale=tiny", f"--outdir={outdir}"], cwd=ROOT,
                          env=env, capture_output=True, text=True,
                          timeout=900)
    self.assertEqual(proc.returncode, 0, proc.stderr[-3000:])
    with open(os.path.join(outdir, "report.md")) as f:
      md = f.read()
    with open(os.path.join(outdir, "results.json")) as f:
      saved = json.load(f)
    self.assertEqual(set(saved["sections"]), set(sections.SECTIONS))
    for section in saved["sections"].values():
      self.assertIn("seconds", section)
    table1 = saved["sections"]["table1"]
    self.assertEqual(table1["rows_matching_paper"]["gumbel"], 22)
    for png in ("figure2_bounds.png", "figure5_simulation.png",
                "signrank_example.png", "signrank_margins.png"):
      self.assertGreater(os.path.getsize(os.path.join(outdir, png)), 5000)
      self.assertIn(f"]({png})", md)
    self.assertIn("## Corollary 3", md)

  def test_unknown_section_and_scale(self):
    with self.assertRaisesRegex(ValueError, "`sections`"):
      report.run(report_config.get_config("tiny"),
                 self.create_tempdir().full_path, ["nope"])
    with self.assertRaisesRegex(ValueError, "`scale`"):
      report_config.get_config("huge")


if __name__ == "__main__":
  absltest.main()
