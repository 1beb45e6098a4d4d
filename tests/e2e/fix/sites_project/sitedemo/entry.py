"""A `call:` target compiling a model of another module."""

import torch

from sitedemo import target


def run():
    with torch.no_grad():
        return torch.compile(target.Model())(target.batch())
