import torch


def f(x):
    print("first")  # BREAK
    print("second")
    return x
