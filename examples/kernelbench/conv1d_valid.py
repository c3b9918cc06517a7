"""A 1-D convolution without padding (stride 1), with bias: the output is shorter by kernel_size - 1."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv(x)


batch = 8
in_channels = 16
out_channels = 32
length = 4096
kernel_size = 5


def get_inputs():
    return [torch.randn(batch, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
