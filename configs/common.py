"""One parser for the argument of `--config=configs/FILE.py:ARG`.

Modelled on big_vision's `bvcc.parse_arg`: ARG is a comma list of `key=value`
and bare `key` (a boolean set to True), e.g. `V=4096,D=32,cpu`. Values take
the type of their default; an unknown key is an error that lists the
allowed ones, so a typo never silently runs the default.
"""

from __future__ import annotations

from ml_collections import config_dict


def _convert(key: str, text: str, default):
  if isinstance(default, bool):
    if text.lower() in ("true", "1", "yes"):
      return True
    if text.lower() in ("false", "0", "no"):
      return False
    raise ValueError(f"config argument `{key}` must be true or false; got "
                     f"{text!r}.")
  try:
    return type(default)(text)
  except ValueError:
    raise ValueError(f"config argument `{key}` must be of type "
                     f"{type(default).__name__}; got {text!r}.") from None


def parse_arg(arg: str, positional: str | None = None,
              **defaults) -> config_dict.ConfigDict:
  """`arg` parsed against `defaults` (which also give each value's type).

  `positional` names the key that a bare token which is not a boolean key
  sets (e.g. thesis.py's 'model1' in 'model1,cpu'); it may be set once.
  """
  out = dict(defaults)
  seen = set()
  for token in (t.strip() for t in (arg or "").split(",")):
    if not token:
      continue
    key, has_value, text = token.partition("=")
    if not has_value and isinstance(defaults.get(key), bool):
      value = True
    elif not has_value and positional is not None and positional not in seen:
      key, value = positional, _convert(positional, token,
                                        defaults[positional])
    elif has_value and key in defaults:
      value = _convert(key, text, defaults[key])
    else:
      raise ValueError(
          f"config argument {token!r} in {arg!r} is not understood; allowed "
          f"keys: {', '.join(sorted(defaults))} (as key=value"
          + (f"; a bare value sets `{positional}`" if positional else "")
          + "; a bare name sets a boolean key).")
    if key in seen:
      raise ValueError(f"config argument `{key}` is given twice in {arg!r}.")
    seen.add(key)
    out[key] = value
  return config_dict.ConfigDict(out)
