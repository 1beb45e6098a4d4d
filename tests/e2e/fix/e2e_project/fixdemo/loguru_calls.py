import torch
from loguru import logger


def body(x):
    x = x.sin()
    logger.info("body done {}", tuple(x.shape))
    return x * 2


def run():
    torch.manual_seed(0)
    return torch.compile(body)(torch.randn(4))
