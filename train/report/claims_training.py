"""The claims ledger's rows for seeds 002-004 (the gradient bottleneck,
probability encoding, the thesis's models): each a function of one report
section's numbers -> (ours, our scale, verdict), most through the
section's own verdict sentence; MULTI: claims read on the probe model and
on every real LLM."""

from __future__ import annotations

import math

from train.probes import gradient as probe_gradient
from train.report import seed002, seed003, seed004
from train.report.claim import (DISAGREES, NOT_RUN, SMALLER, CANNOT,
                                REPRODUCED, Claim, Unread, finite,
                                from_sentence, mapping, num, per_subject,
                                real, records)


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
      sides.append(f"{name} {probe_gradient.twin_side(twin)} than its "
                   f"Gaussian twins ({twin['trained'] - twin['random']:+.4f})")
    else:
      sides.append(f"{name} {r['norm_ratio'] - counted:+.4f} (no twin)")
  low = [n for (n, r) in named if r["norm_ratio"] < 0.95]
  if low:
    return "; ".join(parts), f"{DISAGREES}: under 95 % for {', '.join(low)}"
  return "; ".join(parts), (f"{SMALLER}; against dimension counting: "
                            + ", ".join(sides))


def gradient(s, cfg):
  ours, verdict = destroyed([(n, r) for n, r in s.items()
                              if isinstance(r, dict) and "norm_ratio" in r])
  return ours, "the report's probe model", verdict


def long_rank(s, cfg):
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


def gradient_real(s, cfg):
  ours, verdict = destroyed(real(s, "gradient"))
  return ours, ", ".join(s["models"]), verdict


def encoding_real(s, cfg):
  named = real(s, "encoding")
  for n, e in named:
    num(e, "adj_r2", at=f"models.{n}.encoding")
  ours = "; ".join(f"{n}: {e['adj_r2']:.3f}" for n, e in named)
  low = [n for n, e in named if e["adj_r2"] < 0.8]
  return ours, ", ".join(s["models"]), (
      f"{DISAGREES}: below 0.8 for {', '.join(low)}" if low else REPRODUCED)


def lowrank(s, cfg):
  r = records(s, "rows", need=("V", "D", "seed", "steps", "fall",
                              "final_val_loss", "tokens_per_step"))
  return from_sentence(seed002.lowrank_verdict(r, cfg["lowrank"]["flat"]),
                        f"V = {r[0]['V']}, D = {min(x['D'] for x in r)}.."
                        f"{max(x['D'] for x in r)}, {r[0]['steps']} steps")


def spamlang(s, cfg):
  r = records(s, "rows", need=("V", "lr", "steps", "final_val_loss",
                              "accuracy"))
  return from_sentence(
      seed002.spamlang_verdict(r, cfg["spamlang"]["learned"]),
      f"V up to {max(x['V'] for x in r)}, "
      f"{'CPU model' if cfg['spamlang']['cpu'] else 'Table 3 model'}")


def thesis(s, cfg):
  r = records(s, "runs", need=("final_val_loss",))
  return from_sentence(seed004.thesis_verdict(r), ", ".join(
      x["run"] for x in r) + f"; {r[0].get('tokens', '?')} tokens each")


def frequency(s, cfg):
  f = s["frequency_llama"]
  rows = records(f, "rows", need=("step", "adj_r2"), at="frequency_llama")
  num(f, "V", at="frequency_llama")
  for i, r in enumerate(rows):
    if r.get("val_loss") is not None:  # None: not logged at that step.
      num(r, "val_loss", at=f"frequency_llama.rows[{i}]")
  return from_sentence(seed003.frequency_verdict(f["rows"], f["V"]),
                        f"llama-like run, V = {f['V']}, "
                        f"{f['rows'][-1]['step']} steps")


def encoding(s, cfg):
  r2 = num(s, "encoding", "adj_r2")
  return (f"adj. R^2 {r2:.3f} (probe model, V = {s['encoding']['V']})",
          "a small trained GPT", SMALLER if r2 >= 0.8 else
          f"{DISAGREES}: below 0.8 on a small, briefly trained model")


