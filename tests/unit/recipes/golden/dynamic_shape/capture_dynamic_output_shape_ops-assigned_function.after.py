from torch import compile as compile_fn
import torch


def positive_sum(x):
    return x[x > 0].sum()


fast_sum = torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)(compile_fn(positive_sum))  # BREAK
