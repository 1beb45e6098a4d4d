from copy import deepcopy

import torch


class Keeper(torch.nn.Module):
    def forward(self, x):
        kept = deepcopy(x)  # BREAK
        x.add_(1)
        return x, kept
