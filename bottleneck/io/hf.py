"""Hugging Face model folders: config.json plus safetensors weights.

One reader for every loader of the project (OPMs in `matrices`, GPT-2
weights in `train.hf_gpt2`): a single `model.safetensors` or a sharded
`model.safetensors.index.json`. Nothing is unpickled.
"""

from __future__ import annotations

import json
import os


def read_config(directory: str, arg: str) -> dict:
  """config.json of an HF folder; `arg` names the flag in errors."""
  path = os.path.join(directory, "config.json")
  if not os.path.isfile(path):
    raise ValueError(f"`{arg}` {directory!r} needs a config.json.")
  config = read_json(path, arg)
  if not isinstance(config, dict):
    raise ValueError(f"`{arg}` {path!r} must hold a JSON object; got a "
                     f"{type(config).__name__}.")
  return config


def read_json(path: str, arg: str):
  """A JSON file; a parse error names the file and the line."""
  try:
    with open(path) as f:
      return json.load(f)
  except json.JSONDecodeError as e:
    raise ValueError(f"`{arg}` {path!r} is not valid JSON: {e}.") from None


def has_weights(directory: str) -> bool:
  return any(os.path.isfile(os.path.join(directory, f)) for f in (
      "model.safetensors", "model.safetensors.index.json"))


def weight_files(directory: str, arg: str) -> dict[str | None, str]:
  """Tensor name -> safetensors file; {None: file} for a single file."""
  single = os.path.join(directory, "model.safetensors")
  index = os.path.join(directory, "model.safetensors.index.json")
  if os.path.isfile(single):
    return {None: single}
  if os.path.isfile(index):
    weight_map = read_json(index, arg)
    if not isinstance(weight_map, dict) or not isinstance(
        weight_map.get("weight_map"), dict):
      raise ValueError(f"`{arg}` {index!r} has no 'weight_map' object.")
    weight_map = weight_map["weight_map"]
    return {name: os.path.join(directory, file)
            for name, file in weight_map.items()}
  raise ValueError(f"`{arg}` {directory!r} has neither model.safetensors "
                   "nor model.safetensors.index.json.")


def tensor_names(directory: str, arg: str) -> list[str]:
  """Every tensor name of the folder, from the headers (nothing read)."""
  from safetensors import safe_open  # pylint: disable=g-import-not-at-top
  files = weight_files(directory, arg)
  if None not in files:  # A sharded index lists them.
    return list(files)
  try:
    with safe_open(files[None], framework="np") as f:
      return list(f.keys())
  except Exception as e:  # safetensors raises its own error types.
    raise ValueError(f"`{arg}` {files[None]!r} is not a readable safetensors "
                     f"file: {e}.") from None


def iter_tensors(directory: str, arg: str):
  """(name, array) of every tensor of the folder, one at a time (a model is
  never held twice while it is converted)."""
  from safetensors import safe_open  # pylint: disable=g-import-not-at-top
  for path in sorted(set(weight_files(directory, arg).values())):
    try:
      with safe_open(path, framework="np") as f:
        for name in f.keys():
          yield name, f.get_tensor(name)
    except Exception as e:  # safetensors raises its own error types.
      raise ValueError(f"`{arg}` {path!r} is not a readable safetensors "
                       f"file: {e}.") from None

