"""The claims ledger: one row per paper claim the report tests, computed from
a report's results.json (the numbers its sections saved), never typed in.

  python -m train.report.ledger --outdir=report      # print it as markdown

The report opens with it (train/report/runner.py). A row: paper, where in
it, the paper's number, ours (read from the section's numbers), our scale,
and a verdict: reproduced | reproduced at a smaller scale | disagrees |
cannot tell | not run. A claim (claim.Claim) is one entry of the CLAIMS of
the report module whose section decides it (its sections and a function of
their numbers and the report's config); CLAIM_MODULES registers the modules,
one line each. Rows are in paper order, each paper's in registry order.
"""

from __future__ import annotations

import os
import re

from absl import flags

from bottleneck.io import hf
from train.report import (lowrank, real_llm, seed001_bounds,
                          seed001_lp_claims, seed001_trained, seed002,
                          seed003, seed004, spamlang)
from train.report.section import table
from train.report.claim import NOT_RUN, Claim, Unread
# The verdict words, for callers that read rows (tests, notebooks).
from train.report.claim import CANNOT, DISAGREES, REPRODUCED, SMALLER  # pylint: disable=unused-import

RESULTS_VERSION = 2  # results.json's "version": 2 = sections + the ledger.
CLAIM_MODULES = (  # Adding an experiment's rows is one line here.
    seed001_bounds,
    seed001_lp_claims,
    seed001_trained,
    seed002,
    lowrank,
    spamlang,
    seed003,
    seed004,
    real_llm,
)
CLAIMS: tuple[Claim, ...] = tuple(sorted(
    (c for m in CLAIM_MODULES for c in m.CLAIMS), key=lambda c: c.paper))


class Malformed(ValueError):
  """A section's field has a type the ledger cannot read: str() names the
  section and the field, `why` the field alone."""

  def __init__(self, where: str, why: str):
    super().__init__(f"{where}: {why}")
    self.why = why


# What a claim's read raises on a field of the wrong type (KeyError: absent).
_WRONG = (TypeError, ValueError, AttributeError, IndexError, ArithmeticError,
          StopIteration, RecursionError)


def _read(read, args, where: str, strict: bool) -> tuple[str, str, str]:
  """(ours, scale, verdict) of one claim: a missing, null or NaN number is
  'not run' with the reason; a field of the wrong type raises Malformed
  with `strict`, else is 'not run' too."""
  try:
    return read(*args)
  except Unread as e:
    return "-", "-", f"{NOT_RUN}: {e}"
  except KeyError as e:
    return "-", "-", f"{NOT_RUN}: {where} lacks {e} (older version)"
  except _WRONG as e:
    if strict:
      raise Malformed(where, str(e)) from None
    return "-", "-", f"{NOT_RUN}: {where} is malformed ({e})"


def _sections_named(names) -> str:
  return (f"section `{names[0]}`" if len(names) == 1 else
          "sections " + " / ".join(f"`{n}`" for n in names))


def rows(sections: dict, config: dict, strict: bool = False) -> list[dict]:
  """The ledger of a report's sections (results.json's 'sections') under
  its config (results.json's 'config'); a section the ledger cannot read
  raises Malformed with `strict`, else is a 'not run' row saying why."""
  out = []
  for c in CLAIMS:
    row = {"paper": f"seed {c.paper}", "where": c.where, "paper_says": c.says}
    if not set(c.sections) & set(sections):
      noun = "section" if len(c.sections) == 1 else "sections"
      names = ", ".join(f"`{n}`" for n in c.sections)
      row.update(ours="-", scale="-",
                 verdict=f"{NOT_RUN} ({noun} {names} not in this report)")
    else:
      row.update(zip(("ours", "scale", "verdict"), _read(
          c.read, (sections, config), _sections_named(c.sections), strict)))
    out.append(row)
  return out


