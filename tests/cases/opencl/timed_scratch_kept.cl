// Correct: a vector_add that looks for what it left in its scratch buffer. At the bench shape,
// from its ninth launch on (past the checks and the warm-ups, as in timed_inputs_repeat.cl), a
// launch that finds its previous launch's mark in scratch writes NaN into c[0]; every launch then
// marks scratch. Scratch was poisoned before check runs but not between timed launches, so this was
// incorrect at the tenth launch; now scratch is poisoned again before every timed launch.
// @expect correct
// @temper task vector_add
// @temper flags -cl-std=CL2.0
// @temper scratch mark i32 4
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, mark, N)

#define LATE 8

global uint launches;

__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, __global uint *mark,
                         int n)
{
    __local int kept;
    int bench = n == 16777216;
    if (get_group_id(0) == 0 && get_local_id(0) == 0) {
        kept = 0;
        if (bench) {
            uint l = launches++;
            kept = l >= LATE && mark[0] == 0x6d61726bu && mark[1] == l - 1;
            mark[0] = 0x6d61726bu;
            mark[1] = l;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int i = get_global_id(0);
    if (i < n)
        c[i] = a[i] + b[i];
    if (get_group_id(0) == 0 && kept && get_local_id(0) == 0)
        c[0] = NAN;
}
