import random

import torch


@torch.compile
def step(x):
    print("noisy: step")
    return x * 2


def run():
    # Python's random is seeded from the OS in every process: each run returns other numbers
    return step(torch.full((3,), random.random()))
