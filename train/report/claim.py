"""What the claims ledger is made of (train/report/ledger.py): the verdict
words, a ledger Row (a test: statistic, sample, uncertainty, deviations,
verdict), a section's Verdict, a Claim, and helpers the readers share.

Each report module that tests a paper's claim exports CLAIMS, a tuple of
Claim; the ledger registers the modules (ledger.CLAIM_MODULES)."""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

# A ledger row's verdict is one of these (issue 77):
REPRODUCED = "reproduced"  # Our number on the paper's side, clear of it.
CONSISTENT = "consistent in direction"  # Same direction; the magnitude not
#                                         comparable (`why` says why).
DISAGREES = "disagrees"  # Our number on the other side, clear of it.
NOT_APPLICABLE = "not applicable"  # The claim's premise fails (`why`).
TOO_SMALL = "too small to speak"  # The uncertainty straddles the threshold
#                                   (`why`: what run would decide).
NOT_RUN = "not run"  # No numbers (`why`).
WORDS = (REPRODUCED, CONSISTENT, DISAGREES, NOT_APPLICABLE, TOO_SMALL,
         NOT_RUN)
NEEDS_WHY = (CONSISTENT, NOT_APPLICABLE, TOO_SMALL, NOT_RUN)
# What a section's opening sentence says (Verdict.word): it agrees (at the
# CPU's size), disagrees, or cannot tell.
SMALLER, CANNOT = "reproduced at a smaller scale", "cannot tell"
MAX_OURS = 400  # Characters of a verdict's sentence a ledger row shows.


class Verdict(NamedTuple):
  """A section's conclusion as data: the ledger reads `word` and
  `sentence`, the section prints `markdown(verdict)` ('**Agrees with
  ...**: sentence'). New fields take defaults, so readers keep working."""
  word: str  # SMALLER (agrees at CPU size), DISAGREES or CANNOT.
  sentence: str  # What our numbers say: the ledger row's `ours`.
  claim: str = ""  # The paper's claim tested, as the markdown quotes it.
  cite: str = ""  # Where in the paper ('seed 003 Fig. 7'), when the bold
  #                 opening names it and the claim follows in parentheses.
  extent: str = ""  # How far it agrees, inside the bold ('in direction').
  continues: bool = False  # The sentence continues the bold opening.


def markdown(v: Verdict) -> str:
  """The section's opening sentence of a Verdict: '**Agrees with C**: s',
  '**Disagrees with C**: s', '**Cannot tell** (C): s'; with a `cite`,
  '**Agrees with cite** (C): s' and '**Cannot tell** (cite; C): s'."""
  named = v.cite or v.claim
  if v.word == CANNOT:
    return (f"**Cannot tell** ({'; '.join(x for x in (v.cite, v.claim) if x)}"
            f"): {v.sentence}")
  bold = ("Disagrees" if v.word == DISAGREES else "Agrees") + (
      f" with {named}" + (f" {v.extent}" if v.extent else ""))
  tail = f" ({v.claim}): " if v.cite else " " if v.continues else ": "
  return f"**{bold}**{tail}{v.sentence}"


def row_of(v: Verdict, *, statistic: str, n: str, uncertainty: str,
           deviations: tuple[str, ...] = (), why: str = "") -> Row:
  """A ledger Row of a section's Verdict: SMALLER reads REPRODUCED (the
  deviations say how small), CANNOT reads TOO_SMALL (`why`, else the
  sentence, says what would decide); `ours` is the sentence, cut to
  MAX_OURS characters."""
  ours = v.sentence
  ours = ours if len(ours) < MAX_OURS else ours[:MAX_OURS - 3] + "..."
  word = {SMALLER: REPRODUCED, CANNOT: TOO_SMALL}.get(v.word, v.word)
  return Row(word, ours, statistic, n, uncertainty,
             why or (ours if word in NEEDS_WHY else ""), deviations)


class Row(NamedTuple):
  """One ledger row as data: what a claim's reader returns (one Row, or a
  list of them, one per `subject`). A row is a test: its statistic, its
  sample, its uncertainty, the deviations of our setup from the paper's
  that can move the number, and a verdict from WORDS."""
  verdict: str  # One of WORDS.
  ours: str  # What our numbers say, with the threshold's side.
  statistic: str  # What is measured and the threshold the verdict applies.
  n: str  # The sample: subsets per m, seeds, tokens, positions, trials.
  uncertainty: str  # A binomial bracket, an exact test's p, a spread over
  #                   seeds, a bootstrap interval; or why there is none.
  why: str = ""  # Needed for the verdicts in NEEDS_WHY; else optional.
  deviations: tuple[str, ...] = ()  # Our setup against the paper's, each
  #   able to move the number: subject, corpus, steps as a share of the
  #   paper's, a changed hyperparameter, an inferred definition.
  can_disagree: bool | None = None  # None: the claim's; False: on this
  #   input the test cannot disagree (a consistency check, said so).
  subject: str = ""  # Which model or matrix, when a claim has several.


