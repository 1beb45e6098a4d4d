import torch


def f(x):
    x = x + 1
    return x * 2
