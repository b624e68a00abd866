"""Multi-host start-up: jax.distributed, before any other JAX call.

Explicit flags (--coordinator_address, --num_processes, --process_id) win.
Without them, `cluster(os.environ)` reads the environment the way JAX's own
cluster detection (jax/_src/clusters) does, and where it describes a job of
more than one process, jax.distributed.initialize() is called with no
arguments (JAX then finds the coordinator, the process count and this
process's index itself):

  Cloud TPU on GKE    TPU_WORKER_HOSTNAMES or TPU_PROCESS_ADDRESSES listing
                      more than one host (GkeTpuCluster)
  TPU multislice      MEGASCALE_COORDINATOR_ADDRESS with MEGASCALE_NUM_SLICES
                      above 1
  SLURM               SLURM_JOB_ID, SLURM_STEP_NODELIST, SLURM_NTASKS,
                      SLURM_PROCID, SLURM_LOCALID all set (SlurmCluster: a
                      job step, `srun`) and SLURM_NTASKS above 1
  Open MPI            OMPI_MCA_orte_hnp_uri (OmpiCluster: `mpirun`) and
                      OMPI_COMM_WORLD_SIZE above 1

A one-process job of any of these (SLURM_NTASKS=1, a one-host TPU VM)
starts as a plain process. A Cloud TPU pod made on GCE (`gcloud compute
tpus tpu-vm create`) keeps its topology in the VM's metadata server, not in
the environment: its hosts form the pod through the TPU runtime without
this, and `--distributed` (`auto`, `yes`, `no`) forces jax.distributed
there (JAX then asks the metadata server), or keeps it off anywhere.

jax.distributed also starts JAX's preemption service: a SIGTERM (a
preemption notice) to any process becomes a step at which every process
stops and saves (train/training/interrupt.py).
"""

from __future__ import annotations

import os
from typing import Mapping

import jax

MODES = ("auto", "yes", "no")


def _count(env: Mapping[str, str], key: str) -> int:
  try:
    return int(env.get(key, ""))
  except ValueError:
    return 0


def cluster(env: Mapping[str, str]) -> str | None:
  """The multi-process job `env` describes ('tpu', 'slurm', 'ompi'), None
  for a single process: a pure function of the environment (see the module
  docstring for the variables read)."""
  hosts = env.get("TPU_PROCESS_ADDRESSES", env.get("TPU_WORKER_HOSTNAMES", ""))
  if len([h for h in hosts.split(",") if h.strip()]) > 1:
    return "tpu"
  if (env.get("MEGASCALE_COORDINATOR_ADDRESS") and
      _count(env, "MEGASCALE_NUM_SLICES") > 1):
    return "tpu"
  slurm = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS",
           "SLURM_PROCID", "SLURM_LOCALID")
  if all(k in env for k in slurm) and _count(env, "SLURM_NTASKS") > 1:
    return "slurm"
  if ("OMPI_MCA_orte_hnp_uri" in env and
      _count(env, "OMPI_COMM_WORLD_SIZE") > 1):
    return "ompi"
  return None


def plan(coordinator_address=None, num_processes=None, process_id=None,
         mode: str = "auto", env: Mapping[str, str] | None = None) -> str:
  """What `initialize` does, decided without doing it: 'explicit' (the
  flags), 'auto:<cluster>' (initialize() with no arguments), or 'none'.
  Bad flag combinations are a ValueError naming the flag."""
  if mode not in MODES:
    raise ValueError(f"`distributed` must be one of {MODES}; got {mode!r}.")
  if coordinator_address:
    if num_processes is None or process_id is None:
      raise ValueError("`num_processes` and `process_id` are required with "
                       "`coordinator_address`.")
    if num_processes < 1:
      raise ValueError(f"`num_processes` must be >= 1; got {num_processes}.")
    if not 0 <= process_id < num_processes:
      raise ValueError(f"`process_id` must be in [0, {num_processes}); got "
                       f"{process_id}.")
    if mode == "no":
      raise ValueError("`distributed`=no contradicts `coordinator_address`.")
    return "explicit"
  if num_processes is not None or process_id is not None:
    raise ValueError("`num_processes` and `process_id` need "
                     "`coordinator_address` (host:port of process 0).")
  if mode == "no":
    return "none"
  found = cluster(os.environ if env is None else env)
  if mode == "yes":
    return f"auto:{found or 'forced'}"
  return f"auto:{found}" if found else "none"


def initialize(coordinator_address=None, num_processes=None,
               process_id=None, mode: str = "auto") -> str:
  """Starts jax.distributed as `plan` decides; returns the plan."""
  decision = plan(coordinator_address, num_processes, process_id, mode)
  if decision == "none":
    return decision
  # CPU processes exchange collectives through gloo (GPUs/TPUs natively).
  jax.config.update("jax_cpu_collectives_implementation", "gloo")
  try:
    if decision == "explicit":
      jax.distributed.initialize(coordinator_address, num_processes,
                                 process_id)
    else:
      jax.distributed.initialize()
  except (ValueError, RuntimeError) as e:
    first = (str(e).strip().splitlines() or [""])[0][:200]
    flag = ("coordinator_address" if decision == "explicit" else
            "distributed")
    raise ValueError(f"`{flag}`: jax.distributed could not start "
                     f"({decision}): {first}") from None
  return decision
