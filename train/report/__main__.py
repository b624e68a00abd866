"""The main job: `python -m train.report --scale=quick`.

Writes report.md, results.json and the PNG figures of every section
(runner.SECTIONS) into --outdir (default: report/ for quick, report_paper/
for paper, report_tiny/ for tiny), rewritten after every section;
`--sections` re-runs a subset (comma list); a run keeps the folder's other
sections and writes nothing before its first section is done. A folder
holding a report of another scale or files this project did not write is
refused (--overwrite replaces them).

`--config.FIELD=VALUE` overrides a field of the scale's preset (any field
of configs/report.py, e.g. --config.spamlang.vocabs=1024,2048
--config.seed=1); the config run, overrides included, is results.json's
`config` and the command report.md's first line. A field that does not
exist or a value of the wrong type is one `error:` line naming it.
"""

import sys

from absl import flags
from ml_collections import config_dict, config_flags

from bottleneck.io import cli
from configs import report as report_config

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
  # The fields and their types (every scale's preset has the same ones);
  # the values overridden go onto --scale's preset (`config`). The flag
  # reads sys.argv's --config.* when defined: an unknown field is named
  # here (ml_collections would raise a traceback).
  fields = report_config.get_config("quick")
  try:  # --flagfile's lines count as the command line's.
    args = flags.FLAGS.read_flags_from_files(sys.argv[1:], force_gnu=False)
  except flags.Error as e:
    sys.stderr.write(f"error: {e}\n")
    sys.exit(2)
  unknown = _unknown_field(args, fields)
  if unknown:
    sys.stderr.write(f"error: --{unknown}: configs/report.py has no field "
                     f"{unknown[len('config.'):]!r} (see --helpfull).\n")
    sys.exit(2)
  config_flags.DEFINE_config_dict(
      "config", fields,
      "Overrides of the --scale preset's fields: --config.FIELD=VALUE.")


def _unknown_field(args, fields) -> str | None:
  """The first --config.FIELD of `args` naming no field of `fields`."""
  for arg in args:
    if arg == "--":
      break
    name = arg.lstrip("-").split("=", 1)[0]
    if not name.startswith("config."):
      continue
    node = fields
    for part in name.split(".")[1:]:
      if not isinstance(node, config_dict.ConfigDict) or part not in node:
        return name
      node = node[part]
  return None


def config(scale: str, overrides: dict):
  """configs/report.py's preset at `scale` with `overrides` (dotted field
  -> value, as --config.FIELD=VALUE parsed them)."""
  if "scale" in overrides:
    raise ValueError("`config.scale` cannot be overridden: use --scale.")
  c = report_config.get_config(scale)
  for field, value in overrides.items():
    _check_elements(field, value, _preset_value(c, field))
  c.update_from_flattened_dict(overrides)
  report_config.alike_seeds(c)  # Refused here, not after an hour of runs.
  return c


def _preset_value(c, dotted: str):
  for part in dotted.split("."):
    c = c[part]
  return c


def _check_elements(field: str, value, preset) -> None:
  """A tuple override's elements of the preset's element type (the flag
  parser checks scalars, not a tuple's elements): a ValueError naming
  `config.FIELD` otherwise."""
  if not isinstance(value, (tuple, list)) or not isinstance(
      preset, (tuple, list)):
    return
  kinds = {type(x) for x in preset if not isinstance(x, (tuple, list))}
  if not kinds:
    return
  for x in value:
    ok = any(isinstance(x, k) or (k is float and isinstance(x, int) and
                                  not isinstance(x, bool)) for k in kinds)
    if not ok:
      names = " or ".join(sorted(k.__name__ for k in kinds))
      raise ValueError(f"`config.{field}` entry {x!r}: must be of type "
                       f"{names}, as the preset's {tuple(preset)!r}.")


def main(argv):
  del argv
  # Imported once the flags have parsed: a bad flag is its error line in a
  # second, not after the sections' imports (jax, scipy, flax).
  from train.report import runner  # pylint: disable=g-import-not-at-top
  only = None
  if FLAGS.sections is not None:
    only = [s.strip() for s in FLAGS.sections.split(",") if s.strip()]
    runner.check_sections(only)
  overrides = config_flags.get_override_values(FLAGS["config"])
  runner.run(config(FLAGS.scale, overrides),
             FLAGS.outdir or runner.default_outdir(FLAGS.scale), only,
             FLAGS.overwrite)


if __name__ == "__main__":
  cli.run_binary(main, define_flags)
