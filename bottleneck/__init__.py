"""bottleneck: what the softmax bottleneck of an LM head does and does not limit.

Pure functions on arrays (no training loops, no file formats beyond what a
function needs). See WORKSPACE.md for the map from each paper's equations
and figures to the modules here.
"""

__version__ = "0.1.0"
