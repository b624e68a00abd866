"""What the claims ledger is made of (train/report/ledger.py): a claim, the
verdict words, and helpers the claim modules share."""

from __future__ import annotations

import math
import re
from typing import Any, Callable, NamedTuple

REPRODUCED, SMALLER = "reproduced", "reproduced at a smaller scale"
DISAGREES, CANNOT, NOT_RUN = "disagrees", "cannot tell", "not run"


class Claim(NamedTuple):
  paper: str  # seed 001 .. 004
  where: str  # Figure / table / section of the paper.
  says: str  # The paper's number, as it states it.
  section: str  # The report section whose numbers decide it.
  read: Callable[[dict, dict], tuple[str, str, str]]  # -> ours, scale, verdict


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


def from_sentence(sentence: str, scale: str) -> tuple[str, str, str]:
  """A section's verdict sentence ('**Agrees ...', '**Disagrees ...',
  '**Cannot tell** ...') as (ours: the sentence after its bold opening,
  scale, verdict); CPU runs are smaller than the papers', so agreement is
  'reproduced at a smaller scale'."""
  ours = sentence.split("**", 2)[-1].lstrip(" :")
  ours = re.sub(r"^\((?:[^()]|\([^()]*\))*\):?\s*", "", ours)  # The paper's.
  ours = ours if len(ours) < 400 else ours[:397] + "..."
  verdict = (SMALLER if sentence.startswith("**Agrees") else DISAGREES
             if sentence.startswith("**Disagrees") else CANNOT)
  return ours, scale, verdict


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
