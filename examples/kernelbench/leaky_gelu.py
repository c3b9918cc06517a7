"""GELU (tanh form) followed by a leaky ReLU, elementwise."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.leaky_relu(F.gelu(x, approximate="tanh"), negative_slope=0.05)


batch_size = 32
dim = 8192


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
