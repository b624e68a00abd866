"""The claims ledger: one row per paper claim the report tests, computed from
a report's results.json (the numbers its sections saved), never typed in.

  python -m train.report.ledger --outdir=report      # print it as markdown

The report opens with it (train/report/runner.py). A row: paper, where in
it, the paper's number, ours (read from the section's numbers), our scale,
and a verdict: reproduced | reproduced at a smaller scale | disagrees |
cannot tell | not run. A claim is one entry of CLAIMS (claims_seed001.py,
claims_training.py): its section and a function of that section's numbers
(and the report's config); adding one is a function and a line there.
"""

from __future__ import annotations

import re

from absl import flags

from train.report import claims_seed001, claims_training
from train.report.section import table
from train.report.claim import NOT_RUN, Claim, probe_and_real
# The verdict words, for callers that read rows (tests, notebooks).
from train.report.claim import CANNOT, DISAGREES, REPRODUCED, SMALLER  # pylint: disable=unused-import

RESULTS_VERSION = 2  # results.json's "version": 2 = sections + the ledger.
CLAIMS: tuple[Claim, ...] = claims_seed001.CLAIMS + claims_training.CLAIMS
MULTI = claims_training.MULTI


def rows(sections: dict, config: dict) -> list[dict]:
  """The ledger of a report's sections (results.json's 'sections') under
  its config (results.json's 'config')."""
  out = []
  for c in CLAIMS:
    row = {"paper": f"seed {c.paper}", "where": c.where, "paper_says": c.says}
    if c.section not in sections:
      row.update(ours="-", scale="-", verdict=f"{NOT_RUN} (section "
                 f"`{c.section}` not in this report)")
    else:
      try:
        ours, scale, verdict = c.read(sections[c.section], config)
      except (KeyError, IndexError, TypeError) as e:
        ours, scale, verdict = "-", "-", (
            f"{NOT_RUN}: section `{c.section}` lacks {e} (older version)")
      row.update(ours=ours, scale=scale, verdict=verdict)
    out.append(row)
  for paper, where, says, key, read in MULTI:
    row = {"paper": f"seed {paper}", "where": where, "paper_says": says}
    try:
      named = probe_and_real(sections, key)
      ours, scale, verdict = read(named) if named else (
          "-", "-", f"{NOT_RUN} (sections `encoding`, `real_llm` not in "
          "this report)")
    except (KeyError, IndexError, TypeError, ValueError) as e:
      ours, scale, verdict = "-", "-", f"{NOT_RUN}: lacks {e} (older version)"
    out.append(dict(row, ours=ours, scale=scale, verdict=verdict))
  return out


def markdown(ledger_rows: list[dict], scale: str) -> str:
  """The ledger as the report's opening table."""
  counts = {}
  for r in ledger_rows:
    key = re.split(r"[:;(]| on ", r["verdict"])[0].strip()
    counts[key] = counts.get(key, 0) + 1
  return ("## Claims ledger\n\nEvery row computed from this report's numbers "
          f"(scale `{scale}`): " + ", ".join(f"{v} {k}" for k, v in
                                              counts.items()) + ".\n\n"
          + table(ledger_rows, ["paper", "where", "paper_says", "ours",
                                "scale", "verdict"]))


def from_folder(outdir: str) -> tuple[list[dict], str]:
  """(rows, scale) of the report in `outdir`; a folder without a report's
  results.json, or one written before the ledger, is one error naming the
  folder and what is missing."""
  import os  # pylint: disable=g-import-not-at-top
  from bottleneck.io import hf  # pylint: disable=g-import-not-at-top
  path = os.path.join(outdir, "results.json")
  if not os.path.isfile(path):
    raise ValueError(f"`outdir` {outdir!r} holds no results.json (run "
                     "python -m train.report --outdir=... first).")
  saved = hf.read_json(path, "outdir")
  if not isinstance(saved, dict) or not isinstance(saved.get("sections"),
                                                   dict):
    raise ValueError(f"`outdir` {path!r} is not a report's results.json "
                     "(no 'sections' object).")
  if saved.get("version", 1) < RESULTS_VERSION:
    raise ValueError(f"`outdir` {path!r} was written by an older version "
                     f"(no 'version' >= {RESULTS_VERSION}): its sections "
                     "predate the ledger; run the report again.")
  config = saved.get("config") or {}
  return rows(saved["sections"], config), config.get("scale", "?")


def main(argv):
  """Prints the ledger of --outdir's report."""
  del argv
  ledger_rows, scale = from_folder(flags.FLAGS.outdir)
  print(markdown(ledger_rows, scale))


if __name__ == "__main__":
  from bottleneck.io import cli  # pylint: disable=g-import-not-at-top
  cli.run_binary(main, lambda: flags.DEFINE_string(
      "outdir", "report", "A report folder (its results.json)."))
