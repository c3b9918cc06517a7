// cuda_cpu_block.h: the threads of one CUDA block run on the CPU as fibers (ucontext) of one
// thread, for the tests that run a CUDA kernel's own source where no GPU is
// (sgemm_stream_cpu.cpp, sgemm_pipe_cpu.cpp). __syncthreads switches to the next fiber; once every
// fiber of the block has reached it (or returned), the next phase starts. Between two barriers the
// fibers run one after another, in thread order in even phases and in reverse order in odd ones: a
// read of shared memory that another thread writes before the same barrier sees the old contents
// (NaN fill) in one of the two orders, whichever thread is lower, and every run is the same run.
// With an OS thread per CUDA thread and a std::barrier, each barrier of 256 threads woke every
// thread through the kernel: minutes of two cores for what this does in seconds on one.
#ifndef TEMPER_TESTS_CUDA_CPU_BLOCK_H
#define TEMPER_TESTS_CUDA_CPU_BLOCK_H

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <ucontext.h>
#include <vector>

struct dim3u {
    unsigned x, y, z; /* as CUDA's dim3 */
};
static dim3u threadIdx, blockIdx; /* the running fiber's: set before it resumes, and by the kernel's caller */

namespace cpu_block {
static const size_t stack_bytes = 256 << 10; /* per fiber: the kernels' register arrays are a few KiB */
static ucontext_t scheduler;                  /* where a fiber returns at a barrier or at its end */
static std::vector<ucontext_t> fibers;        /* one per thread of the block */
static std::vector<char> done;                /* 1 once a fiber's body returned */
static int running;                           /* the fiber running now */
static const std::function<void(int)> *body;  /* what each fiber runs, given its thread index */

static void start(int t)
{
    (*body)(t);
    done[t] = 1; /* then back to the scheduler through uc_link */
}

/* Runs body(t) for t in [0, nt) as the threads of one block; every __syncthreads in body is a
 * barrier of all nt. */
static void run(int nt, const std::function<void(int)> &f)
{
    static std::vector<char *> stacks;
    while ((int)stacks.size() < nt) {
        char *s = (char *)malloc(stack_bytes);
        if (!s) {
            fprintf(stderr, "cuda_cpu_block: out of memory for fiber stacks\n");
            exit(2);
        }
        stacks.push_back(s);
    }
    body = &f;
    fibers.assign(nt, ucontext_t());
    done.assign(nt, 0);
    for (int t = 0; t < nt; t++) {
        getcontext(&fibers[t]);
        fibers[t].uc_stack.ss_sp = stacks[t];
        fibers[t].uc_stack.ss_size = stack_bytes;
        fibers[t].uc_link = &scheduler;
        makecontext(&fibers[t], (void (*)())start, 1, t);
    }
    for (int phase = 0, left = nt; left > 0; phase++) {
        for (int i = 0; i < nt; i++) {
            int t = phase % 2 ? nt - 1 - i : i;
            if (done[t])
                continue;
            running = t;
            threadIdx = {(unsigned)t, 0, 0};
            swapcontext(&scheduler, &fibers[t]);
            left -= done[t];
        }
    }
}
} // namespace cpu_block

static inline void __syncthreads() { swapcontext(&cpu_block::fibers[cpu_block::running], &cpu_block::scheduler); }

#endif
