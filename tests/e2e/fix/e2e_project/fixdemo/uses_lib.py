import torch
from thirdlib import Scaler


def run():
    return torch.compile(Scaler())(torch.ones(3))
