"""Report section for seed 002 (Godey & Artzi): the gradient bottleneck.

eq. (10) and Figs. 2, 7, 8 on the report's probe model (and an HF folder,
probes.hf_dir), and their ledger rows. §3.1's low-rank heads (Fig. 1) are
lowrank.py, §3.2's SpamLang (Fig. 14) spamlang.py.
"""

from __future__ import annotations

import math

from train.probes import gradient, spec, subjects
from train.report import claim
from train.report.claim import (DISAGREES, NOT_RUN, SMALLER, Unread, num,
                                records)
from train.report.section import (Section, figure, probe_subject, table,
                                  text_pass)


def _subjects(config, outdir):
  out = [probe_subject(config, outdir)]
  if config.probes.hf_dir:
    out.append(subjects.load_subject(hf_dir=config.probes.hf_dir))
  return out


def gradient_bottleneck(config, outdir: str) -> Section:
  """Seed 002: eq. (10), App. D cosine, Figs. 2, 7, 8 on trained heads."""
  c = config.probes
  rows, figs, numbers = [], [], {}
  for subject in _subjects(config, outdir):
    out, figures = gradient.gradient_probe(subject, text_pass(
        subject, "", c.windows, config.seed, gradient_sums=True),
                                           rank_tokens=c.rank_tokens)
    numbers[subject.name] = out
    rows.append({"model": subject.name, "V": subject.cfg.vocab_size,
                 "D": out["D"], "D_over_V": out["D_over_V"],
                 "tokens": out["tokens"], "norm_ratio": out["norm_ratio"],
                 "squared_ratio": out["squared_ratio"],
                 "mean_cosine": out["mean_cosine"]})
    for name, fig in figures.items():
      figs.append(figure(fig, outdir, f"{name}_{subject.name}.png",
                         f"{subject.name}: {_CAPTIONS[name]}"))
  eff = numbers[rows[0]["model"]]["efficiency"]
  body = "\n\n".join([
      "Fraction of the logit-gradient norm in ker(W^T), destroyed before "
      "it reaches the backbone (eq. 10). `norm_ratio` is eq. 10 itself, "
      "|P_ker G|_F / |G|_F: **the paper's 95-99% is this norm ratio**; "
      "`squared_ratio` is its square (the share of squared norm). "
      "`mean_cosine`: average cos(g_t, P_W g_t) (paper App. D: 0.1-0.2).",
      table(rows),
      "**Against dimension counting**: " + " ".join(
          f"{name}: {gradient.destroyed_reading(out)}"
          for name, out in numbers.items()),
      *[f"**Fig. 2 past T = V** ({name}): " + gradient.long_rank_reading(
          out["rank_vs_tokens_long"], out["V"])
        for name, out in numbers.items() if "rank_vs_tokens_long" in out],
      f"Update efficiency (Fig. 8), loss change after moving the logits by "
      f"1% of their norm: along the logit gradient "
      f"{eff['logit_gradient'][2] - eff['loss0']:+.4f}, along grad_H W^T "
      f"{eff['hidden_gradient'][2] - eff['loss0']:+.4f}.", *figs])
  return Section("Seed 002: the LM head destroys most of the gradient", body,
                 numbers)


_CAPTIONS = spec.captions(gradient.GRADIENT)


# The claims ledger's rows (train/report/ledger.py).


def destroyed(named) -> tuple[str, str]:
  """(ours, verdict) of eq. (10)'s norm ratio for (name, numbers) pairs,
  each beside sqrt(1 - D/V): the share of a random direction's norm that
  a D-dimensional row space misses; where the probe ran Gaussian twins
  of the head (`random_head`), the comparison is on the same gradients
  and within their spread."""
  parts, sides = [], []
  if not named:
    raise Unread("no subject has `norm_ratio`")
  for name, r in named:
    for k in ("D_over_V", "norm_ratio"):
      num(r, k, at=name)
    counted = math.sqrt(1 - r["D_over_V"])
    parts.append(f"{name}: {r['norm_ratio']:.4f} (sqrt(1 - D/V) = "
                 f"{counted:.4f})")
    twin = r.get("random_head")
    if twin:
      for k in ("trained", "random", "random_std"):
        num(twin, k, at=f"{name}.random_head")
      sides.append(f"{name} {gradient.twin_side(twin)} than its "
                   f"Gaussian twins ({twin['trained'] - twin['random']:+.4f})")
    else:
      sides.append(f"{name} {r['norm_ratio'] - counted:+.4f} (no twin)")
  low = [n for (n, r) in named if r["norm_ratio"] < 0.95]
  if low:
    return "; ".join(parts), f"{DISAGREES}: under 95 % for {', '.join(low)}"
  return "; ".join(parts), (f"{SMALLER}; against dimension counting: "
                            + ", ".join(sides))


def read_gradient(s, cfg):
  """Fig. 6, eq. (10) on the probe model (`destroyed`)."""
  ours, verdict = destroyed([(n, r) for n, r in s.items()
                              if isinstance(r, dict) and "norm_ratio" in r])
  return ours, "the report's probe model", verdict


def read_long_rank(s, cfg):
  """Fig. 2: the logit gradients' rank near min(T, V)."""
  rows = [(n, r) for n, r in s.items() if isinstance(r, dict)
          and r.get("rank_vs_tokens_long")]
  if not rows:
    return "-", "-", f"{NOT_RUN}: probes.rank_tokens = 0 at this scale"
  name, r = rows[0]
  long = records(r, "rank_vs_tokens_long", need=("tokens", "rank"), at=name)
  last, v = long[-1], num(r, "V", at=name)
  ours = ", ".join(f"T = {x['tokens']}: {x['rank']}"
                   for x in r["rank_vs_tokens_long"])
  scale = f"{name}, V = {v}" + (", T < V" if last["tokens"] < v else "")
  share = last["rank"] / min(last["tokens"], v)
  return ours, scale, (SMALLER if share >= 0.99 else
                       f"{DISAGREES}: {share:.1%} of min(T, V) at T = "
                       f"{last['tokens']}")


CLAIMS = (
    claim.on("002", "Fig. 6, eq. (10)", "95-99 % of the logit gradient's "
             "norm destroyed", "gradient", read_gradient),
    claim.on("002", "Fig. 2", "logit gradients near full rank, min(T, V), "
             "while the head passes rank D", "gradient", read_long_rank),
)
