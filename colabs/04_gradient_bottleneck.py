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
# The small setting trains what the main job's tiny scale trains (the same
# runs of train/training/experiments.py, which XLA's compile cache can share).
STEPS = 16 if SMALL else 400  # Training steps of the probe subject.
WINDOWS = 4 if SMALL else 64  # Text windows (x 128 tokens) probed.
SWEEP_STEPS = 10 if SMALL else 150  # Steps of each low-rank / SpamLang run.
# Shakespeare texts the subject trains on (file-name globs; '' = all 77).
PLAYS = "hamlet*" if SMALL else ""
ROOT = tempfile.mkdtemp()

# %%
import matplotlib.pyplot as plt

from IPython.display import display

from train.probes import forward, gradient, subjects
from train.training import experiments, plots

# The main job's probe subject: Model 1 (width 64) on Shakespeare, 4096-token
# BPE, trained under ROOT/runs/.
subject = subjects.load_subject(
    workdir=experiments.probe_model_run(STEPS, ROOT, PLAYS))
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
runs = experiments.lowrank_runs((2, 64) if SMALL else (2, 8, 64),
                                SWEEP_STEPS, ROOT)  # D -> metrics rows.
plots.curves_figure({f"D={d}": rows for d, rows in runs.items()},
                    "Low-rank LM heads")
plt.show()

# %% [markdown]
# ## SpamLang (Fig. 14 in miniature)
#
# Each sequence repeats its first token: predicting the current token is all
# there is to learn, yet a rank-2 head learns it badly as V grows.

# %%
rows = experiments.spamlang_runs((32,) if SMALL else (32, 256, 2048),
                                 (2, 64), SWEEP_STEPS, ROOT)
fig, ax = plt.subplots(figsize=(5, 3.5))
for d in (2, 64):
  ax.plot([r["V"] for r in rows if r["D"] == d],
          [r["final_val_loss"] for r in rows if r["D"] == d], "o-",
          label=f"D={d}")
ax.set_xscale("log")
ax.set_xlabel("vocabulary size V")
ax.set_ylabel("final validation loss (nats)")
ax.set_title("SpamLang: a rank-2 head vs a full-rank one")
ax.legend()
plt.show()
