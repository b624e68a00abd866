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
# # Train a small GPT (seed 004's Model 1) and read its completions
#
# The thesis trains eight nanoGPT-style models on TinyStories (Table 4.1).
# Here Model 1's architecture (1 head, 4 layers, width 64) trains briefly on
# the generated story corpus that ships with the code (byte-level tokens),
# so the notebook runs anywhere; point `data.source` at TinyStories and drop
# `,cpu` for the real experiment.

# %% tags=["parameters"]
import os
import tempfile

SMALL = os.environ.get("BOTTLENECK_SMALL", "0") == "1"
STEPS = 30 if SMALL else 600
WORKDIR = os.path.join(tempfile.mkdtemp(), "model1")

# %%
import json

import jax
import matplotlib.pyplot as plt

from configs import thesis
from train.training import completions, plots, trainer
from train.models import build, weights

config = thesis.get_config("model1,cpu")
config.train.steps = STEPS
config.train.warmup = max(1, STEPS // 10)
config.eval_every = config.checkpoint_every = max(1, STEPS // 5)
config.log_every = max(1, STEPS // 30)
print("parameters of the full-size Model 1 (GPT-Neo vocabulary):",
      weights.param_count(weights.expected_shapes(build.model_config(
          thesis.get_config("model1").model))))

# %%
summary = trainer.train_and_evaluate(config, WORKDIR)
print(summary)

# %% [markdown]
# ## Training and validation loss

# %%
rows = [json.loads(line) for line in open(f"{WORKDIR}/metrics.jsonl")]
plots.curves_figure({"Model 1 (byte-level)": rows})
plt.show()

# %%
fig, ax = plt.subplots(figsize=(5, 3))
ax.plot([r["step"] for r in rows if "lr" in r],
        [r["lr"] for r in rows if "lr" in r])
ax.set_xlabel("step")
ax.set_ylabel("learning rate")
ax.set_title("warm-up + cosine schedule")
plt.show()

# %% [markdown]
# ## What the head predicts next
#
# The softmax over the LM head's logits after a prompt: the top tokens and
# the mass they carry (seed 001's question in miniature).

# %%
import numpy as np

params, gpt, cfg, tok, _ = completions.load_run(WORKDIR)
prompt = tok.encode("Once upon a time, there was a big cat named ")
probs = np.asarray(jax.nn.softmax(gpt.apply(params, np.array([prompt]))[0,
                                                                          -1]))
top = np.argsort(-probs)[:15]
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(range(15), probs[top])
ax.set_xticks(range(15), [repr(tok.decode([int(t)])) for t in top],
              rotation=60, fontsize=7)
ax.set_ylabel("p(next token)")
ax.set_title(f"top-15 carry {probs[top].sum():.2f} of the mass")
plt.show()

# %% [markdown]
# ## Story completions (seed 004 §4.2)
#
# Held-out stories are split at a random token; the model continues the
# prompt greedily.

# %%
from IPython.display import Markdown, display

display(Markdown(completions.story_table([WORKDIR], 4, [20])))
print(completions.continue_text(WORKDIR, "Once upon a time, there was a",
                                60, temperature=0.8, top_p=0.9))
