"""Seed 001 App. A, D and E on a trained head, and the sanity check.

  sanity_probe      is the model loaded right? perplexity and top-1
                    accuracy over the Pass, a greedy continuation
  cumulative_probe  App. A / Fig. 4: mass of the top-m tokens per position
  natural_targets   App. D: the model's own next-token distributions (top
                    `keep`) as prescribed probabilities for the LP
  rowstats_probe    App. E / Fig. 7: row norms and cosines vs random
  quantisation      what a GGUF's Q8_0 storage can do to the row norms

Their specs (train/probes/spec.py): SANITY, CUMULATIVE, ROWSTATS.
"""

from __future__ import annotations

import numpy as np

from bottleneck import head_stats
from bottleneck.io import gguf_file, zoo
from train.models import generate, loaders
from train.probes import forward, plots
from train.probes.forward import (Pass, device_head, position_cap,
                                  probabilities)
from train.probes.spec import Context, Figure, Probe, Row, fmt, of_key

# Modern encyclopaedia-style English written for this project (96 words).
PROSE = (
    "The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in "
    "Paris, France. It is named after the engineer Gustave Eiffel, whose "
    "company designed and built the tower from 1887 to 1889. It was "
    "constructed as the centrepiece of the 1889 World's Fair, and to crown "
    "the centennial anniversary of the French Revolution. Although initially "
    "criticised by some of France's leading artists and intellectuals for "
    "its design, it has since become a global cultural icon of France and "
    "one of the most recognisable structures in the world.")


def continuation(subject, prompt: str, new_tokens: int) -> str:
  """Greedy continuation of `prompt` (BOS first where the model uses one)."""
  ids = subject.tokenizer.encode(prompt)
  if subject.tokenizer.bos_id is not None:
    ids = [subject.tokenizer.bos_id] + ids
  out = generate.complete(subject.params, subject.model, subject.cfg, [ids],
                          new_tokens)[0]
  return subject.tokenizer.decode(out)


def sanity_probe(subject, pass_: Pass, prompt: str = "The capital of France "
                 "is", new_tokens: int = 16):
  """Perplexity, top-1 accuracy and token count of the Pass, and a greedy
  continuation: check these before trusting a new model's other numbers."""
  out = {"perplexity": pass_.perplexity(),
         "top1_accuracy": float(pass_.top1.mean()),
         "mean_nll": float(pass_.nll.mean()), **pass_.describe(),
         "prompt": prompt,
         "continuation": continuation(subject, prompt, new_tokens)}
  return out, {}


def prose_perplexity(subject) -> float:
  """The subject's perplexity on PROSE (one window, BOS first where the
  model uses one): 5.9 (SmolLM2-135M) and 7.4 (Gemma 3 270M) when loaded
  right."""
  ids = subject.tokenizer.encode(PROSE)
  if subject.tokenizer.bos_id is not None:
    ids = [subject.tokenizer.bos_id] + ids
  ids = np.asarray(ids[:subject.cfg.block_size + 1], np.int32)
  p = forward.run(subject, ids[None, :-1], ids[None, 1:], "prose",
                  gradient_sums=False)
  return p.perplexity()


def _sub_probabilities(subject, pass_: Pass, positions: int,
                       budget_bytes: int):
  """P [k, V] of the first k positions (k capped by memory) and k."""
  w, b = device_head(subject)  # The Pass's copy of W: no new one.
  k = min(positions, pass_.tokens, position_cap(w.shape[0], budget_bytes))
  return probabilities(pass_.h[:k], w, b, subject.cfg.logit_softcap), k


