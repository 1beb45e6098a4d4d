import torch
from loguru import logger as log


class Trainer:
    def step(self, batch):
        for x in batch:
            loss = (x * 2).mean()
            # one line per batch element
            if not torch.compiler.is_compiling():
                log.info(  # BREAK
                    "loss {}",
                    float(loss),  # the value, not the tensor
                )
        return loss
