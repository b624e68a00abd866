"""Both sides of every ledger row's threshold (issue 77): the cases each
group's test module declares, and the check they share.

A Case feeds one claim's reader (ledger.rows restricted to that claim) the
sections of a results.json and a config, and names the verdict it must
give per subject ('' for a claim with one row). Each test module
tests/ledger_rows_<group>_test.py exports CASES (a list of Case) and calls
`check` on them; tests/ledger_sides_test.py checks that, over every
module's CASES, each claim of ledger.CLAIMS is fed inputs giving at least
two different verdicts, 'disagrees' among them when the claim declares
`can_disagree`.
"""

from __future__ import annotations

from typing import NamedTuple

from train.report import claim, ledger


class Case(NamedTuple):
  paper: str  # '001' .. '004' (Claim.paper).
  where: str  # Claim.where.
  sections: dict  # results.json's 'sections' (only what the reader needs).
  config: dict  # results.json's 'config' (only what the reader needs).
  verdicts: dict[str, str]  # {subject ('' if one row): expected verdict}.
  note: str = ""  # Which side of which threshold this input is on.


def claim_of(paper: str, where: str) -> claim.Claim:
  found = [c for c in ledger.CLAIMS if (c.paper, c.where) == (paper, where)]
  if len(found) != 1:
    raise KeyError(f"{len(found)} claims are seed {paper} {where!r}")
  return found[0]


def verdicts(case: Case) -> dict[str, str]:
  """{subject: verdict} of the case's claim on the case's input."""
  c = claim_of(case.paper, case.where)
  got = ledger._read(c, case.sections, case.config, case.where, strict=True)  # pylint: disable=protected-access
  return {r.subject: r.verdict for r in got}


def check(test, cases: list[Case]) -> None:
  """Every case gives the verdicts it names (a subTest per case)."""
  for case in cases:
    with test.subTest(where=case.where, note=case.note):
      test.assertEqual(verdicts(case), case.verdicts)