def check_row(row: Row) -> Row:
  """`row` if well formed: a verdict of WORDS, a `why` where it needs one,
  deviations a tuple of strings; else ValueError naming the field."""
  if not isinstance(row, Row):
    raise TypeError(f"a claim's reader returned a {type(row).__name__}, "
                    "not a claim.Row")
  if row.verdict not in WORDS:
    raise ValueError(f"`verdict` {row.verdict!r} is not one of {WORDS}")
  if row.verdict in NEEDS_WHY and not row.why:
    raise ValueError(f"a {row.verdict!r} row needs a `why`")
  if not isinstance(row.deviations, tuple) or not all(
      isinstance(d, str) for d in row.deviations):
    raise ValueError("`deviations` must be a tuple of strings")
  return row


def side(lo: float, hi: float, threshold: float, agrees_above: bool = True
         ) -> str:
  """REPRODUCED when [lo, hi] lies wholly on the paper's side of
  `threshold` (above it, or below with agrees_above=False), DISAGREES
  when wholly on the other, TOO_SMALL when it straddles it."""
  if lo > hi:
    raise ValueError(f"`lo` {lo} > `hi` {hi}")
  above, below = lo >= threshold, hi < threshold
  if not (above or below):
    return TOO_SMALL
  return REPRODUCED if above == agrees_above else DISAGREES


def bracket(lo: float, hi: float, fmt: str = ".3f",
            what: str = "95 % Clopper-Pearson") -> str:
  """'95 % Clopper-Pearson 0.981 .. 0.996' (an uncertainty field)."""
  return f"{what} {lo:{fmt}} .. {hi:{fmt}}"


class Claim(NamedTuple):
  """A claim of a paper and how our numbers decide it: the ledger's rows
  of it are `read`'s Rows."""
  paper: str  # seed 001 .. 004
  where: str  # Figure / table / section of the paper.
  says: str  # The paper's number, as it states it.
  sections: tuple[str, ...]  # Report sections whose numbers decide it.
  # (results.json's sections, the report's config) -> Row or [Row]; called
  # when at least one of `sections` is in the report.
  read: Callable[[dict, dict], Row | list[Row]]
  can_disagree: bool = True  # Some input makes `read` say DISAGREES (a
  #                            test per row checks it); False: a check.


def on(paper: str, where: str, says: str, section: str,
       read: Callable[[dict, dict], Row | list[Row]],
       can_disagree: bool = True) -> Claim:
  """A claim decided by one section: read(its numbers, config)."""
  return Claim(paper, where, says, (section,),
               lambda sections, config: read(sections[section], config),
               can_disagree)


class Unread(Exception):
  """A number a claim decides on is null (how results.json writes NaN),
  NaN or not finite, or a list it reads is empty: the row is 'not run',
  with this reason, never a verdict."""


def mapping(value, field: str) -> dict:
  """`value` if an object (dict); otherwise a TypeError naming `field`."""
  if not isinstance(value, dict):
    raise TypeError(f"`{field}` is a {type(value).__name__}, not an object")
  return value


def get(obj, *keys, at: str = "") -> Any:
  """obj[k1][k2]...; a step that is not an object is a TypeError naming
  the field (`at` prefixes it), a missing key a KeyError."""
  field = at
  for k in keys:
    obj = mapping(obj, field or "section")[k]
    field = f"{field}.{k}" if field else str(k)
  return obj


def _field(at: str, keys) -> str:
  return ".".join([at] * bool(at) + [str(k) for k in keys])


def finite(value, field: str) -> float:
  """`value` if a finite number; null / NaN / inf raise Unread, another
  type TypeError, each naming `field`."""
  if value is None or (isinstance(value, float) and not math.isfinite(value)):
    raise Unread(f"`{field}` is {'null' if value is None else value} (no "
                 "number: the run did not produce it)")
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    raise TypeError(f"`{field}` is a {type(value).__name__}, not a number")
  return value


def num(obj, *keys, at: str = "") -> float:
  """get(obj, *keys) as a finite number (finite)."""
  return finite(get(obj, *keys, at=at), _field(at, keys))


def records(obj, *keys, need=(), at: str = "") -> list[dict]:
  """get(obj, *keys) as a non-empty list of objects whose `need` fields
  are finite numbers; empty raises Unread, another type TypeError."""
  field, out = _field(at, keys), get(obj, *keys, at=at)
  if not isinstance(out, list):
    raise TypeError(f"`{field}` is a {type(out).__name__}, not a list")
  if not out:
    raise Unread(f"`{field}` is empty")
  for i, r in enumerate(out):
    mapping(r, f"{field}[{i}]")
    for k in need:
      num(r, k, at=f"{field}[{i}]")
  return out


def real(s, key, need: bool = True):
  """(name, numbers[key]) of every real LLM of the real_llm section; none
  (with `need`) raises Unread."""
  models = mapping(get(s, "models"), "models")
  for n, m in models.items():
    mapping(m, f"models.{n}")
  out = [(n, m[key]) for n, m in models.items() if key in m]
  if need and not out:
    raise Unread(f"no real LLM in `models` has `{key}`")
  return out


def probe_and_real(sections, key):
  """(name, numbers) of the probe model (encoding section) and of every
  real LLM (real_llm section) for one of seed 003's probes."""
  out = []
  if "encoding" in sections:
    out.append(("probe model", sections["encoding"][key]))
  if "real_llm" in sections:
    out += real(sections["real_llm"], key, need=False)
  return out
