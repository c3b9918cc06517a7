// Correct: a vector_add that watches its own inputs. At the bench shape its first work-group hashes
// 256 sampled elements of a and b, and from its ninth launch there on (past the two checks and the
// warm-ups: the cases' 0.2 s budget warms up for 0.02 s, and on a CPU two warm-up rounds of 16M
// elements outlast that) keeps each hash in program-scope globals (OpenCL 2.0); a launch whose
// inputs hash like an earlier kept one writes NaN into c[0]. While timed launches alternated between two input sets this was incorrect
// at the tenth launch; with new inputs before every timed launch no hash repeats.
// @expect correct
// @temper task vector_add
// @temper flags -cl-std=CL2.0
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)

#define LATE 8
#define KEEP 256

global uint launches;
global uint seen[KEEP];
global uint nseen;

__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n)
{
    __local int repeat;
    int bench = n == 16777216;
    if (get_group_id(0) == 0 && get_local_id(0) == 0) {
        repeat = 0;
        if (bench) {
            uint h = 2166136261u;
            for (int j = 0; j < 256; j++)
                h = (h ^ as_uint(a[(j * 65599) % n]) ^ (as_uint(b[(j * 40503) % n]) << 1)) * 16777619u;
            uint l = launches++;
            if (l >= LATE) {
                for (uint k = 0; k < nseen && k < KEEP; k++)
                    repeat |= seen[k] == h;
                seen[nseen++ % KEEP] = h;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int i = get_global_id(0);
    if (i < n)
        c[i] = a[i] + b[i];
    if (get_group_id(0) == 0 && repeat && get_local_id(0) == 0)
        c[0] = NAN;
}
