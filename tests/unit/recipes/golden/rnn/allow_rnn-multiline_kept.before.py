import torch
from torch import nn


class Codec(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 8, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0] + x


def encode(batches):
    codec = torch.compile(  # BREAK
        Codec().eval(),
        dynamic=False,  # shapes fixed per batch
    )
    codec.train(False)
    return [codec(x) for x in batches]
