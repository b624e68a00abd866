# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The LM head is a gradient bottleneck (seed 002)
#
# The loss gradient with respect to the logits, G = softmax(H W^T + b) -
# onehot(y), lives in R^V; the backbone only receives G W, so the part of G
# in ker(W^T) is lost (eq. 10). We train a small GPT on Shakespeare with a
# 4096-token BPE (width 64, so D/V = 1/64 as in real LMs) and measure:
#
# * the destroyed fraction of the gradient norm and the cosine (App. D),
# * full vs projected coefficient profiles (Fig. 7),
# * the rank of G as the batch grows (Fig. 2),
# * the loss decrease along G vs along what H can do (Fig. 8),
# * a low-rank head sweep and SpamLang (Figs. 1, 14) in miniature.

# %% tags=["parameters"]
import os
import tempfile

SMALL = os.environ.get("BOTTLENECK_SMALL", "0") == "1"
STEPS = 20 if SMALL else 400  # Training steps of the probe subject.
WINDOWS = 4 if SMALL else 64  # Text windows (x 128 tokens) probed.
SWEEP_STEPS = 10 if SMALL else 150  # Steps of each low-rank / SpamLang run.
ROOT = tempfile.mkdtemp()

# %%
import matplotlib.pyplot as plt
import numpy as np

from IPython.display import display

from configs import lowrank, spamlang, thesis
from train.probes import forward, gradient, subjects
from train.training import plots, trainer

cfg = thesis.get_config("model1,cpu")
cfg.data.source, cfg.data.tokenizer, cfg.model.vocab_size = (
    "shakespeare", "bpe:4096", 4096)
cfg.train.steps, cfg.train.warmup = STEPS, max(1, STEPS // 10)
cfg.eval_every = cfg.checkpoint_every = cfg.log_every = max(1, STEPS // 4)
trainer.train_and_evaluate(cfg, f"{ROOT}/probe")
subject = subjects.load_subject(workdir=f"{ROOT}/probe")
x, y = subjects.windows(subject, "", WINDOWS)
pass_ = forward.run(subject, x, y)  # One forward: H and the head's sums.
numbers, figures = gradient.gradient_probe(subject, pass_)
plt.close("all")  # Shown one by one below.
print({k: numbers[k] for k in ("D_over_V", "tokens", "norm_ratio",
                               "squared_ratio", "mean_cosine")})

# %% [markdown]
# `norm_ratio` is eq. (10) (the paper's 95-99%); `squared_ratio` its square.
# Per token, the destroyed share sits just below what a random direction
# would lose, sqrt(1 - D/V):

# %%
display(figures["gradient_destroyed"])

# %% [markdown]
# ## Fig. 7: what the backbone sees

# %%
display(figures["gradient_profiles"])

# %% [markdown]
# ## Fig. 2 and Fig. 8

# %%
display(figures["gradient_rank"])

# %%
display(figures["gradient_efficiency"])

# %% [markdown]
# ## A low-rank head sweep (Fig. 1 in miniature)
#
# Same backbone, head W = A B of rank D, byte-level generated stories.

# %%
runs = {}
for d in ((2, 64) if SMALL else (2, 8, 64)):
  c = lowrank.get_config(f"D={d},cpu")
  c.train.steps, c.train.warmup = SWEEP_STEPS, max(1, SWEEP_STEPS // 10)
  c.eval_every = c.checkpoint_every = c.log_every = max(1, SWEEP_STEPS // 5)
  trainer.train_and_evaluate(c, f"{ROOT}/lowrank{d}")
  runs[f"D={d}"] = trainer.MetricsLog(f"{ROOT}/lowrank{d}/metrics.jsonl",
                                      10**9, True).rows()
plots.curves_figure(runs, "Low-rank LM heads")
plt.show()

# %% [markdown]
# ## SpamLang (Fig. 14 in miniature)
#
# Each sequence repeats its first token: predicting the current token is all
# there is to learn, yet a rank-2 head learns it badly as V grows.

# %%
rows = []
for v in ((32,) if SMALL else (32, 256, 2048)):
  for d in (2, 64):
    arg = f"V={v},cpu" if d == 64 else f"V={v},D={d},cpu"
    c = spamlang.get_config(arg)
    c.train.steps, c.train.warmup = SWEEP_STEPS, max(1, SWEEP_STEPS // 10)
    c.eval_every = c.checkpoint_every = c.log_every = SWEEP_STEPS
    out = trainer.train_and_evaluate(c, f"{ROOT}/spam{v}_{d}")
    rows.append((v, d, out["final_val_loss"]))
fig, ax = plt.subplots(figsize=(5, 3.5))
for d in (2, 64):
  ax.plot([r[0] for r in rows if r[1] == d],
          [r[2] for r in rows if r[1] == d], "o-", label=f"D={d}")
ax.set_xscale("log")
ax.set_xlabel("vocabulary size V")
ax.set_ylabel("final validation loss (nats)")
ax.set_title("SpamLang: a rank-2 head vs a full-rank one")
ax.legend()
plt.show()
