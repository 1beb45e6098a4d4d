#!/usr/bin/env python
"""Module docstring."""
from __future__ import annotations

import functools

import torch as T


# compiled once, reused by every caller
@functools.lru_cache
@T._dynamo.config.patch(capture_scalar_outputs=True)
@T.compile(fullgraph=False)  # BREAK
def scale(x):
    n = x.max().item()
    return x / n