def cumulative_probe(subject, pass_: Pass, positions: int = 1024,
                     budget_bytes: int = 1 << 28):
  """Seed 001 App. A / Fig. 4: mass of the top-m tokens, averaged over the
  first positions of the Pass (their count is returned)."""
  p, k = _sub_probabilities(subject, pass_, positions, budget_bytes)
  m_values = np.unique(np.geomspace(1, p.shape[1], 30).astype(int))
  cum, need, of_mean = head_stats.top_mass(p, m_values, 0.9)
  window = pass_.x.shape[1]
  per_window = [cum[i:i + window].mean(0) for i in range(0, k, window)]
  out = {"m": m_values.tolist(), "mean": cum.mean(0).tolist(),
         "std_over_windows": np.std(per_window, axis=0).tolist(),
         "positions": k, "V": int(p.shape[1]),
         "tokens_for_0.9_mean": float(need.mean()),
         "tokens_for_0.9_median": float(np.median(need)),
         # Seed 001 App. A's statistic: where the mean curve reaches 0.9.
         "tokens_for_0.9_of_mean_curve": of_mean,
         "nucleus": nucleus_summary(p, window)}
  return out, {"cumulative": plots.cumulative({subject.name: out})}


NUCLEUS_RANK = 1000  # App. A: "tokens beyond the top 1,000".


def nucleus_summary(p, window: int, rank: int = NUCLEUS_RANK) -> dict:
  """App. A's conjecture on [k, V] probabilities: per top-p mass (0.9,
  0.95), the nucleus's median and largest size and the positions whose
  nucleus reaches past rank `rank`; the mass past that rank (mean, max)."""
  rank = min(rank, p.shape[1])
  got = head_stats.nucleus(p, (0.9, 0.95), rank)
  out = {"rank": rank, "positions": int(p.shape[0]), "window": int(window),
         "past_rank_mass_mean": float(got["past_rank"].mean()),
         "past_rank_mass_max": float(got["past_rank"].max())}
  for mass, sizes in got["sizes"].items():
    out[f"p{mass:g}"] = {"median": float(np.median(sizes)),
                         "max": int(sizes.max()),
                         "over_rank": int((sizes > rank).sum())}
  return out


def natural_targets(subject, pass_: Pass, positions: int = 512,
                    keep: int = 512, budget_bytes: int = 1 << 28):
  """App. D: the model's own next-token distributions, top `keep` of each
  of the first positions, descending [k, keep]."""
  p, _ = _sub_probabilities(subject, pass_, positions, budget_bytes)
  keep = min(keep, p.shape[1])
  top = -np.partition(-p, keep - 1, axis=1)[:, :keep]
  return -np.sort(-top, axis=1)


def rowstats_probe(w_vxd, label: str, seed: int = 0):
  """Seed 001 App. E / Fig. 7: trained rows vs a random matrix."""
  out = head_stats.summary(w_vxd, seed)
  hist = head_stats.row_histograms(w_vxd, seed)
  out["histograms"] = hist
  return out, {"rowstats": plots.rowstats({label: hist})}


def quantisation(path: str, w_vxd) -> dict | None:
  """For a head stored as Q8_0 in the GGUF at `path` (both offline LLMs'):
  the row norms' relative spread against what the storage can do to them,
  per row relative to its norm: the worst case (gguf_file.row_error_bounds)
  and the standard deviation rounding adds (gguf_file.row_norm_noise).
  None for other storage."""
  t = gguf_file.head_tensor(path)
  bound = gguf_file.row_error_bounds(t)
  if bound is None:
    return None
  norms = head_stats.row_norms(w_vxd)
  noise = gguf_file.row_norm_noise(t, w_vxd)
  spread = float(norms.std() / norms.mean())
  added = float(np.sqrt(np.mean(noise**2)))
  return {"type": t.tensor_type.name, "norm_spread": spread,
          "bound_rel_median": float(np.median(bound / norms)),
          "noise_rel_rms": added,
          # If the rounding is independent of the rows, the stored spread^2
          # is the unquantised spread^2 plus the noise^2.
          "unquantised_spread_est": float(np.sqrt(max(spread**2 - added**2,
                                                      0.0)))}


