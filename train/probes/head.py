"""Seed 001 App. A, D and E on a trained head, and the sanity check.

  sanity_probe      is the model loaded right? perplexity and top-1
                    accuracy over the Pass, a greedy continuation
  cumulative_probe  App. A / Fig. 4: mass of the top-m tokens per position
  natural_targets   App. D: the model's own next-token distributions (top
                    `keep`) as prescribed probabilities for the LP
  rowstats_probe    App. E / Fig. 7: row norms and cosines vs random
  quantisation      what a GGUF's Q8_0 storage can do to the row norms
"""

from __future__ import annotations

import numpy as np

from bottleneck import head_stats
from bottleneck.io import gguf_file
from train.models import generate
from train.probes import plots
from train.probes.forward import (Pass, device_head, position_cap,
                                  probabilities)


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
         "tokens_for_0.9_of_mean_curve": of_mean}
  return out, {"cumulative": plots.cumulative({subject.name: out})}


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
