"""The claims ledger's rows for seed 001's LP sections (Figs. 1 and 3,
App. D, trained vs random; the sections are seed001_lp.py): each a
function of one section's numbers and the report's config -> (ours, our
scale, verdict)."""

from __future__ import annotations

import numpy as np

from bottleneck import stats
from train.report import claim, seed001_lp
from train.report.claim import (CANNOT, DISAGREES, NOT_RUN, REPRODUCED,
                                SMALLER, Unread, mapping, num, records)


def read_figure1(s, cfg):
  """Fig. 1 (top): m* near 95 (logits) and 85 (probs) at 50257 x 768."""
  c, t = cfg["figure1"], cfg["threshold"]
  got = {p: seed001_lp.m_lp(records(s, p, need=("m", "fraction")), t)
         for p in ("logits", "probs") if p in s}
  if not got:
    raise Unread("neither `logits` nor `probs` was swept")
  ours = ", ".join(f"{p} m* = {m}" for p, m in got.items())
  paper_size = (c["N"], c["d"]) == (50257, 768)
  scale = f"{c['N']}x{c['d']}, {c['trials']} subsets per m"
  if not paper_size:
    return ours, scale, f"{CANNOT}: not the paper's 50257 x 768"
  far = {p: m for p, m in got.items()
         if abs(m - {"logits": 95, "probs": 85}[p]) > 10}
  if far:
    return ours, scale, f"{DISAGREES}: " + ", ".join(
        f"{p} off by more than 10" for p in far)
  return ours, scale, (REPRODUCED if c["trials"] >= 100 else SMALLER)


PAPER_WIDE = {"32000x2048": 400, "32000x4096": 1070}  # Fig. 1, bottom.


def read_figure1_wide(s, cfg):
  """Fig. 1 (bottom): the TinyLlama- and Llama-2-size heads."""
  wide = {k: v for k, v in mapping(s.get("wide", {}), "wide").items()
          if k in PAPER_WIDE}
  if not wide:
    return "-", "-", (f"{NOT_RUN}: the wider panels run at --scale=paper "
                      "(figure1.wide)")
  t = cfg["threshold"]
  got = {k: seed001_lp.m_lp(records(v, "records", at=f"wide.{k}", need=(
      "m", "fraction", "trials")), t) for k, v in wide.items()}
  ours = "; ".join(f"{k}: m* = {m} ("
                   f"{num(wide[k], 'seconds_per_instance', at=k):.1f} s "
                   "per instance)" for k, m in got.items())
  far = [k for k, m in got.items()
         if abs(m - PAPER_WIDE[k]) > 0.1 * PAPER_WIDE[k]]
  trials = min(v["records"][0]["trials"] for v in wide.values())
  missing = [k for k in PAPER_WIDE if k not in wide]
  verdict = (f"{DISAGREES}: more than 10 % off for {', '.join(far)}" if far
             else REPRODUCED if trials >= 100 and not missing else SMALLER)
  if missing:
    verdict += f"; {', '.join(missing)} not run (--scale=paper)"
  return ours, f"{', '.join(wide)}, {trials} subsets per m", verdict


def read_figure3(s, cfg):
  """Fig. 3: m* ~ d/5 where d << N, a slope with a bootstrap interval."""
  rows = records(s, "by_d", need=("N", "d", "N_over_d", "m_star_lp"))
  num(s, "slope")
  regime = [r for r in rows if r["N_over_d"] >= 15]  # Paper: N/d >= 15.6.
  ours = f"line through 0 over every d: m* = {s['slope']:.3f} d"
  scale = (f"N = {rows[0]['N']}, d = {rows[0]['d']}..{rows[-1]['d']} "
           f"(N/d down to {min(r['N_over_d'] for r in rows):.1f})")
  if len(regime) < 2:
    return ours, scale, (f"{CANNOT}: fewer than 2 widths with d << N "
                         "(N/d >= 15, the paper's regime)")
  d = np.array([r["d"] for r in regime], float)
  m = np.array([r["m_star_lp"] for r in regime], float)
  slope = stats.slope_through_zero(d, m)
  lo, hi = stats.bootstrap_slope(d, m, seed=cfg.get("seed", 0))
  ratio = m / d
  trend = ("rising" if np.all(np.diff(ratio) > 0) else "falling" if
           np.all(np.diff(ratio) < 0) else "not monotone")
  ours += (f"; over N/d >= 15 only: {slope:.3f} d (90 % bootstrap "
           f"{lo:.3f} .. {hi:.3f}), m*/d {ratio[0]:.3f} "
           f"(d = {d[0]:.0f}) .. {ratio[-1]:.3f} (d = {d[-1]:.0f}), "
           f"{trend}")
  if lo <= 0.2 <= hi:
    return ours, scale, SMALLER + " (0.2 inside the interval)"
  return ours, scale, (
      f"{DISAGREES}: {slope:.3f} d where N/d >= 15 (0.2 outside "
      f"{lo:.3f} .. {hi:.3f}), m*/d {trend} with d "
      f"(N = {rows[0]['N']}; the paper: N = 32000, d to 2048; a d/5 line "
      "fitted through 0 over its range weighs its largest d most)")


def read_natural(s, cfg):
  """App. D: natural against uniform targets (natural_verdict)."""
  c = cfg["natural"]
  for k in ("natural", "uniform"):
    records(s, k, need=("m", "feasible", "trials"))
  records(s, "spread", need=("R_natural_max", "R_uniform_max", "s"))
  return claim.reading(seed001_lp.natural_verdict(
      s["natural"], s["uniform"], s["spread"], c["eps"]),
                       f"{c['N']}x{c['d']}, Shakespeare bigrams")


def read_trained(s, cfg):
  """Fig. 1 solid vs dotted: trained against Gaussian (trained_verdict)."""
  curves = {k: records(s, k, need=("m", "feasible", "trials"))
            for k, v in s.items()
            if isinstance(v, list) and not k.endswith("t*")}
  if len(curves) < 2:
    return "-", "-", f"{NOT_RUN}: no trained matrix"
  first = next(iter(curves.values()))
  return claim.reading(seed001_lp.trained_verdict(curves),
                       f"{first[0]['trials']} subsets per m")


CLAIMS = (
    claim.on("001", "Fig. 1 (top)", "random 50257x768: all subsets up to "
             "m ~ 95 (logits), ~85 (probs)", "figure1", read_figure1),
    claim.on("001", "Fig. 1 (bottom)", "random TinyLlama- and Llama-2-size "
             "heads (32000 x 2048, x 4096): all subsets up to m ~ 400, "
             "~1070", "figure1", read_figure1_wide),
    claim.on("001", "Fig. 3", "m ~ d/5 for d << N (N = 32000)", "figure3",
             read_figure3),
    claim.on("001", "App. D / Fig. 6", "natural and uniform targets: little "
             "difference", "natural", read_natural),
    claim.on("001", "Fig. 1 (solid vs dotted)", "trained heads select like "
             "random ones of their size", "trained", read_trained),
)
