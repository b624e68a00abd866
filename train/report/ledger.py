"""The claims ledger: one row per paper claim the report tests, computed from
a report's results.json (the numbers its sections saved), never typed in.

  python -m train.report.ledger --outdir=report      # print it as markdown
  python -m train.report.ledger --outdir=report --recompute   # read afresh

The report opens with it (train/report/runner.py) and results.json carries
it as its top-level `ledger` list, which this binary prints. A row is a
test (claim.Row): the paper's claim and number, the statistic, ours, the
sample `n`, its `uncertainty`, the `deviations` of our setup from the
paper's that can move the number, whether the test `can_disagree`, and a
verdict: reproduced | consistent in direction | disagrees | not applicable
| too small to speak | not run (the last four with a `why`). A claim
(claim.Claim) is one entry of the CLAIMS of the report module whose
section decides it; CLAIM_MODULES registers the modules, one line each.
Rows are in paper order, each paper's in registry order.
"""

from __future__ import annotations

import os
import re

from absl import flags

from bottleneck.io import hf
from train.report import (lowrank, real_llm, seed001_bounds,
                          seed001_lp_claims, seed001_trained, seed002,
                          seed002_appc, seed002_theory, seed003, seed004,
                          spamlang)
from train.report.section import table
from train.report import claim
from train.report.claim import NOT_RUN, WORDS, Claim, Row, Unread

# results.json's "version": 2 = sections + the ledger; 3 = the ledger's
# rows as data (its top-level `ledger` list).
RESULTS_VERSION = 3
FIELDS = ("paper", "where", "subject", "paper_says", "statistic", "ours",
          "n", "uncertainty", "deviations", "can_disagree", "verdict", "why")
