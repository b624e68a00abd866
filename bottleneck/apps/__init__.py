"""The absl binaries of `bottleneck` (flags in, one call out).

Each is started through the module users already call, e.g.
`python -m bottleneck.bounds`, whose `__main__` hook runs `<name>_main.run()`.
"""