def problem(name: str, section, config: dict) -> str | None:
  """Why the ledger cannot read one saved section (a field of the wrong
  type, named), or None."""
  try:
    rows({name: section}, config, strict=True)
  except Malformed as e:
    return f"cannot be read by the ledger: {e.why}"
  return None


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


MAX_DEPTH = 64  # Nesting a results.json may have (a report's: about 10).


def _depth(value) -> int:
  """How deeply objects and lists nest in `value` (without recursion)."""
  deepest, todo = 0, [(value, 1)]
  while todo:
    v, d = todo.pop()
    if isinstance(v, (dict, list)):
      deepest = max(deepest, d)
      todo += [(x, d + 1) for x in (v.values() if isinstance(v, dict) else v)]
  return deepest


def read_results(path: str, fix: str) -> dict:
  """A report's results.json, its structure checked (an object with a
  'config' object naming its 'scale', a 'sections' object of objects, an
  integer 'version' if any, at most MAX_DEPTH levels); anything else is one
  ValueError naming the file and the field, ending with `fix`."""
  def bad(what):
    return ValueError(f"`outdir` {path!r} is not a report's results.json "
                      f"({what}): {fix}")
  try:
    saved = hf.read_json(path, "outdir")
  except RecursionError:
    raise bad("nested deeper than Python's JSON reader allows") from None
  except UnicodeDecodeError as e:
    raise bad(f"not UTF-8 text: {e.reason} at byte {e.start}") from None
  except OSError as e:
    raise bad(f"unreadable: {e.strerror}") from None
  except ValueError as e:
    raise ValueError(f"{e} {fix}") from None
  if not isinstance(saved, dict):
    raise bad(f"a JSON {type(saved).__name__}, not an object")
  config, sections = saved.get("config"), saved.get("sections")
  if not isinstance(config, dict) or not isinstance(sections, dict):
    raise bad("no 'config' and 'sections' objects")
  if not isinstance(config.get("scale"), str):
    raise bad("'config' names no 'scale' string")
  version = saved.get("version", 1)
  if isinstance(version, bool) or not isinstance(version, int):
    raise bad(f"'version' is a {type(version).__name__}, not an integer")
  for name, section in sections.items():
    if not isinstance(section, dict):
      raise bad(f"section {name!r} is not an object")
  if _depth(saved) > MAX_DEPTH:
    raise bad(f"nested deeper than {MAX_DEPTH} levels")
  return saved


def from_folder(outdir: str) -> tuple[list[dict], str]:
  """(rows, scale) of the report in `outdir`; a folder without a report's
  results.json, one written before the ledger, or one with a field of the
  wrong type is one error naming the file and the field."""
  path = os.path.join(outdir, "results.json")
  if not os.path.isfile(path):
    raise ValueError(f"`outdir` {outdir!r} holds no results.json (run "
                     "python -m train.report --outdir=... first).")
  saved = read_results(path, "run the report again into a new --outdir.")
  if saved.get("version", 1) < RESULTS_VERSION:
    raise ValueError(f"`outdir` {path!r} was written by an older version "
                     f"(no 'version' >= {RESULTS_VERSION}): its sections "
                     "predate the ledger; run the report again.")
  try:
    ledger_rows = rows(saved["sections"], saved["config"], strict=True)
  except Malformed as e:
    raise ValueError(f"`outdir` {path!r}: {e}; re-run that section "
                     "(python -m train.report --sections=...).") from None
  return ledger_rows, saved["config"]["scale"]


def main(argv):
  """Prints the ledger of --outdir's report."""
  del argv
  ledger_rows, scale = from_folder(flags.FLAGS.outdir)
  print(markdown(ledger_rows, scale))


if __name__ == "__main__":
  from bottleneck.io import cli  # pylint: disable=g-import-not-at-top
  cli.run_binary(main, lambda: flags.DEFINE_string(
      "outdir", "report", "A report folder (its results.json)."))
