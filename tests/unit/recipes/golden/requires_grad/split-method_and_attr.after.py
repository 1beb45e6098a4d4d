import torch


class Trainer:
    def step(self, x, w, /, *rest, scale=1.0, **options):
        """Forward and loss."""
        # gradients for w
        w.requires_grad = True  # BREAK
        return self._step_compiled(x, w, *rest, scale=scale, **options)

    @torch.compile(fullgraph=False)
    def _step_compiled(self, x, w, /, *rest, scale=1.0, **options):
        return ((x * w).sum() * scale, rest, options)
