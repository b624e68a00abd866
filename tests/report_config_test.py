"""`python -m train.report --config.FIELD=VALUE`: overrides on the --scale
preset, recorded in results.json's config; a bad one is one `error:` line
naming the field."""

import json
import os
import subprocess
import sys

from absl.testing import absltest

from configs import report as report_config
from train.report import __main__ as report_main
from tests.trainer_test import ROOT, run_env


def _report(*flags):
  return subprocess.run([sys.executable, "-m", "train.report", *flags],
                        cwd=ROOT, env=run_env(), capture_output=True,
                        text=True, timeout=300)


class ReportConfigTest(absltest.TestCase):

  def test_overrides_go_on_the_scale_preset(self):
    c = report_main.config("tiny", {"threshold": 0.95,
                                    "spamlang.vocabs": (32,)})
    want = report_config.get_config("tiny")
    self.assertEqual((c.threshold, c.spamlang.vocabs), (0.95, (32,)))
    self.assertEqual(c.figure5.N, want.figure5.N)  # Tiny's, not quick's.
    with self.assertRaisesRegex(ValueError, "`config.scale`.*--scale"):
      report_main.config("tiny", {"scale": "quick"})
    with self.assertRaisesRegex(ValueError, r"`config.spamlang.vocabs` "
                                r"entry 'abc': must be of type int"):
      report_main.config("tiny", {"spamlang.vocabs": (1024, "abc")})
    c = report_main.config("tiny", {"spamlang.lrs": (1, 3e-3)})  # int ok.
    self.assertEqual(c.spamlang.lrs, (1, 3e-3))

  def test_a_tiny_report_records_its_override(self):
    out = self.create_tempdir().full_path
    proc = _report("--scale=tiny", "--sections=table1", f"--outdir={out}",
                   "--config.threshold=0.95", "--config.spamlang.vocabs=(32,)")
    self.assertEqual(proc.returncode, 0, proc.stderr[-2000:])
    with open(os.path.join(out, "results.json")) as f:
      config = json.load(f)["config"]
    self.assertEqual(config["scale"], "tiny")
    self.assertEqual(config["threshold"], 0.95)
    self.assertEqual(config["spamlang"]["vocabs"], [32])
    self.assertEqual(config["figure5"]["N"],
                     report_config.get_config("tiny").figure5.N)
    with open(os.path.join(out, "report.md")) as f:
      self.assertIn("--config.threshold=0.95", f.readlines()[2])

  def test_a_bad_override_is_one_line_naming_the_field(self):
    out = self.create_tempdir().full_path
    flagfile = os.path.join(self.create_tempdir().full_path, "flags")
    with open(flagfile, "w") as f:
      f.write("--config.bogus=1\n")
    for flag, field in (("--config.spamlang.vocabz=3", "spamlang.vocabz"),
                        ("--config.seed=abc", "config.seed"),
                        (f"--flagfile={flagfile}", "config.bogus"),
                        ("--config.spamlang.vocabs=abc",
                         "config.spamlang.vocabs")):
      with self.subTest(flag):
        proc = _report("--scale=tiny", "--sections=table1",
                       f"--outdir={out}", flag)
        self.assertEqual(proc.returncode, 2, proc.stderr[-2000:])
        lines = proc.stderr.strip().splitlines()
        self.assertLen(lines, 1, proc.stderr)
        self.assertRegex(lines[0], "^error: ")
        self.assertIn(field, lines[0])
    self.assertEqual(os.listdir(out), [])


if __name__ == "__main__":
  absltest.main()
