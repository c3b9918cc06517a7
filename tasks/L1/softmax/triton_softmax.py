# A row softmax in Triton: one program per row. The first loop keeps a running maximum and a
# running sum of exp(x - max) over chunks of BLOCK columns (each chunk rescales the sum when the
# maximum grows), so a row of any length takes two reads and one write; the second loop writes
# exp(x - max) / sum. BLOCK and num_warps are tuned.
# @temper task softmax
# @temper param BLOCK 1024 256 512 2048 4096
# @temper param num_warps 4 1 2 8 16
# @temper require BLOCK >= 32 * num_warps
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl


@triton.jit
def softmax_rows(y, x, R, C, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x + row * C
    y_row = y + row * C
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], -float("inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        v = tl.load(x_row + start + cols, mask=mask, other=-float("inf"))
        m_new = tl.maximum(m, v)
        # Lanes that have seen nothing yet keep m = -inf: their sum stays 0 instead of NaN.
        scale = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(mask, tl.exp(v - m_new), 0.0)
        m = m_new
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m == -float("inf"), 0.0, s * tl.exp(m - row_max)), axis=0)
    inv = 1.0 / row_sum
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        v = tl.load(x_row + start + cols, mask=mask, other=0.0)
        tl.store(y_row + start + cols, tl.exp(v - row_max) * inv, mask=mask)
