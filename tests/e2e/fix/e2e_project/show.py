"""A `run:` entrypoint whose output is compared (verify_output): the print inside the compiled
function is part of it, so guarding the print changes the output; printing through the
graph keeps it."""

import torch


def step(x):
    x = x + 1
    print("step done")
    return x * 2


if __name__ == "__main__":
    out = torch.compile(step)(torch.ones(4))
    print("result", out.tolist())  # outside the compiled region: no break, never touched
