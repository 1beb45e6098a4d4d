import torch
from torch._dynamo import graph_break


def f(x):
    x = x + 1
    graph_break()  # BREAK
    return x * 2