CLAIM_MODULES = (  # Adding an experiment's rows is one line here.
    seed001_bounds,
    seed001_lp_claims,
    seed001_trained,
    seed002,
    seed002_theory,
    seed002_appc,
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


def _read(c: Claim, sections: dict, config: dict, where: str,
          strict: bool) -> list[Row]:
  """The Rows of one claim: a missing, null or NaN number is one 'not run'
  row with the reason; a field of the wrong type raises Malformed with
  `strict`, else is 'not run' too."""
  def not_run(why):
    return [Row(NOT_RUN, "-", "-", "-", "-", why)]
  try:
    out = c.read(sections, config)
  except Unread as e:
    return not_run(str(e))
  except KeyError as e:
    return not_run(f"{where} lacks {e} (older version)")
  except _WRONG as e:
    if strict:
      raise Malformed(where, str(e)) from None
    return not_run(f"{where} is malformed ({e})")
  out = out if isinstance(out, list) else [out]
  if not out:
    return not_run(f"{where} has no subject to read")
  return [claim.check_row(r) for r in out]


def _sections_named(names) -> str:
  return (f"section `{names[0]}`" if len(names) == 1 else
          "sections " + " / ".join(f"`{n}`" for n in names))


def rows(sections: dict, config: dict, strict: bool = False) -> list[dict]:
  """The ledger of a report's sections (results.json's 'sections') under
  its config (results.json's 'config'): one dict of FIELDS per row; a
  section the ledger cannot read raises Malformed with `strict`, else is
  a 'not run' row saying why."""
  out = []
  for c in CLAIMS:
    if not set(c.sections) & set(sections):
      noun = "section" if len(c.sections) == 1 else "sections"
      names = ", ".join(f"`{n}`" for n in c.sections)
      got = [Row(NOT_RUN, "-", "-", "-", "-",
                 f"{noun} {names} not in this report")]
    else:
      got = _read(c, sections, config, _sections_named(c.sections), strict)
    for r in got:
      out.append({
          "paper": f"seed {c.paper}", "where": c.where,
          "subject": r.subject, "paper_says": c.says,
          "statistic": r.statistic, "ours": r.ours, "n": r.n,
          "uncertainty": r.uncertainty, "deviations": list(r.deviations),
          "can_disagree": (c.can_disagree if r.can_disagree is None
                           else r.can_disagree),
          "verdict": r.verdict, "why": r.why})
  return out


def problem(name: str, section, config: dict) -> str | None:
  """Why the ledger cannot read one saved section (a field of the wrong
  type, named), or None."""
  try:
    rows({name: section}, config, strict=True)
  except Malformed as e:
    return f"cannot be read by the ledger: {e.why}"
  return None


def verdict_text(row: dict) -> str:
  """The verdict cell: the word, 'a consistency check' where the test
  cannot disagree, and the why."""
  text = row["verdict"]
  if not row["can_disagree"] and row["verdict"] != NOT_RUN:
    text += " (a consistency check: this test cannot disagree)"
  return text + (f": {row['why']}" if row["why"] else "")


def markdown(ledger_rows: list[dict], scale: str) -> str:
  """The ledger as the report's opening table (from its rows as data)."""
  counts = {w: sum(r["verdict"] == w for r in ledger_rows) for w in WORDS}
  return ("## Claims ledger\n\nEvery row computed from this report's numbers "
          f"(scale `{scale}`): " + ", ".join(
              f"{v} {k}" for k, v in counts.items() if v) + ".\n\n"
          + table([{
              "paper": r["paper"],
              "where": r["where"] + (f" ({r['subject']})" if r["subject"]
                                     else ""),
              "paper says": r["paper_says"], "statistic": r["statistic"],
              "ours": r["ours"], "n": r["n"],
              "uncertainty": r["uncertainty"],
              "deviations": "; ".join(r["deviations"]) or "-",
              "verdict": verdict_text(r)} for r in ledger_rows]))


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


def _saved_rows(ledger_rows, path: str) -> list[dict]:
  """results.json's top-level `ledger` list, each row's fields checked."""
  if not isinstance(ledger_rows, list):
    raise ValueError(f"`outdir` {path!r}: 'ledger' is a "
                     f"{type(ledger_rows).__name__}, not a list; run the "
                     "report again into a new --outdir.")
  for i, r in enumerate(ledger_rows):
    missing = [f for f in FIELDS if not isinstance(r, dict) or f not in r]
    if missing or r["verdict"] not in WORDS:
      raise ValueError(
          f"`outdir` {path!r}: ledger[{i}] " + (
              f"lacks {', '.join(missing)}" if missing else
              f"has verdict {r['verdict']!r}, not one of {WORDS}")
          + "; run the report again into a new --outdir.")
  return ledger_rows


def from_folder(outdir: str) -> tuple[list[dict], str]:
  """(rows, scale) of the report in `outdir`: results.json's `ledger`
  list; a folder without a report's results.json, one written before the
  ledger was data, or one with a field of the wrong type is one error
  naming the file and the field."""
  path = os.path.join(outdir, "results.json")
  if not os.path.isfile(path):
    raise ValueError(f"`outdir` {outdir!r} holds no results.json (run "
                     "python -m train.report --outdir=... first).")
  saved = read_results(path, "run the report again into a new --outdir.")
  if saved.get("version", 1) < RESULTS_VERSION or "ledger" not in saved:
    raise ValueError(f"`outdir` {path!r} was written by an older version "
                     f"(no 'version' >= {RESULTS_VERSION} with a 'ledger' "
                     "list): its ledger predates rows as data; run the "
                     "report again.")
  return _saved_rows(saved["ledger"], path), saved["config"]["scale"]


BEFORE = "at or before "  # A kept section saved before sections
#                              recorded their commit (runner._load).


def _commit_text(c) -> str:
  """A commit as the header prints it: a short hash (with '-dirty'), or
  'unknown' for None or a value no git wrote."""
  ok = isinstance(c, str) and re.fullmatch(r"[0-9a-zA-Z.-]{1,64}", c)
  return c if ok else "unknown"


def commits_said(sections: dict, commit: str | None) -> str:
  """'commit C' where every section was computed at the report's commit
  C, else 'commit C; section(s) a, b at commit D' (a section re-run with
  --sections records its own commit). A section with no record was saved
  before sections carried one: 'at or before' C, the last commit that
  wrote the folder."""
  other: dict[str, list[str]] = {}
  for name, s in sections.items():
    c = s.get("commit") if isinstance(s, dict) else None
    if c is None:
      c = BEFORE + _commit_text(commit)
    if c == commit:
      continue
    if isinstance(c, str) and c.startswith(BEFORE):
      said = f"at or before commit {_commit_text(c[len(BEFORE):])}"
    else:
      said = f"at commit {_commit_text(c)}"
    other.setdefault(said, []).append(name)
  return f"commit {_commit_text(commit)}" + "".join(
      f"; section(s) {', '.join(names)} {said}"
      for said, names in other.items())


def recomputed(outdir: str) -> tuple[list[dict], str, str]:
  """(rows, scale, the commits its sections were computed at) of
  `outdir`'s report, the rows read afresh by this code from its saved
  sections and config: a reading changed since the report ran, its
  numbers not."""
  path = os.path.join(outdir, "results.json")
  if not os.path.isfile(path):
    raise ValueError(f"`outdir` {outdir!r} holds no results.json (run "
                     "python -m train.report --outdir=... first).")
  saved = read_results(path, "run the report again into a new --outdir.")
  return (rows(saved["sections"], saved["config"]), saved["config"]["scale"],
          commits_said(saved["sections"],
                       (saved.get("environment") or {}).get("commit")))


def main(argv):
  """Prints the ledger of --outdir's report (--recompute: read afresh)."""
  del argv
  if flags.FLAGS.recompute:
    ledger_rows, scale, commits = recomputed(flags.FLAGS.outdir)
    print(f"Rows read by this code from the sections of the report at "
          f"{commits} (--recompute).\n")
  else:
    ledger_rows, scale = from_folder(flags.FLAGS.outdir)
  print(markdown(ledger_rows, scale))


def _flags():
  flags.DEFINE_string("outdir", "report", "A report folder (its "
                      "results.json).")
  flags.DEFINE_bool("recompute", False, "Read the rows afresh from the "
                    "saved sections with this code (a reading changed since "
                    "the report ran) instead of printing the saved ones.")


if __name__ == "__main__":
  from bottleneck.io import cli  # pylint: disable=g-import-not-at-top
  cli.run_binary(main, _flags)
