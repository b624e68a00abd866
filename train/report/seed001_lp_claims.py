"""The claims ledger's rows for seed 001's LP sections (Figs. 1 and 3,
App. D, trained vs random; the sections are seed001_lp.py): each reader a
function of one section's numbers and the report's config -> claim.Row.

Fractions carry 95 % Clopper-Pearson brackets; m*, the largest m whose
subsets are selectable with probability >= 0.99 (Fig. 3's caption), is
bracketed by them (seed001_lp_stats.m_bracket); two curves are compared
by Fisher's exact test per m with Holm's correction and its exact power
to see a difference of 0.1 (seed001_lp_stats.compare)."""

from __future__ import annotations

import math

from train.report import claim
from train.report import seed001_lp_stats as st
from train.report.claim import (CONSISTENT, DISAGREES, NOT_RUN, REPRODUCED,
                                TOO_SMALL, Row, Unread, mapping, records)

NEED = ("m", "feasible", "trials")
# Fig. 1's transitions as the paper states them (§6), with the resolution
# of the statement (95 and 85 are multiples of 5; 400 and 1070 read off
# curves drawn in steps we take as 25).
PAPER_TOP = {"logits": (95, 5), "probs": (85, 5)}
PAPER_WIDE = {"32000x2048": (400, 25), "32000x4096": (1070, 25)}
# The paper's own LP transitions as m/d (Fig. 1: GPT-2, TinyLlama, Llama 2).
PAPER_RATIOS = ((768, 95), (2048, 400), (4096, 1070))
D_OVER_5 = (0.15, 0.25)  # 'm ~ d/5' taken as m*/d within 25 % of 0.2.


def _in_band(b: st.MBracket, lo: float, hi: float) -> str:
  """Where [b.lo, b.hi] lies against [lo, hi]: REPRODUCED inside it,
  DISAGREES clear of it, TOO_SMALL overlapping its edge."""
  if b.lo >= lo and b.hi <= hi:
    return REPRODUCED
  if b.hi < lo or b.lo > hi:
    return DISAGREES
  return TOO_SMALL


def _transition_row(recs, paper, level, what: str,
                    deviations=()) -> Row:
  """Fig. 1: m*_level bracketed by the curve against the paper's m +- its
  resolution; TOO_SMALL (the deviation's why) off the paper's shape."""
  m_p, res = paper
  b = st.m_bracket(recs, level)
  verdict = _in_band(b, m_p - res, m_p + res)
  need = st.certify_n(level)
  ours = (f"m* in {st.bracket_text(b)} (all sampled subsets "
          f"selectable up to m = {b.point}, none from "
          f"{b.none_from if b.none_from != math.inf else '-'}); near the "
          f"transition {st.fractions_near(recs, m_p)}")
  open_ = sum(int(r.get("undecided", 0)) for r in recs)
  if open_:
    ours += (f"; {open_} undecided (against the lower end, for the "
             "upper)")
  why = ""
  if verdict == TOO_SMALL:
    why = (f"the brackets do not place m* inside or outside {m_p} +- "
           f"{res}: certifying a fraction >= {level} takes >= {need} "
           f"subsets per m with none failing (Clopper-Pearson); "
           f"{st.n_text(recs)} here")
  elif verdict == DISAGREES:
    why = f"m* clear of the paper's {m_p} +- {res}"
  if deviations and verdict != TOO_SMALL:
    verdict, why = TOO_SMALL, (f"{deviations[0]}: {what} at the paper's "
                               "shape decides")
  return Row(verdict, ours, f"m*_{level}: largest m with P(selectable) >= "
             f"{level}, bracketed by 95 % Clopper-Pearson ends per m, "
             f"against the paper's {m_p} +- {res}",
             f"{st.n_text(recs)} subsets per m", "95 % Clopper-Pearson per "
             "m; m* in [last m certified >= level, first m certified below "
             "- 1]", why, tuple(deviations))


def read_figure1(s, cfg):
  """Fig. 1 (top): m* near 95 (logits) and 85 (probs) at 50257 x 768."""
  level = cfg["threshold"]
  got = [p for p in PAPER_TOP if p in s]
  if not got:
    raise Unread("neither `logits` nor `probs` was swept")
  shape = tuple(s["shape"]) if "shape" in s else (
      cfg["figure1"]["N"], cfg["figure1"]["d"])
  dev = () if shape == (50257, 768) else (
      f"random {shape[0]}x{shape[1]}, not the paper's 50257x768",)
  return [_transition_row(records(s, p, need=NEED), PAPER_TOP[p], level,
                          p, dev)._replace(subject=p) for p in got]


