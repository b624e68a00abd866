"""Seed 003's ledger rows (Cho et al.), on the report's probe model (section
`encoding`) and on every real LLM (section `real_llm`): Table 1 on the
output and the input embeddings, Fig. 3, Algorithm 1 / Table 2, Fig. 6 and
Fig. 7. Each row is a test (claim.Row): its statistic, sample, interval
(train/report/intervals.py), the deviations of our setup from the paper's,
and a verdict from the interval's side of the threshold. seed003.py
re-exports CLAIMS, and its section and real_llm.py's print these rows'
sentences, so that section and ledger say the same.
"""

from __future__ import annotations

import math

from train.report import claim, intervals
from train.report.claim import (DISAGREES, NOT_RUN, REPRODUCED, TOO_SMALL,
                                Row, finite, mapping, num, records)

PAPER_POSITIONS = 8192  # Seed 003 §2: alpha averaged over 8192 positions.
TABLE1_R2 = 0.8  # Table 1: 0.856-0.893 on the output embeddings.
INPUT_R2 = 0.5  # Table 1: 0.658-0.814 on untied input embeddings.
PAPER_UNTIED_D = 2560  # The narrowest untied model of Table 1 (Pythia 2.8B).
SPARSE_SPEARMAN = 0.2  # Fig. 3: "poorly correlated" (our definition).
EDIT_SHARE = 0.5  # Table 2: e_local at b = 2 under half of not editing.
PAPER_EDIT_TOKENS = 10  # Table 2: 10 tokens edited.
PRUNED = (0.3, 0.5)  # Fig. 6: the removed shares the rows compare at.
INSTRUCT = ("smollm2",)  # Subject specs whose GGUF is a chat-tuned model.


def bracket(lo: float, hi: float, what: str, fmt: str = ".3f") -> str:
  return claim.bracket(lo, hi, fmt, f"{intervals.LEVEL * 100:.0f} % {what}")


def named(sections: dict, key: str) -> list[tuple[str, dict, dict]]:
  """(name, numbers[key], the subject's numbers) for the probe model
  (section `encoding`) and every real LLM of section `real_llm` with
  `key`."""
  out = []
  if "encoding" in sections:
    out.append(("probe model", sections["encoding"][key],
                sections["encoding"]))
  if "real_llm" in sections:
    models = mapping(claim.get(sections["real_llm"], "models"), "models")
    out += [(n, mapping(m, n)[key], m) for n, m in models.items() if key in m]
  if not out:
    raise claim.Unread(f"no subject has `{key}`")
  return out


def deviations(name: str, whole: dict, config: dict) -> tuple[str, ...]:
  """What differs from the paper's setup for one subject (words only: no
  verdict reads them)."""
  if name == "probe model":
    e = whole["encoding"]
    probes = mapping(config, "config").get("probes") or {}
    return (f"subject: the report's probe GPT (V = {e['V']}, D = {e['D']}, "
            f"untied with a bias, {probes.get('steps', '?')} training "
            "steps), not GPT-2 137M",
            "text: Shakespeare (the paper: WikiDpr)",
            f"{e['positions']} positions (the paper: {PAPER_POSITIONS})")
  s, p = whole["subject"], whole["pass"]
  tuned = ", chat-tuned (Instruct)" if name in INSTRUCT else ""
  return (f"subject: {name} (V = {s['V']}, D = {s['D']}, tied, GGUF-"
          f"quantised{tuned}), not GPT-2",
          f"text: {p['text'] or 'shakespeare'} (the paper: WikiDpr)",
          f"{p['tokens']} positions (the paper: {PAPER_POSITIONS})")


def every_subject(where: str, says: str, key: str, read,
                  can_disagree: bool = True) -> claim.Claim:
  """A claim read on each subject: read(name, numbers[key], the subject's
  numbers, config) -> Row, its subject filled in."""
  def rows(sections, config):
    return [read(n, x, whole, config)._replace(subject=n)
            for n, x, whole in named(sections, key)]
  return claim.Claim("003", where, says, ("encoding", "real_llm"), rows,
                     can_disagree)


def _side_word(lo, hi, threshold) -> str:
  return ("above" if lo >= threshold else "below" if hi < threshold else
          "around")


def table1_row(name, e, whole, config) -> Row:
  """Table 1: adj. R^2 of -log alpha on W (MLR over the V tokens), its
  interval from the regression's standard error (`r2_interval`)."""
  at = "encoding" if name == "probe model" else f"models.{name}.encoding"
  r2, v, d = (num(e, k, at=at) for k in ("adj_r2", "V", "D"))
  lo, hi = intervals.r2_interval(r2, int(v), int(d) + 1)
  verdict = claim.side(lo, hi, TABLE1_R2)
  return Row(verdict, f"adj. R^2 {r2:.3f}, {_side_word(lo, hi, TABLE1_R2)} "
             f"{TABLE1_R2}",
             "adj. R^2 of -log alpha on the output embedding; reproduced "
             f"when its interval lies above {TABLE1_R2} (the paper's four "
             "models: 0.856-0.893)",
             f"V = {int(v)} tokens x D = {int(d)}; alpha over "
             f"{e['positions']} positions",
             bracket(lo, hi, "regression standard error (Olkin-Finn)"),
             why=(f"the interval straddles {TABLE1_R2}: more positions "
                  "would decide" if verdict == TOO_SMALL else ""),
             deviations=deviations(name, whole, config))


