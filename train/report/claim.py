"""What the claims ledger is made of (train/report/ledger.py): the verdict
words, a section's Verdict, a Claim, and helpers the claim readers share.

Each report module that tests a paper's claim exports CLAIMS, a tuple of
Claim; the ledger registers the modules (ledger.CLAIM_MODULES)."""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple

# The verdict vocabulary: a ledger row's verdict starts with one of these.
REPRODUCED, SMALLER = "reproduced", "reproduced at a smaller scale"
DISAGREES, CANNOT, NOT_RUN = "disagrees", "cannot tell", "not run"
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


def reading(v: Verdict, scale: str) -> tuple[str, str, str]:
  """A ledger row's (ours, scale, verdict) of a section's Verdict: its
  sentence (cut to MAX_OURS characters) and its word."""
  ours = v.sentence
  ours = ours if len(ours) < MAX_OURS else ours[:MAX_OURS - 3] + "..."
  return ours, scale, v.word


class Claim(NamedTuple):
  """One ledger row: a claim of a paper and how our numbers decide it."""
  paper: str  # seed 001 .. 004
  where: str  # Figure / table / section of the paper.
  says: str  # The paper's number, as it states it.
  sections: tuple[str, ...]  # Report sections whose numbers decide it.
  # (results.json's sections, the report's config) -> (ours, our scale,
  # verdict); called when at least one of `sections` is in the report.
  read: Callable[[dict, dict], tuple[str, str, str]]


def on(paper: str, where: str, says: str, section: str,
       read: Callable[[dict, dict], tuple[str, str, str]]) -> Claim:
  """A claim decided by one section: read(its numbers, config)."""
  return Claim(paper, where, says, (section,),
               lambda sections, config: read(sections[section], config))


def on_every_subject(paper: str, where: str, says: str, key: str,
                     read: Callable[[list], tuple[str, str, str]]) -> Claim:
  """A claim read on the probe model (section `encoding`) and on every
  real LLM (section `real_llm`): read([(name, numbers[key])])."""
  return Claim(paper, where, says, ("encoding", "real_llm"),
               lambda sections, config: read(probe_and_real(sections, key)))


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


def per_subject(verdicts: dict) -> str:
  """'reproduced on a, b; disagrees on c' from {name: verdict word}; the
  worst verdict first."""
  if not verdicts:
    raise Unread("no subject to read")
  order = (DISAGREES, CANNOT, REPRODUCED)
  groups = [(v, [n for n, x in verdicts.items() if x == v]) for v in order]
  return "; ".join(f"{v} on {', '.join(ns)}" for v, ns in groups if ns)
