"""The main job: `python -m train.report --scale=quick`.

Writes report.md, results.json and the PNG figures of every section
(runner.SECTIONS) into --outdir (default: report/ for quick, report_paper/
for paper, report_tiny/ for tiny), rewritten after every section;
`--sections` re-runs a subset (comma list); a run keeps the folder's other
sections and writes nothing before its first section is done. A folder
holding a report of another scale or files this project did not write is
refused (--overwrite replaces them).
"""

from absl import flags

from bottleneck.io import cli
from configs import report as report_config
from train.report import runner

FLAGS = flags.FLAGS


def define_flags():
  flags.DEFINE_enum("scale", "quick", list(report_config.SCALES),
                    "Preset of configs/report.py.")
  flags.DEFINE_string("outdir", None, "Folder for report.md, JSON, PNGs "
                      "(default: report, or report_<scale>).")
  flags.DEFINE_string("sections", None, "Comma list of sections (default "
                      "all); the folder's other sections are kept.")
  flags.DEFINE_bool("overwrite", False, "Replace the folder's report (of "
                    "another scale, or not this project's) instead of "
                    "refusing; its sections are not kept.")


def main(argv):
  del argv
  only = None
  if FLAGS.sections is not None:
    only = [s.strip() for s in FLAGS.sections.split(",") if s.strip()]
    runner.check_sections(only)
  runner.run(report_config.get_config(FLAGS.scale),
             FLAGS.outdir or runner.default_outdir(FLAGS.scale), only,
             FLAGS.overwrite)


if __name__ == "__main__":
  cli.run_binary(main, define_flags)
