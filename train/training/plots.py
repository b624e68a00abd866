"""Training curves and completion tables."""

from __future__ import annotations

import matplotlib.pyplot as plt

from bottleneck.io import plots


def curves_figure(runs: dict, title: str = "Training curves"):
  """runs: label -> metrics.jsonl rows. Train loss solid, val loss dashed."""
  fig, ax = plt.subplots(figsize=(6.5, 4))
  for i, (label, rows) in enumerate(runs.items()):
    tr = [(r["step"], r["loss"]) for r in rows if "loss" in r]
    va = [(r["step"], r["val_loss"]) for r in rows if "val_loss" in r]
    if tr:
      ax.plot(*zip(*tr), color=f"C{i}", lw=1, label=f"{label} train")
    if va:
      ax.plot(*zip(*va), "o--", color=f"C{i}", ms=3, label=f"{label} val")
  ax.set_xlabel("step")
  ax.set_ylabel("cross entropy (nats/token)")
  ax.set_title(title)
  ax.legend(fontsize=7)
  return fig


def save_curves(rows, path: str) -> str:
  return plots.save(curves_figure({"run": rows}), path)
