import torch


def accumulate(x):
    for _ in range(3):
        x = x + 1
        torch._dynamo.graph_break()  # left in while debugging
    print("after the loop")  # hidden while the whole frame ran eagerly
    return x


def run():
    return torch.compile(accumulate)(torch.zeros(2))
