"""Report section for seed 002 §2.3's exact statements (Godey & Artzi) on
the report's probe model: eq. (6) (a gradient step through a rank-D head
moves the logits by a matrix of rank <= 2D), Prop. 2.5 (rank(P - N~) >=
D^u = min(|C^uu|, V - 1)) and Prop. 2.6 (any rank-2D update lies at least
the tail singular values of P - N~ from it), in float64
(bottleneck/gradient_theory.py), on the contexts of one text pass, and
their ledger rows: consistency checks (theorems: only a wrong number can
break them), each with the number that says how much it bites.
"""

from __future__ import annotations

import math

import numpy as np

from bottleneck import gradient_theory
from train.report import claim
from train.report.claim import DISAGREES, NOT_APPLICABLE, REPRODUCED, Row
from train.report.claim import num
from train.report.section import Section, figure, probe_subject, text_pass

CONTEXTS = ("contexts: the token prefixes inside the pass's windows (the "
            "paper's: the training set's), so nearly every context is "
            "unique and |C^uu| counts the distinct next tokens")


def _deviations(r: dict, name: str) -> tuple[str, ...]:
  """Our setup against the paper's, from the numbers: the subject, the
  contexts, and the bias (the paper's head has none: the cap gains 1)."""
  subject = (f"subject: {name} (V = {num(r, 'V'):.0f}, width "
             f"{num(r, 'D'):.0f}"
             + (", the report's probe model trained on Shakespeare"
                if name == "probe model" else "") + "), not a model of the "
             "paper's")
  bias = (("the head has a bias: the update's rank cap is rank(H) + "
           "rank(W) + 1, and Prop. 2.6's sum starts past it",)
          if r.get("bias") else ())
  sub = ((f"the head's rows restricted to {num(r, 'V'):.0f} of its "
          f"{num(r, 'V_full'):.0f} tokens (every observed next token, the "
          "rest drawn at random) and P = softmax over them: the statements "
          "hold for any (H, W), so the sub-head tests them on the model's "
          "own hidden states and rows (a full-V check needs C x V float64 "
          "matrices past this scale's memory)",)
         if r.get("V_full", r.get("V")) != r.get("V") else ())
  return (subject, CONTEXTS) + bias + sub


def _growth(ids, y, vocab: int) -> list[dict]:
  """|C^u|, |C^uu| and D^u over the first n positions, n doubling."""
  out, n = [], 16
  while True:
    n = min(n, len(y))
    out.append(dict(gradient_theory.rank_bound(
        gradient_theory.group(ids[:n], y[:n], vocab), vocab), tokens=n))
    if n == len(y):
      return out
    n *= 2


def section(config, outdir: str) -> Section:
  """Seed 002 eq. (6), Props. 2.5, 2.6 on the probe model's head, on
  probes.theory_tokens positions of its validation text."""
  tokens = config.probes.theory_tokens
  subject = probe_subject(config, outdir)
  window = subject.cfg.block_size
  pass_ = text_pass(subject, "", max(1, math.ceil(tokens / window)),
                    config.seed)
  x, y = pass_.x, pass_.y
  ids = gradient_theory.context_ids(x)[:tokens]
  y = y.reshape(-1)[:tokens]
  w, b = subject.head()
  ctx = gradient_theory.group(ids, y, w.shape[0])
  first = np.unique(ids, return_index=True)[1]  # Ids number first sightings.
  h = pass_.h[:tokens][first]
  out = gradient_theory.check(h, w, b, ctx)
  s = out.pop("singular_values")
  numbers = {"probe model": dict(out, tokens=int(len(y)),
                                 growth=_growth(ids, y, w.shape[0]),
                                 singular_values_head=s[:8],
                                 singular_values_at_cap=s[
                                     out["rank_delta_cap"]:][:4])}
  real = [_real_head(config, name, numbers) for name in
          config.probes.theory_models]
  body = "\n\n".join(
      [_opening(numbers),
       "On the probe model's contexts (each a token prefix of one of the "
       "pass's windows), in float64: P = softmax(H W^T + b), N~ the "
       "empirical next-token distribution per context, Delta the logit "
       "move of one gradient step on H, W and b (eq. 6; computed in "
       "factored form, so the rank is not a rounding artefact), and the "
       "singular values of P - N~ (Prop. 2.6's zeta).",
       figure(_figure(s, out, numbers["probe model"]["growth"]), outdir,
              "gradient_theory.png",
              "Left: singular values of P - N~ (Prop. 2.6's zeta), the "
              "dashed line at the update's rank cap 2D (+1 for the bias), "
              "the dotted one at D^u; what lies right of the dashed line no "
              "step through the head can reach. Right: |C^uu| and D^u "
              "against the positions read (App. C's question: how fast the "
              "unique continuations cover V).")])
  body = "\n\n".join([body, *real])
  return Section("Seed 002 §2.3: eq. (6), Props. 2.5 and 2.6 checked "
                 "exactly", body, numbers)


