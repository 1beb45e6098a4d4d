import torch
from torch._dynamo import graph_break as gb


def f(x):
    x = x + 1
    gb()  # BREAK
    return x * 2


def g(x):
    gb()
    return x
