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
# runs of train/report/ (training_runs, lowrank, spamlang), which XLA's
# compile cache can share).
STEPS = 16 if SMALL else 400  # Training steps of the probe subject.
WINDOWS = 4 if SMALL else 64  # Text windows (x 128 tokens) probed.
SWEEP_STEPS = 10 if SMALL else 250  # Steps of each low-rank / SpamLang run.
# Shakespeare texts the subject trains on (file-name globs; '' = all 77).
PLAYS = "hamlet*" if SMALL else ""
ROOT = tempfile.mkdtemp()

# %%
import matplotlib.pyplot as plt

from IPython.display import display

from ml_collections import config_dict

from train.probes import forward, gradient, subjects
from train.report import claim, lowrank, spamlang, training_runs

# The main job's probe subject: Model 1 (width 64) on Shakespeare, 4096-token
# BPE, trained under ROOT/runs/.
subject = subjects.load_subject(
    workdir=training_runs.probe_model_run(STEPS, ROOT, PLAYS))
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
# One llama-like backbone (width 256) on Hamlet with a 4096-token BPE; the
# head W = A B has rank D = 8 or 256 (D/V = 1/512 or 1/16).

# %%
sweep = config_dict.ConfigDict(dict(
    ranks=(8, 256), seeds=(0,), steps=SWEEP_STEPS, doublings=0, flat=0.01,
    plays="hamlet*", cpu=True))
lowrank_rows = lowrank.sweep(sweep, ROOT)
print(claim.markdown(lowrank.verdict(lowrank_rows)))
display(lowrank.curves_figure(lowrank_rows))

# %% [markdown]
# ## SpamLang (Fig. 14 in miniature)
#
# Each sequence repeats its first token: predicting the current token is all
# there is to learn, yet a rank-8 head learns it worse as V grows while the
# full-rank head (D = 0 below) learns it at every V.

# %%
rows = spamlang.runs((64,) if SMALL else (256, 1024, 4096), (8, 0),
                     SWEEP_STEPS, ROOT)
print(claim.markdown(spamlang.verdict(rows)))
display(spamlang.vocab_figure(rows))
