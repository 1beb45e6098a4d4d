import torch as T
from torch import nn


class Embed(nn.Module):
    def forward(self, idx):
        # ids come from the tokenizer
        if (idx >= self.table.shape[0]).any():  # BREAK
            raise IndexError(
                "token id out of range"
            )
        return self.table[idx]