def _sanity(ctx: Context):
  s = ctx.settings
  out, figs = sanity_probe(ctx.subject, ctx.own, s.prompt, s.new_tokens)
  if ctx.ood is not None:  # The comparison: modern prose too.
    out.update(perplexity_ood=ctx.ood.perplexity(),
               perplexity_prose=prose_perplexity(ctx.subject))
  return out, figs


def _rowstats(ctx: Context):
  w = np.asarray(ctx.subject.head()[0])
  out, figs = rowstats_probe(w, ctx.subject.name, ctx.settings.seed)
  if ctx.model.partition(":")[0] in zoo.NAMES + ("gguf",):
    out["quantisation"] = quantisation(loaders.path_of(ctx.model)[1], w)
  return out, figs


def _norm_spread(n) -> str:
  t, r = n["rowstats"]["trained"], n["rowstats"]["random"]
  return (f"{fmt(t['norm_std'] / t['norm_mean'])} "
          f"({fmt(r['norm_std'] / r['norm_mean'], 2)})")


def _quantisation_cell(n) -> str:
  q = n["rowstats"].get("quantisation")
  if not q:
    return "-"
  return (f"{fmt(q['noise_rel_rms'])} ({fmt(q['bound_rel_median'])}); "
          f"unquantised ~{fmt(q['unquantised_spread_est'])}")


SANITY = Probe(
    "sanity", "pass", _sanity, share=0.03, rows=(
        Row("sanity", "perplexity, probed text", "",
            lambda n: fmt(n["sanity"]["perplexity"], 4)),
        Row("sanity", "perplexity, modern prose (python_docs / paragraph)",
            "a 135M-270M LM on modern prose: ~10-30",
            lambda n: f"{fmt(n['sanity']['perplexity_ood'], 3)} / "
                      f"{fmt(n['sanity']['perplexity_prose'], 3)}"),
        Row("sanity", "top-1 accuracy, probed text", "",
            lambda n: fmt(n["sanity"]["top1_accuracy"])),
        Row("sanity", "greedy continuation", "",
            lambda n: repr(n["sanity"]["continuation"].strip())[:80])))

CUMULATIVE = Probe(
    "cumulative", "pass",
    lambda ctx: cumulative_probe(ctx.subject, ctx.own,
                                 ctx.settings.cumulative_positions),
    figures=(Figure("cumulative", "Mean probability mass of the m most "
                    "likely tokens (seed 001 App. A / Fig. 4).",
                    plots.cumulative),),
    share=0.02, rows=(
        Row("seed001", "App. A: tokens for 0.9 of the mass: where the mean "
            "curve reaches it (per position: median / mean)",
            "~200 of 50257 (seed 001 App. A, GPT-2)",
            lambda n: f"{n['cumulative']['tokens_for_0.9_of_mean_curve']:.0f}"
                      f" ({n['cumulative']['tokens_for_0.9_median']:.0f} / "
                      f"{n['cumulative']['tokens_for_0.9_mean']:.0f}) of "
                      f"{n['subject']['V']}"),))

ROWSTATS = Probe(
    "rowstats", "subject", _rowstats,
    figures=(Figure("rowstats", "Row norms and pairwise cosines of each head "
                    "against a Gaussian matrix of its shape (seed 001 App. "
                    "E / Fig. 7).", of_key(plots.rowstats, "histograms")),),
    share=0.02, rows=(
        Row("seed001", "App. E: row-norm std / mean, trained (Gaussian)",
            "trained rows vary more in norm, mostly positive cosines "
            "(seed 001 App. E)", _norm_spread),
        Row("seed001", "App. E: row-norm spread Q8_0 storage adds (worst "
            "case)", "", _quantisation_cell),
        Row("seed001", "App. E: mean cosine of row pairs, trained "
            "(Gaussian)", "",
            lambda n: f"{fmt(n['rowstats']['trained']['cos_mean'])} "
                      f"({fmt(n['rowstats']['random']['cos_mean'], 2)})")))
