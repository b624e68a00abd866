"""The top-m selectability LP of seed 001, Section 6, as small modules.

The algorithm (JAX):
  instances     token subsets, targets and thresholds; padding to a batch
  rotation      the matrix prepared once (normalised, rotated)
  admm_state    the solver's settings, problem and state; init
  admm_step     one ADMM iteration of one instance
  admm          the batched solver: update, run, refill (device arrays)
Certification (float64, numpy; nothing from the solver is trusted):
  enclosure     rigorous enclosures of the checks' products
  facts         a matrix's facts for the checks, computed once
  polish        candidates from a rough iterate (vertex, projection, dual)
  certificates  the float64 checks of every verdict
  verdicts      which checks a nomination gets, in which order (the policy)
  bracket       certified brackets on t* (solve mode)
  exact         HiGHS, the exact reference and fallback
The driver:
  driver        one call: check and scale A, split off special subsets,
                stream the rest with host checks, certified records
  stream        continuous batching of many instances over a fixed batch
  host_checks   the host's checks of the stream's running slots: their
                first age, their BLAS threads, the callbacks
  chains, chain_feed, transitions
                nested subsets along m: verdicts carried along a chain, the
                order chains run in, where their transitions lie
  finish        an exact interior-point finish for slow instances
  mehrotra      the interior point's step, shared by finish and ipm
  records       one instance's record, from claim to certified verdict
Accelerator-only speed (the driver imports placement only where a solve
may send work to a device, and device_checks and ipm only where it does: a
CPU solve never loads them, and runs with this layer deleted):
  placement     whether the checks' products and the finish's interior
                point go to the device
  precompile    the stream's programs compiled ahead, beside the host's
                preparation of A
  device_checks, device_kernels
                the checks' largest products on the LP's device
  ipm           the finish's interior point on a device

`bottleneck.topm` is the front (solve: driver.solve with keyword
arguments; sweep(s), summarize, m_star_search) and the binary
`python -m bottleneck.topm`.
"""
