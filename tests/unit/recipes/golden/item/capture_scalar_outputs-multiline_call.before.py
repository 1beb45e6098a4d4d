import torch

from .model import Net


def run(x):
    with torch.no_grad():
        return torch.compile(  # BREAK
            Net(),
            dynamic=False,  # shapes never change here
        )(x)
