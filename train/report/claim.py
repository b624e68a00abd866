"""What the claims ledger is made of (train/report/ledger.py): a claim, the
verdict words, and helpers the claim modules share."""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

REPRODUCED, SMALLER = "reproduced", "reproduced at a smaller scale"
DISAGREES, CANNOT, NOT_RUN = "disagrees", "cannot tell", "not run"


class Claim(NamedTuple):
  paper: str  # seed 001 .. 004
  where: str  # Figure / table / section of the paper.
  says: str  # The paper's number, as it states it.
  section: str  # The report section whose numbers decide it.
  read: Callable[[dict, dict], tuple[str, str, str]]  # -> ours, scale, verdict


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


def real(s, key):
  """(name, numbers[key]) of every real LLM of the real_llm section."""
  return [(n, m[key]) for n, m in s["models"].items() if key in m]


def probe_and_real(sections, key):
  """(name, numbers) of the probe model (encoding section) and of every
  real LLM (real_llm section) for one of seed 003's probes."""
  out = []
  if "encoding" in sections:
    out.append(("probe model", sections["encoding"][key]))
  if "real_llm" in sections:
    out += real(sections["real_llm"], key)
  return out


def per_subject(verdicts: dict) -> str:
  """'reproduced on a, b; disagrees on c' from {name: verdict word}; the
  worst verdict first."""
  order = (DISAGREES, CANNOT, REPRODUCED)
  groups = [(v, [n for n, x in verdicts.items() if x == v]) for v in order]
  return "; ".join(f"{v} on {', '.join(ns)}" for v, ns in groups if ns)
