"""A training loop with a compiled step: `python train.py --steps 2`."""

import argparse
import copy
import os

import torch

from tinymodel.model import TinyNet, clip_grad, smooth


@torch.compile
def loss_fn(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    snapshot = copy.deepcopy(target)  # GB4198
    loss = ((out - snapshot) ** 2).mean()
    return clip_grad(loss)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()
    torch.manual_seed(int(os.environ.get("SEED", "0")))
    model = TinyNet()
    step = torch.compile(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    history = []
    for _ in range(args.steps):
        x, target = torch.randn(4, 5, 8), torch.randn(4, 4)
        loss = loss_fn(step(x), target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        history.append(out := loss.detach().reshape(1))
    print(f"final loss {float(out):.4f}")
    print(f"smoothed {torch.compile(smooth)(torch.stack(history)).tolist()}")


if __name__ == "__main__":
    main()
