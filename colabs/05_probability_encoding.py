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
# # Token probabilities in output embeddings (seed 003)
#
# Eq. (2): -log alpha_w ~ A_D . E_w + B_D, where alpha_w is the averaged
# next-token probability of token w over a detect set. We fit it by MLR on a
# small GPT's output embeddings, look at which directions carry it (Fig. 3),
# edit probabilities with Algorithm 1 (Table 2), remove dimensions by
# saliency (Fig. 6) and watch token frequency appear during training
# (Fig. 7).

# %% tags=["parameters"]
import os
import tempfile

SMALL = os.environ.get("BOTTLENECK_SMALL", "0") == "1"
# The small setting trains what the main job's tiny scale trains (the same
# run of train/report/training_runs.py, which XLA's compile cache can share).
STEPS = 16 if SMALL else 400
WINDOWS = 4 if SMALL else 64
# Shakespeare texts the subject trains on (file-name globs; '' = all 77).
PLAYS = "hamlet*" if SMALL else ""
ROOT = tempfile.mkdtemp()

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from bottleneck.io import cli
from train.probes import encoding, forward, frequency, pruning, subjects
from train.report import training_runs

# The main job's probe subject: Model 1 (width 64) on Shakespeare, 4096-token
# BPE, every checkpoint kept (the frequency probe reads them).
subject = subjects.load_subject(
    workdir=training_runs.probe_model_run(STEPS, ROOT, PLAYS))
# One forward per text: the probed text (detect and in-distribution halves)
# and an out-of-domain one.
own = forward.run(subject, *subjects.windows(subject, "", 2 * WINDOWS))
ood = forward.run(subject, *subjects.windows(subject, "synthetic_stories",
                                             WINDOWS))

# %% [markdown]
# ## Table 1 and Figs. 2-3: the log-linear fit

# %%
enc, figs = encoding.encoding_probe(subject, own)
plt.close("all")  # Shown one by one below.
print({k: round(v, 4) for k, v in enc.items() if isinstance(v, float)})
display(figs["encoding_mlr"])

# %%
display(figs["encoding_spearman"])

# %% [markdown]
# ## Algorithm 1: editing one token's probability
#
# The paper's direction comes from the MLR slopes; "A = -E[h]" uses eq. (1)
# directly. Both are exact only where eq. (2)'s approximations hold.

# %%
edit, efigs = encoding.edit_probe(subject, own, ood,
                                  tokens=3 if SMALL else 10)
plt.close("all")
display(Markdown(cli.format_records(edit["table"], "markdown")))
display(efigs["edit_scales"])

# %% [markdown]
# ## Fig. 6: removing output-embedding dimensions

# %%
prune, pfigs = pruning.prune_probe(subject, own, ood)
plt.close("all")
display(pfigs["prune"])

# %% [markdown]
# ## Fig. 7: frequency is encoded before the parameters converge

# %%
freq, ffigs = frequency.frequency_probe(subject)
plt.close("all")
display(ffigs["frequency"])