def sub_head(y, vocab: int, size: int, seed: int):
  """(rows, y'): `size` rows of a V-row head holding every token of y (the
  rest drawn at random), sorted, and y as indices into them; ValueError
  when y holds more distinct tokens than `size`."""
  seen = np.unique(y)
  if seen.size and (seen[0] < 0 or seen[-1] >= vocab):
    raise ValueError(f"next tokens must lie in [0, {vocab}); got "
                     f"{seen[0]} .. {seen[-1]}")
  if not isinstance(size, (int, np.integer)) or not (
      seen.size <= size <= vocab):
    raise ValueError(f"`probes.theory_vocab` = {size!r}: must be an integer "
                     f"from {seen.size} (the distinct next tokens) to the "
                     f"head's {vocab} rows")
  rest = np.setdiff1d(np.arange(vocab), seen)
  extra = np.random.default_rng(seed).choice(rest, size - seen.size,
                                             replace=False)
  rows = np.sort(np.concatenate([seen, extra]))
  return rows, np.searchsorted(rows, y)


def _real_head(config, name: str, numbers: dict) -> str:
  """The three statements on a real LLM's hidden states and head rows
  (`sub_head`): numbers[name], and a paragraph."""
  from train.probes import subjects  # pylint: disable=g-import-not-at-top
  tokens, c = config.probes.theory_llm_tokens, config.probes
  subject = subjects.load_subject(model=name)
  window = min(1024, tokens)
  pass_ = text_pass(subject, "", math.ceil(tokens / window), config.seed,
                    window=window)
  ids = gradient_theory.context_ids(pass_.x)[:tokens]
  y = pass_.y.reshape(-1)[:tokens]
  w, b = subject.head()
  rows, y_sub = sub_head(y, w.shape[0], min(c.theory_vocab, w.shape[0]),
                         config.seed)
  ctx = gradient_theory.group(ids, y_sub, rows.size)
  first = np.unique(ids, return_index=True)[1]
  out = gradient_theory.check(pass_.h[:tokens][first], w[rows],
                              None if b is None else b[rows], ctx)
  s = out.pop("singular_values")
  numbers[name] = dict(out, tokens=int(len(y)), V_full=int(w.shape[0]),
                       singular_values_at_cap=s[out["rank_delta_cap"]:][:4])
  return (f"**{name}** ({len(y)} positions of Shakespeare, {ctx.n} "
          f"contexts; the head's rows restricted to {rows.size} of "
          f"{w.shape[0]} tokens, every observed next token among them): "
          f"rank(Delta) = {out['rank_delta']} against the cap "
          f"{out['rank_delta_cap']}; rank(P - N~) = {out['rank_error']} "
          f"against D^u = {out['D_u']}; Prop. 2.6 "
          + ("applies" if out["prop2_6_applies"] else
             "does not apply (D^u <= the cap)") + ".")


def _figure(s, out: dict, growth):
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
  axes[0].semilogy(np.arange(1, len(s) + 1), s)
  axes[0].axvline(out["rank_delta_cap"], ls="--", color="k")
  axes[0].axvline(out["D_u"], ls=":", color="k")
  axes[0].set_xlabel("index i")
  axes[0].set_ylabel("zeta_i of P - N~")
  axes[0].set_title("Prop. 2.6: the spectrum past rank 2D")
  t = [g["tokens"] for g in growth]
  axes[1].loglog(t, [g["C_uu"] for g in growth], "o-", label="|C^uu|")
  axes[1].axhline(out["D"], ls="--", color="k", label="D")
  axes[1].axhline(out["V"], ls=":", color="k", label="V")
  axes[1].minorticks_off()
  axes[1].set_xticks(t, [str(x) for x in t], fontsize=7)
  axes[1].set_xlabel("positions read")
  axes[1].set_ylabel("count")
  axes[1].set_title("Prop. 2.5: |C^uu| against positions")
  axes[1].legend(fontsize=7)
  return fig


def _opening(numbers) -> str:
  lines = []
  for c in CLAIMS:
    for r in c.read({"gradient_theory": numbers}, {}):
      said = r.why if r.verdict == NOT_APPLICABLE else r.ours
      lines.append(f"- **{c.where}**: {r.verdict} (a consistency check): "
                   f"{said}")
  return "**The ledger's rows of this section**:\n\n" + "\n".join(lines)


# The claims ledger's rows (train/report/ledger.py).


def _rows(s, read) -> list[Row]:
  out = []
  for name, r in s.items():
    if isinstance(r, dict) and "rank_error" in r:
      out.append(read(r, name)._replace(subject=name))
  if not out:
    raise claim.Unread("no subject has `rank_error`")
  return out


def _n(r) -> str:
  return (f"{num(r, 'contexts'):.0f} contexts of {num(r, 'tokens'):.0f} "
          f"positions, V = {num(r, 'V'):.0f}")


EXACT = ("none: exact ranks and norms in float64 (numpy's rank tolerance, "
         "max(C, V) eps zeta_1)")


