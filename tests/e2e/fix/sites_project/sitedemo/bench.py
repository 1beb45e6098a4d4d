"""One of two entrypoints compiling the shared model: a `call:` target."""

import torch

from sitedemo.shared import Model, batch


def forward_once():
    with torch.no_grad():
        return torch.compile(Model())(batch())
