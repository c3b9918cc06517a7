"""Swish scaled by a constant: y = scale * x * sigmoid(x)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return self.scale * x * torch.sigmoid(x)


n = 1 << 20
scale = 1.75


def get_inputs():
    return [torch.randn(n)]


def get_init_inputs():
    return [scale]
