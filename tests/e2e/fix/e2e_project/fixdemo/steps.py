import logging

import torch

log = logging.getLogger(__name__)


def steps(x):
    for i in range(3):
        x = x * 2 + 1
        log.debug("step %d", i)  # a break inside a loop: the whole frame runs eagerly
    print("steps done")  # hidden until the frame compiles
    return x.sin()


def run():
    return torch.compile(steps)(torch.arange(4.0))