def read_figure1_wide(s, cfg):
  """Fig. 1 (bottom): the TinyLlama- and Llama-2-size heads, random."""
  wide = mapping(s.get("wide", {}), "wide")
  out = []
  for k, paper in PAPER_WIDE.items():
    if k not in wide:
      out.append(Row(NOT_RUN, "-", "-", "-", "-", f"{k} not run here "
                     "(figure1.wide; --scale=paper runs both panels)",
                     subject=k))
      continue
    recs = records(wide[k], "records", at=f"wide.{k}", need=NEED)
    out.append(_transition_row(recs, paper, cfg["threshold"],
                               k)._replace(subject=k))
  return out


def _probes(row, at: str) -> list[dict]:
  return records(row, "probes", at=at, need=NEED)


def _ratio_text(rows, level: float) -> str:
  """'d = 128: m* = 10, m*/d = 0.078 in [0.000, 0.086]; ...'."""
  return "; ".join(
      f"d = {r['d']}: m* = {r['m_star_lp']}, m*/d = "
      f"{r['m_star_lp'] / r['d']:.3f} in " + st.bracket_text(
          st.m_bracket(_probes(r, "by_d"), level), r["d"], ".3f")
      for r in rows)


def read_figure3(s, cfg):
  """Fig. 3 (left): m*/d per d, where d << N, against d/5."""
  level = cfg["threshold"]
  rows = sorted(records(s, "by_d", need=("N", "d", "N_over_d",
                                          "m_star_lp")), key=lambda r: r["d"])
  regime = [r for r in rows if r["N_over_d"] >= 15]  # Paper: N/d >= 15.6.
  n = st.n_text([p for r in rows for p in _probes(r, "by_d")])
  stat = (f"m*_{level}/d per d (N/d >= 15), its Clopper-Pearson bracket "
          f"against d/5 +- 25 % ({D_OVER_5[0]} .. {D_OVER_5[1]})")
  dev = [] if rows[0]["N"] == 32000 else [f"N = {rows[0]['N']}, not 32000"]
  if max(r["d"] for r in rows) < 2048:
    dev.append(f"d to {max(r['d'] for r in rows)} (the paper: to 2048)")
  ours = _ratio_text(rows, level)
  unc = "95 % Clopper-Pearson per bisection probe (fresh subsets)"
  if len(regime) < 2:
    return Row(TOO_SMALL, ours, stat, f"{n} subsets per probe", unc,
               "fewer than 2 widths with N/d >= 15 (the paper's d << N): "
               "N = 32000 with d = 128 .. 2048 decides", tuple(dev))
  per_d = {r["d"]: _in_band(st.m_bracket(_probes(r, "by_d"), level),
                            D_OVER_5[0] * r["d"], D_OVER_5[1] * r["d"])
           for r in regime}
  ratio = [r["m_star_lp"] / r["d"] for r in regime]
  rising = all(b >= a for a, b in zip(ratio, ratio[1:])) and ratio[-1] > \
      ratio[0]
  paper = ", ".join(f"{m}/{d} = {m / d:.3f}" for d, m in PAPER_RATIOS)
  ours += (f". The paper's own Fig. 1 transitions rise with d too: {paper}")
  if all(v == REPRODUCED for v in per_d.values()):
    return Row(REPRODUCED, ours, stat, f"{n} subsets per probe", unc,
               deviations=tuple(dev))
  off = [d for d, v in per_d.items() if v == DISAGREES]
  if not off:
    need = st.certify_n(level)
    return Row(TOO_SMALL, ours, stat, f"{n} subsets per probe", unc,
               f"no width's bracket clears d/5 +- 25 %: >= {need} subsets "
               "per probe certify a fraction >= 0.99", tuple(dev))
  last = per_d[regime[-1]["d"]]
  if rising and last != DISAGREES:
    return Row(CONSISTENT, ours, stat, f"{n} subsets per probe", unc,
               f"m*/d rises with d ({ratio[0]:.3f} at d = {regime[0]['d']} "
               f"to {ratio[-1]:.3f} at d = {regime[-1]['d']}), below d/5 "
               f"at d = {', '.join(map(str, off))} and not clear of it at "
               "the largest d, as the paper's own transitions rise: d/5 "
               "summarises its largest widths, not a constant ratio",
               tuple(dev))
  return Row(DISAGREES, ours, stat, f"{n} subsets per probe", unc,
             f"m*/d clear of d/5 +- 25 % at d = {', '.join(map(str, off))}"
             + ("" if rising else ", and not rising with d as the paper's "
                f"own transitions do ({paper})"), tuple(dev))


