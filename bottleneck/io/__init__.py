"""I/O around the pure math: CLI formatting, weight files, figures.

`cli` (int lists, output formats, progress lines, the absl entry point),
`hf` (HF folders: config.json and safetensors, single or sharded),
`gguf_file` (llama.cpp GGUF files: metadata, dequantised tensors),
`matrices` (OPMs from random draws and weight files), `plots` (matplotlib).
The math modules of `bottleneck` never import these, except the progress
meter of the long-running drivers.
"""
