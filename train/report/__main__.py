"""The main job: `python -m train.report --scale=quick --outdir=report`.

Writes report.md, results.json and the PNG figures of every section
(runner.SECTIONS); `--scale` picks configs/report.py's preset and
`--sections` runs a subset (comma list).
"""

from absl import flags

from bottleneck.io import cli
from configs import report as report_config
from train.report import runner

FLAGS = flags.FLAGS


def define_flags():
  flags.DEFINE_enum("scale", "quick", ["tiny", "quick", "paper"],
                    "Preset of configs/report.py.")
  flags.DEFINE_string("outdir", "report", "Folder for report.md, JSON, PNGs.")
  flags.DEFINE_string("sections", "", "Comma list of sections (default all).")


def main(argv):
  del argv
  only = [s for s in FLAGS.sections.split(",") if s] if FLAGS.sections else None
  runner.run(report_config.get_config(FLAGS.scale), FLAGS.outdir, only)


if __name__ == "__main__":
  cli.run_binary(main, define_flags)