def input_row(name, e, whole, config) -> Row:
  """Table 1 on the input embeddings of an untied model; below INPUT_R2
  disagrees only on a model of the paper's width (PAPER_UNTIED_D): a
  narrower, briefly trained one is too small to speak."""
  v, d = (num(e, k, at=f"{name}.encoding") for k in ("V", "D"))
  r2 = num(e, "adj_r2_input_embeddings", at=f"{name}.encoding")
  lo, hi = intervals.r2_interval(r2, int(v), int(d))
  verdict = claim.side(lo, hi, INPUT_R2)
  small = d < PAPER_UNTIED_D
  why = ""
  if verdict == TOO_SMALL:
    why = f"the interval straddles {INPUT_R2}: more positions would decide"
  elif verdict == DISAGREES and small:
    verdict, why = TOO_SMALL, (
        f"one width-{int(d)} model (the paper's untied models: D >= "
        f"{PAPER_UNTIED_D}, 2.8B and 6B parameters, fully trained); an "
        "untied model of that class (or the probe model trained to "
        "convergence) would decide")
  return Row(verdict, f"adj. R^2 {r2:.3f} on the input embeddings, "
             f"{_side_word(lo, hi, INPUT_R2)} {INPUT_R2}",
             f"adj. R^2 of -log alpha on the input embedding (untied "
             f"models); reproduced above {INPUT_R2}, disagrees below on a "
             f"model of width >= {PAPER_UNTIED_D}",
             f"V = {int(v)} tokens x D = {int(d)}",
             bracket(lo, hi, "regression standard error (Olkin-Finn)"),
             why=why, deviations=deviations(name, whole, config) + (
                 (f"width {int(d)}: under the paper's {PAPER_UNTIED_D}",)
                 if small else ()))


def read_input(sections, config):
  """Table 1 (input embeddings): the untied subjects only."""
  got = [(n, x, w) for n, x, w in named(sections, "encoding")
         if "adj_r2_input_embeddings" in x]
  if not got:
    return Row(NOT_RUN, "-", "-", "-", "-", "no untied subject in this "
               "report (the real LLMs tie their heads)")
  return [input_row(n, x, w, config)._replace(subject=n) for n, x, w in got]


def sparsity_row(name, e, whole, config) -> Row:
  """Fig. 3: the median |Spearman| of W's dimensions with alpha, with the
  order-statistic interval of the median over dimensions."""
  dims = e["profiles"]["dim_abs_spearman"]
  if not isinstance(dims, list) or not dims:
    raise claim.Unread(f"`{name}.profiles.dim_abs_spearman` is empty")
  for i, x in enumerate(dims):
    finite(x, f"{name}.profiles.dim_abs_spearman[{i}]")
  med, lo, hi = intervals.median_interval(dims)
  verdict = claim.side(lo, hi, SPARSE_SPEARMAN, agrees_above=False)
  return Row(verdict, f"median |Spearman| {med:.2f} over {len(dims)} "
             f"dimensions, {_side_word(lo, hi, SPARSE_SPEARMAN)} "
             f"{SPARSE_SPEARMAN}",
             "median over W's dimensions of |Spearman(dimension, alpha)|; "
             f"'poorly correlated': under {SPARSE_SPEARMAN} (our reading "
             "of the figure)",
             f"{len(dims)} dimensions x V = {e['V']} tokens",
             bracket(lo, hi, "order-statistic interval of the median",
                     ".2f"),
             why=("the interval straddles the threshold: more dimensions "
                  "(a wider model) would decide" if verdict == TOO_SMALL
                  else ""),
             deviations=deviations(name, whole, config) + (
                 f"definition inferred: median |Spearman| < "
                 f"{SPARSE_SPEARMAN}",))


