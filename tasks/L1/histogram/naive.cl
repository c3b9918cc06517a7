// Naive baseline in two launches. The first zeroes the 256 counts (the outputs arrive
// poisoned). The second: each work-group of BLOCK work-items takes BLOCK * ITEMS consecutive
// bytes, counts them into a local-memory histogram with local atomics (each work-item reads
// ITEMS bytes, BLOCK apart, so that reads are contiguous across the group), then adds its nonzero
// bins to the global counts with global atomics.
// @temper task histogram
// @temper param BLOCK 256
// @temper param ITEMS 16
// @temper launch hist_zero grid(1) block(256) args(counts)
// @temper launch hist_count grid(ceil_div(N, BLOCK * ITEMS)) block(BLOCK) args(counts, x, N)
__kernel void hist_zero(__global int *counts)
{
    counts[get_local_id(0)] = 0;
}

__kernel void hist_count(__global int *counts, __global const uchar *x, int N)
{
    __local int local_counts[256];
    int t = get_local_id(0);
    for (int b = t; b < 256; b += BLOCK)
        local_counts[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    size_t base = get_group_id(0) * (size_t)(BLOCK * ITEMS);
    for (int k = 0; k < ITEMS; k++) {
        size_t i = base + (size_t)k * BLOCK + t;
        if (i < (size_t)N)
            atomic_inc(&local_counts[x[i]]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int b = t; b < 256; b += BLOCK)
        if (local_counts[b])
            atomic_add(&counts[b], local_counts[b]);
}
