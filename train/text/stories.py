"""Generated stories: the tests' corpus and the default config's (data.source =
synthetic_stories); needs nothing from outside. Not a stand-in for
TinyStories: the thesis runs read real text (configs/thesis.py).
"""

from __future__ import annotations

import numpy as np

# Bump when synthetic_stories draws differently: the token caches of
# the old stories then stop matching (2: draws per category).
VERSION = 2

_NAMES = ["Lily", "Tom", "Mia", "Ben", "Sue", "Max", "Anna", "Sam", "Zoe",
          "Leo", "Ella", "Jack"]
_ANIMALS = ["cat", "dog", "bird", "bunny", "bear", "fox", "frog", "duck",
            "mouse", "fish", "lion", "owl"]
_THINGS = ["ball", "kite", "box", "cake", "book", "hat", "tree", "boat",
           "car", "flower", "toy", "shoe", "cup", "star", "rock", "drum"]
_ADJS = ["big", "small", "red", "happy", "sad", "shiny", "soft", "kind",
         "funny", "brave", "old", "new"]
_VERBS = ["play", "run", "jump", "sing", "dance", "read", "swim", "hide",
          "draw", "bake"]
_PLACES = ["park", "garden", "forest", "house", "beach", "school", "river",
           "hill"]


def synthetic_stories(n: int, seed: int = 0) -> list[str]:
  """Short stories from templates, words drawn Zipf(1.1) per category.

  Names recur within a story, so a model can learn to copy them; the word
  frequencies are Zipfian like natural text.
  """
  rng = np.random.default_rng(seed)

  def pick(words):  # n draws at once (not one Python call per story).
    p = 1.0 / np.arange(1, len(words) + 1) ** 1.1
    return np.asarray(words)[rng.choice(len(words), n, p=p / p.sum())]

  names, friends = pick(_NAMES), pick(_NAMES)
  animals, things, places = pick(_ANIMALS), pick(_THINGS), pick(_PLACES)
  adjs, verbs, found = pick(_ADJS), pick(_VERBS), pick(_ADJS)
  stories = []
  for name, friend, animal, thing, place, adj, verb, adj2 in zip(
      names, friends, animals, things, places, adjs, verbs, found):
    stories.append(
        f"Once upon a time, there was a {adj} {animal} named {name}. "
        f"{name} liked to {verb} in the {place}. One day, {name} found a "
        f"{adj2} {thing}. {name} said, \"I will show the {thing} to "
        f"{friend}!\" {friend} was very happy. They went to {verb} with the "
        f"{thing} all day. The {animal} and {friend} were best friends. "
        "The end.")
  return stories