def sparsity(named):
  for n, e in named:
    num(e, "median_dim_abs_spearman", at=n)
  ours = "; ".join(f"{n}: median |Spearman| {e['median_dim_abs_spearman']:.2f}"
                   for n, e in named)
  return ours, "probe GPT and real LLMs; poorly = median below 0.2", \
      per_subject({n: DISAGREES if e["median_dim_abs_spearman"] > 0.2
                    else REPRODUCED for n, e in named})


def input_embeddings(named):
  named = [(n, e) for n, e in named if "adj_r2_input_embeddings" in e]
  if not named:
    return "-", "untied heads only", f"{NOT_RUN}: no untied subject"
  for n, e in named:
    num(e, "adj_r2_input_embeddings", at=n)
  ours = "; ".join(f"{n}: {e['adj_r2_input_embeddings']:.2f}"
                   for n, e in named)
  return ours, "untied heads only; below 0.5 disagrees", per_subject(
      {n: DISAGREES if e["adj_r2_input_embeddings"] < 0.5 else REPRODUCED
       for n, e in named})


def _numbers_at(p, key, name, indices) -> list:
  """p[key], a list with finite numbers at `indices`."""
  values = p[key]
  if not isinstance(values, list):
    raise TypeError(f"`{name}.{key}` is a {type(values).__name__}, not a "
                    "list")
  for i in indices:
    finite(values[i], f"{name}.{key}[{i}]")
  return values


def removal(named):
  """Fig. 6: KL after removing 30 % / 50 % of the dimensions, saliency
  order vs adversarial; within 10 % of each other: cannot tell."""
  parts, verdicts = [], {}
  for n, p in named:
    ratios = mapping(p, n)["ratios"]
    if not isinstance(ratios, list) or not {0.3, 0.5} <= set(ratios):
      raise Unread(f"`{n}.ratios` lacks 0.3 or 0.5")
    i30, i50 = ratios.index(0.3), ratios.index(0.5)
    sal, adv = (_numbers_at(p, k, n, (i30, i50))
                for k in ("saliency", "adversarial"))
    parts.append(f"{n}: saliency {sal[i30]:.3g} / {sal[i50]:.3g}, "
                 f"adversarial {adv[i30]:.3g} / {adv[i50]:.3g}")
    ratio = min(adv[i30] / max(sal[i30], 1e-12),
                adv[i50] / max(sal[i50], 1e-12))
    verdicts[n] = (REPRODUCED if ratio > 1.1 else CANNOT if ratio > 0.9
                   else DISAGREES)
  return "; ".join(parts), ("KL at 30 % / 50 % removed; within 10 %: "
                            "cannot tell"), per_subject(verdicts)


CLAIMS = (
    Claim("002", "Fig. 6, eq. (10)", "95-99 % of the logit gradient's norm "
          "destroyed", "gradient", gradient),
    Claim("002", "Fig. 6 on real LLMs", "95-99 %", "real_llm",
          gradient_real),
    Claim("002", "Fig. 2", "logit gradients near full rank, min(T, V), "
          "while the head passes rank D", "gradient", long_rank),
    Claim("002", "Fig. 1 (§3.1)", "D = 4096 reaches D = 32's final loss "
          "in 16x fewer tokens", "lowrank", lowrank),
    Claim("002", "Fig. 14 (§3.2)", "SpamLang: low-rank loss rises with V, "
          "full rank learns", "spamlang", spamlang),
    Claim("003", "Table 1", "adj. R^2 of -log p on W: 0.892 (GPT-2)",
          "encoding", encoding),
    Claim("003", "Table 1 on real LLMs", "0.86-0.89 (GPT-2 0.892)",
          "real_llm", encoding_real),
    Claim("003", "Fig. 7 (§5)", "frequency encoded before the loss "
          "converges", "encoding", frequency),
    Claim("004", "Fig. 5.1", "Model 8 < Model 7 < Models 1-6 in loss at "
          "equal steps", "training", thesis),
)


# Claims read from several sections: (paper, where, says, sections, read
# of the list of (name, numbers)), numbers under `key` of each.
MULTI = (
    ("003", "Fig. 3", "the overwhelming majority of W's dimensions poorly "
     "correlated with log p", "encoding", sparsity),
    ("003", "Table 1 (input embeddings)", "adj. R^2 0.66-0.81 on the input "
     "embeddings of untied models", "encoding", input_embeddings),
    ("003", "Fig. 6", "removing the least salient dimensions first costs "
     "less than the most salient first", "prune", removal),
)
