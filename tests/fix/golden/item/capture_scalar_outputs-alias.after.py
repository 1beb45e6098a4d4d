#!/usr/bin/env python
"""Module docstring."""
from __future__ import annotations

import torch as T
T._dynamo.config.capture_scalar_outputs = True


def scale(x):
    n = x.max().item()  # BREAK
    return x / n