def eq6_row(r: dict, name: str) -> Row:
  cap, rank = num(r, "rank_delta_cap"), num(r, "rank_delta")
  bias = " + 1 for the bias" if r.get("bias") else ""
  ours = (f"rank(Delta) = {rank:.0f}, at most {cap:.0f} = rank(H) + rank(W)"
          f"{bias} (2D = {2 * num(r, 'D'):.0f}); its singular values fall "
          f"from {num(r, 'delta_last'):.1e} of the largest (the last "
          f"counted) to {num(r, 'delta_gap'):.1e} (the next)")
  return Row(REPRODUCED if rank <= cap else DISAGREES, ours,
             "the numerical rank of Delta = (L' - L) / eta after one "
             "gradient step on H, W (and b); the paper's side: <= 2D "
             "(precisely rank(H) + rank(W))", _n(r), EXACT,
             deviations=_deviations(r, name), can_disagree=False)


def prop25_row(r: dict, name: str) -> Row:
  rank, d_u = num(r, "rank_error"), num(r, "D_u")
  ours = (f"rank(P - N~) = {rank:.0f} >= D^u = min(|C^uu| = "
          f"{num(r, 'C_uu'):.0f}, V - 1) = {d_u:.0f} ({num(r, 'C_u'):.0f} of "
          f"{num(r, 'contexts'):.0f} contexts have one continuation; D^u is "
          f"{d_u / num(r, 'D'):.1f} x D; zeta at D^u is "
          f"{num(r, 'error_at_bound'):.1e} of zeta_1)")
  stat = ("the numerical rank of P - N~ against D^u; the paper's side: "
          "rank >= D^u (given P in (0, 1))")
  if not r.get("p_in_open_unit", True):
    return Row(NOT_APPLICABLE, ours, stat, _n(r), EXACT, why=(
        "some probability is 0 or 1 in float64: the proposition's "
        "premise P in (0, 1) fails"), deviations=_deviations(r, name),
               can_disagree=False)
  return Row(REPRODUCED if rank >= d_u else DISAGREES, ours, stat, _n(r),
             EXACT, deviations=_deviations(r, name), can_disagree=False)


def prop26_row(r: dict, name: str) -> Row:
  cap, tail, d_u = (num(r, k) for k in ("rank_delta_cap", "tail_bound",
                                        "D_u"))
  scaled = num(r, "residual_scaled")
  stat = (f"Frobenius distance of the best multiple of Delta to P - N~ "
          f"against sqrt(sum_{{i = {cap + 1:.0f}}}^{{D^u}} zeta_i^2) (the "
          "cap rank(H) + rank(W) read as the paper's 2D); the paper's side: "
          ">= and > 0 (Eckart-Young gives >=; the paper writes >)")
  if d_u <= cap:
    return Row(NOT_APPLICABLE, f"D^u = {d_u:.0f} <= the cap {cap:.0f}",
               stat, _n(r), EXACT, why=(
                   f"D^u = {d_u:.0f} does not exceed the update's rank cap "
                   f"{cap:.0f}: the tail sum is empty (the paper's premise "
                   "D^u > D is too weak for '> 0': it needs D^u > 2D); more "
                   "positions (probes." + ("theory_tokens" if name ==
                                           "probe model" else
                                           "theory_llm_tokens")
                   + ") raise D^u"),
               deviations=_deviations(r, name), can_disagree=False)
  ours = (f"||c Delta - (P - N~)||_F = {scaled:.4g} at the best c >= the "
          f"tail bound {tail:.4g} > 0 (Delta itself, of size omega ~ 1/C: "
          f"{num(r, 'residual'):.4g}); {num(r, 'tail_share'):.1%} of P - "
          f"N~'s squared norm lies past rank {cap:.0f}: no step through the "
          "head reaches it")
  word = REPRODUCED if scaled >= tail > 0 else DISAGREES
  return Row(word, ours, stat, _n(r), EXACT,
             deviations=_deviations(r, name), can_disagree=False)


def read_eq6(s, cfg):
  del cfg
  return _rows(s, eq6_row)


def read_prop25(s, cfg):
  del cfg
  return _rows(s, prop25_row)


def read_prop26(s, cfg):
  del cfg
  return _rows(s, prop26_row)


CLAIMS = (
    claim.on("002", "eq. (6)", "a gradient step through a rank-D head moves "
             "the logits by a matrix of rank <= 2D", "gradient_theory",
             read_eq6, can_disagree=False),
    claim.on("002", "Prop. 2.5", "rank(P - N~) >= min(|C^uu|, V - 1) when P "
             "is in (0, 1)", "gradient_theory", read_prop25,
             can_disagree=False),
    claim.on("002", "Prop. 2.6", "a rank-2D update lies at least the tail "
             "singular values of P - N~ (past 2D, to D^u) from it",
             "gradient_theory", read_prop26, can_disagree=False),
)