def edit_row(name, edit, whole, config) -> Row:
  """Algorithm 1 / Table 2: e_local at b = 2 as a share of not editing's
  error, with a t interval over the edited tokens."""
  b2 = next((r for r in records(edit, "table", at=f"{name}.edit")
             if r.get("variant") == "b=2"), None)
  if b2 is None:
    raise claim.Unread(f"`{name}.edit.table` has no b=2 row")
  unedited = num(edit, "unedited_error", at=f"{name}.edit")
  per = b2["e_local_per_token"]
  for i, x in enumerate(per):
    finite(x, f"{name}.edit.b=2.e_local_per_token[{i}]")
  mean = num(b2, "e_local", at=f"{name}.edit.b=2")
  limit = EDIT_SHARE * unedited
  if len(per) < 2:
    lo, hi, verdict = -math.inf, math.inf, TOO_SMALL
  else:
    _, lo, hi = intervals.t_interval(per)
    verdict = claim.side(lo, hi, limit, agrees_above=False)
  return Row(verdict, f"e_local {mean:.2f} = {mean / unedited:.0%} of not "
             f"editing ({unedited:.2f}); the paper's GPT-2 0.19",
             f"e_local at b = 2 (mean over tokens and scales); reproduced "
             f"under {EDIT_SHARE:.0%} of not editing's error (the paper: "
             "GPT-2 0.19 = 17 %, GPT-2 XL 0.64 = 58 % of 1.10)",
             f"{len(per)} tokens edited x {len(edit['scales'])} scales; "
             f"{edit['positions_per_set']['local']} positions",
             (bracket(lo, hi, "t interval over tokens", ".2f") if len(per)
              > 1 else "none: one token edited"),
             why=(f"the interval straddles {limit:.2f}: more tokens edited "
                  f"(the paper: {PAPER_EDIT_TOKENS}) would decide"
                  if verdict == TOO_SMALL else ""),
             deviations=deviations(name, whole, config) + (
                 (f"{len(per)} tokens edited (the paper: "
                  f"{PAPER_EDIT_TOKENS})",) if len(per) != PAPER_EDIT_TOKENS
                 else ()))


def _log_ratios(name, prune, share) -> list[float]:
  """Per block of positions: ln(KL adversarial / KL saliency) after
  removing `share` of the dimensions."""
  ratios = prune["ratios"]
  if not isinstance(ratios, list) or share not in ratios:
    raise claim.Unread(f"`{name}.prune.ratios` lacks {share}")
  i, blocks = ratios.index(share), prune["blocks"]
  out = []
  for b, (s, a) in enumerate(zip(blocks["saliency"], blocks["adversarial"])):
    s, a = (finite(x[i], f"{name}.prune.blocks[{b}]") for x in (s, a))
    out.append(math.log(max(a, 1e-12) / max(s, 1e-12)))
  return out


def removal_row(name, prune, whole, config) -> Row:
  """Fig. 6: the adversarial order (most salient first) costs more KL than
  the saliency order, at 30 % and 50 % removed: a t interval of ln(KL
  ratio) over blocks of positions; reproduced when both lie above 0,
  disagrees when one lies below."""
  sides, parts, brackets = [], [], []
  n = 0
  for share in PRUNED:
    logs = _log_ratios(name, prune, share)
    n = len(logs)
    if n < 2:
      raise claim.Unread(f"`{name}.prune.blocks` has {n} block(s)")
    mean, lo, hi = intervals.t_interval(logs)
    sides.append(claim.side(lo, hi, 0.0))
    parts.append(f"x{math.exp(mean):.2f} at {share:.0%}")
    brackets.append(f"{share:.0%}: x{math.exp(lo):.2f} .. "
                    f"x{math.exp(hi):.2f}")
  verdict = (DISAGREES if DISAGREES in sides else
             REPRODUCED if set(sides) == {REPRODUCED} else TOO_SMALL)
  return Row(verdict, "KL of removing the most salient first / the least "
             "salient first: " + ", ".join(parts),
             "geometric mean over blocks of positions of KL(adversarial) / "
             "KL(saliency) at 30 % and 50 % removed; reproduced when both "
             "intervals lie above x1, disagrees when one lies below",
             f"{prune['positions']} out-of-domain positions in {n} blocks",
             f"{intervals.LEVEL * 100:.0f} % t interval over blocks: "
             + "; ".join(brackets),
             why=("an interval straddles x1: more positions would decide"
                  if verdict == TOO_SMALL else ""),
             deviations=deviations(name, whole, config) + (
                 "KL only (the paper also reports MAUVE)",))


CLAIMS = (
    every_subject("Table 1", "adj. R^2 of -log p on W: 0.892 (GPT-2; "
                  "0.856-0.893 over four models)", "encoding", table1_row),
    claim.Claim("003", "Table 1 (input embeddings)", "adj. R^2 0.66-0.81 on "
                "the input embeddings of untied models (2.8B, 6B)",
                ("encoding", "real_llm"), read_input),
    every_subject("Fig. 3", "the overwhelming majority of W's dimensions "
                  "poorly correlated with log p", "encoding", sparsity_row),
    every_subject("Algorithm 1 / Table 2", "editing along the encoding: "
                  "e_local 0.19 at b = 2 (GPT-2; not editing 1.10)", "edit",
                  edit_row),
    every_subject("Fig. 6", "removing the least salient dimensions first "
                  "costs less than the most salient first", "prune",
                  removal_row),
)
