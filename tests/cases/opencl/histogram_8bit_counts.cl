// Wrong (tasks/L1/histogram's note: 8-bit local counts are caught): the task's baseline keeping
// its work-group counts in bytes, four to a 32-bit word, so that a bin's 256th byte in one
// work-group (of BLOCK * ITEMS = 4096) wraps to 0 and carries into the next bin. Uniform bytes
// (16 a bin a work-group) pass; the randint(0,3) and randint(200,200) shapes overflow.
// @expect incorrect
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
    __local uint local_counts[64]; /* CHANGED: 8-bit counts, four to a word */
    int t = get_local_id(0);
    for (int b = t; b < 64; b += BLOCK)
        local_counts[b] = 0; /* CHANGED */
    barrier(CLK_LOCAL_MEM_FENCE);
    size_t base = get_group_id(0) * (size_t)(BLOCK * ITEMS);
    for (int k = 0; k < ITEMS; k++) {
        size_t i = base + (size_t)k * BLOCK + t;
        if (i < (size_t)N)
            atomic_add(&local_counts[x[i] >> 2], 1u << (8 * (x[i] & 3))); /* CHANGED: a 256th count carries over */
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int b = t; b < 256; b += BLOCK)
        if ((local_counts[b >> 2] >> (8 * (b & 3))) & 0xffu) /* CHANGED: the count, mod 256 */
            atomic_add(&counts[b], (int)((local_counts[b >> 2] >> (8 * (b & 3))) & 0xffu));
}
