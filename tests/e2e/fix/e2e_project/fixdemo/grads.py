import torch


@torch.compile
def loss(x, w):
    w.requires_grad_()
    return (x * w).sum()


def run():
    w = torch.tensor([1.0, 2.0, 3.0])
    loss(torch.tensor([3.0, 4.0, 5.0]), w).backward()
    return w.grad
