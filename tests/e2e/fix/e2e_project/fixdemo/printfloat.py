import torch


def body(v):
    for _ in range(2):
        v = v + 1
        print("step", float(v.mean()))
    return v * 2


def run():
    return torch.compile(body)(torch.ones(4))