SLOW = -0.5  # 'Slowly': m* falls by less than N^-0.5 over the sweep.


def read_figure3_n(s, cfg):
  """Fig. 3 (right): m* decreases slowly with N at fixed d."""
  level = cfg["threshold"]
  rows = sorted(records(s, "by_n", need=("N", "d", "m_star_lp")),
                key=lambda r: r["N"])
  if len(rows) < 2:
    raise Unread("`by_n` has fewer than 2 vocabularies")
  first, last = rows[0], rows[-1]
  b_first = st.m_bracket(_probes(first, "by_n"), level)
  b_last = st.m_bracket(_probes(last, "by_n"), level)
  n = st.n_text([p for r in rows for p in _probes(r, "by_n")])
  m0, m1 = max(first["m_star_lp"], 1), max(last["m_star_lp"], 1)
  slope = math.log(m1 / m0) / math.log(last["N"] / first["N"])
  ours = (f"d = {first['d']}: " + "; ".join(
      f"N = {r['N']}: m* = {r['m_star_lp']} in "
      f"{st.bracket_text(st.m_bracket(_probes(r, 'by_n'), level))}"
      for r in rows) + f"; log-log slope {slope:+.3f}")
  stat = (f"m*_{level} from the smallest to the largest N: a decrease "
          "where the largest N's upper bracket lies under the smallest "
          f"N's m*, 'slowly' a log-log slope above {SLOW}")
  dev = [] if first["d"] == 1000 else [f"d = {first['d']}, not 1000"]
  if (first["N"], last["N"]) != (2000, 32000):
    dev.append(f"N = {first['N']}..{last['N']} (the paper: 2000..32000)")
  unc = ("95 % Clopper-Pearson upper ends per bisection probe (a lower end "
         f">= {level} needs >= {st.certify_n(level)} subsets)")
  down = b_last.hi < first["m_star_lp"]
  up = b_first.hi < last["m_star_lp"]
  if up:
    verdict, why = DISAGREES, "m* rises with N, clear of the brackets"
  elif down and slope < SLOW:
    verdict, why = DISAGREES, (f"m* falls fast (slope {slope:+.3f} < "
                               f"{SLOW})")
  elif down:
    verdict, why = REPRODUCED, ""
  else:
    verdict, why = TOO_SMALL, (
        f"the largest N's bracket {st.bracket_text(b_last)} reaches the "
        f"smallest N's m* = {first['m_star_lp']}: a wider N range or "
        f">= {st.certify_n(level)} subsets per probe decides")
  return Row(verdict, ours, stat, f"{n} subsets per probe", unc, why,
             tuple(dev))


def comparison_row(a, b, names, *, statistic: str, deviations=(),
                   subject: str = "") -> Row:
  """Two curves alike (the paper's claim) or not: Fisher per m, Holm;
  DISAGREES where an adjusted p < 0.05, TOO_SMALL where the power to see
  0.1 is < 0.8 at some m (or no m is in the transition)."""
  c = st.compare(a, b)
  ours = st.comparison_text(c, names)
  n = f"{st.n_text(list(a) + list(b))} subsets per m and curve"
  unc = (f"Fisher's exact test per m, Holm-corrected at {st.ALPHA}; power "
         f"at the pooled fraction, level {st.ALPHA}/{len(c.rows)}")
  if c.word == "differ":
    return Row(DISAGREES, ours, statistic, n, unc, f"the curves differ at "
               f"m = {c.worst['m']} (Holm p {c.worst['p_holm']:.3g})",
               tuple(deviations), subject=subject)
  if c.word == "alike":
    return Row(REPRODUCED, ours, statistic, n, unc,
               deviations=tuple(deviations), subject=subject)
  if not c.in_transition:
    why = "no m tested lies in the transition (every fraction 0 or 1)"
  else:
    weakest = min(c.rows, key=lambda r: r["power"])
    p = (weakest["k1"] + weakest["k2"]) / (weakest["n1"] + weakest["n2"])
    need = st.subsets_for_power(p, len(c.rows))
    why = (f"no significant difference, but the power to see {st.DIFF} is "
           f"{c.min_power:.2f} < {st.POWER} (m = {weakest['m']}); about "
           f"{need} subsets per m and curve decide")
  return Row(TOO_SMALL, ours, statistic, n, unc, why, tuple(deviations),
             subject=subject)


def read_natural(s, cfg):
  """App. D / Fig. 6: natural against uniform targets, m by m."""
  c = cfg["natural"]
  nat = records(s, "natural", need=NEED)
  uni = records(s, "uniform", need=NEED)
  return comparison_row(
      nat, uni, ("natural", "uniform"),
      statistic="fraction selectable with natural vs uniform targets, per "
      "m (the same subsets)",
      deviations=(f"random {c['N']}x{c['d']} head", "targets: Shakespeare "
                  "word bigrams, not GPT-2 on news"))


# Subjects of the trained-vs-random claim: what each matrix is.
TRAINED_DEVIATIONS = {
    "minilm": ("all-MiniLM-L6-v2's word embeddings (BERT, tied to its MLM "
               "output), not an LM head",),
    "smollm2": ("SmolLM2-135M-Instruct's tied head (Q8_0), not GPT-2",),
    "gemma3": ("Gemma 3 270M's tied head (Q8_0, norm-constrained rows), "
               "not GPT-2",),
}
REAL_HEADS = ("smollm2", "gemma3")  # LM heads the claim wants read.


def read_trained(s, cfg):
  """Fig. 1 solid vs dotted: each trained matrix against its Gaussian
  twin, one row per subject; a real LM head not run here is 'not run'."""
  pairs = mapping(s.get("pairs", {}), "pairs")
  if not pairs:
    raise Unread("no trained matrix in `pairs`")
  out = []
  for name, p in pairs.items():
    mapping(p, f"pairs.{name}")
    a = records(p, "trained", need=NEED, at=f"pairs.{name}")
    b = records(p, "gaussian", need=NEED, at=f"pairs.{name}")
    out.append(comparison_row(
        a, b, (name, "Gaussian"), subject=name, statistic="fraction "
        "selectable (equal logits), trained head vs a Gaussian of its "
        "shape, per m", deviations=TRAINED_DEVIATIONS.get(name, ()) + (
            "one Gaussian draw: the test covers the subsets, not the "
            "draw",)))
  out += [Row(NOT_RUN, "-", "-", "-", "-", f"{h}'s head not run here "
              "(trained.heads; --scale=full runs SmolLM2, --scale=paper "
              "both)", subject=h) for h in REAL_HEADS if h not in pairs]
  return out


CLAIMS = (
    claim.on("001", "Fig. 1 (top)", "random 50257x768: all subsets up to "
             "m ~ 95 (logits), ~85 (probs)", "figure1", read_figure1),
    claim.on("001", "Fig. 1 (bottom)", "random TinyLlama- and Llama-2-size "
             "heads (32000 x 2048, x 4096): all subsets up to m ~ 400, "
             "~1070", "figure1", read_figure1_wide),
    claim.on("001", "Fig. 3", "m ~ d/5 for d << N (N = 32000)", "figure3",
             read_figure3),
    claim.on("001", "Fig. 3 (N panel)", "m decreases slowly with N as N "
             "becomes large (d = 1000, N = 2000..32000)", "figure3",
             read_figure3_n),
    claim.on("001", "App. D / Fig. 6", "natural and uniform targets: little "
             "difference", "natural", read_natural),
    claim.on("001", "Fig. 1 (solid vs dotted)", "trained heads select like "
             "random ones of their size", "trained", read_trained),
)


def section_word(row: Row) -> str:
  """A section's opening word (claim.Verdict.word) for its ledger row:
  agrees, disagrees, or cannot tell."""
  return {REPRODUCED: claim.SMALLER, CONSISTENT: claim.SMALLER,
          DISAGREES: DISAGREES}.get(row.verdict, claim.CANNOT)

