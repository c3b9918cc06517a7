// cuda_cpu_block.h: the threads of one CUDA block run on the CPU as fibers of one thread (on
// x86-64 Linux a switch of its own, elsewhere ucontext), for the tests that run a CUDA kernel's
// own source where no GPU is (sgemm_stream_cpu.cpp, sgemm_pipe_cpu.cpp). __syncthreads switches to the next fiber; once every
// fiber of the block has reached it (or returned), the next phase starts. Between two barriers the
// fibers run one after another, in thread order in even phases and in reverse order in odd ones: a
// read of shared memory that another thread writes before the same barrier sees the old contents
// (NaN fill) in one of the two orders, whichever thread is lower, and every run is the same run.
// With an OS thread per CUDA thread and a std::barrier, each barrier of 256 threads woke every
// thread through the kernel: minutes of two cores for what this does in seconds on one.
#ifndef TEMPER_TESTS_CUDA_CPU_BLOCK_H
#define TEMPER_TESTS_CUDA_CPU_BLOCK_H

#include <cstdint>
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
static std::vector<char> done;               /* 1 once a fiber's body returned */
static int running;                          /* the fiber running now */
static const std::function<void(int)> *body; /* what each fiber runs, given its thread index */

#if defined(__x86_64__) && defined(__linux__)
/* On x86-64 a switch saves the callee-saved registers on the stack it leaves and loads the ones of
 * the stack it goes to: a few instructions. swapcontext also saves and restores the signal mask
 * with a system call each switch (rt_sigprocmask) and the FPU state; nothing here changes the
 * mask, the rounding mode or the x87 control word, so none is saved. A fiber starts by the switch's
 * return into start, a return no call made: under a shadow stack (CET, where a system enforces
 * it) that would stop the test with a control-protection fault, never give a wrong result. */
extern "C" void cpu_block_switch(void **from_sp, void *to_sp); /* saves into *from_sp, resumes to_sp */
asm(".pushsection .text\n"
    ".p2align 4\n"
    "cpu_block_switch:\n"
    "    pushq %rbp\n"
    "    pushq %rbx\n"
    "    pushq %r12\n"
    "    pushq %r13\n"
    "    pushq %r14\n"
    "    pushq %r15\n"
    "    movq %rsp, (%rdi)\n"
    "    movq %rsi, %rsp\n"
    "    popq %r15\n"
    "    popq %r14\n"
    "    popq %r13\n"
    "    popq %r12\n"
    "    popq %rbx\n"
    "    popq %rbp\n"
    "    ret\n"
    ".popsection\n");
static void *scheduler;          /* the scheduler's stack pointer while a fiber runs */
static std::vector<void *> fibers; /* each fiber's stack pointer while it waits */

static void switch_to_scheduler() { cpu_block_switch(&fibers[running], scheduler); }
static void switch_to_fiber(int t) { cpu_block_switch(&scheduler, fibers[t]); }

/* Where a fiber starts (the first switch to it "returns" here): runs its body, then goes back to
 * the scheduler for good. */
static void start()
{
    int t = running;
    (*body)(t);
    done[t] = 1;
    switch_to_scheduler();
    abort(); /* a finished fiber is never resumed */
}

/* A fresh fiber on the stack [s, s + stack_bytes): the six registers cpu_block_switch pops, then
 * start as its return address, placed so that start begins as a called function does (its stack
 * pointer 8 past a 16-byte boundary). */
static void *make(char *s)
{
    uintptr_t top = ((uintptr_t)s + stack_bytes) & ~(uintptr_t)15;
    void **sp = (void **)(top - 64); /* 16-byte aligned: 6 registers, start, and 8 bytes of pad */
    for (int i = 0; i < 6; i++)
        sp[i] = nullptr;
    sp[6] = (void *)start;
    sp[7] = nullptr;
    return sp;
}
#else
/* Elsewhere the fibers are ucontexts (swapcontext: a system call for the signal mask each switch). */
static ucontext_t scheduler;           /* where a fiber returns at a barrier or at its end */
static std::vector<ucontext_t> fibers; /* one per thread of the block */

static void start(int t)
{
    (*body)(t);
    done[t] = 1; /* then back to the scheduler through uc_link */
}
static void switch_to_scheduler() { swapcontext(&fibers[running], &scheduler); }
static void switch_to_fiber(int t) { swapcontext(&scheduler, &fibers[t]); }
static ucontext_t make(char *s, int t)
{
    ucontext_t c;
    getcontext(&c);
    c.uc_stack.ss_sp = s;
    c.uc_stack.ss_size = stack_bytes;
    c.uc_link = &scheduler;
    makecontext(&c, (void (*)())start, 1, t);
    return c;
}
#endif

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
    fibers.clear();
    done.assign(nt, 0);
    for (int t = 0; t < nt; t++) {
#if defined(__x86_64__) && defined(__linux__)
        fibers.push_back(make(stacks[t]));
#else
        fibers.push_back(make(stacks[t], t));
#endif
    }
    for (int phase = 0, left = nt; left > 0; phase++) {
        for (int i = 0; i < nt; i++) {
            int t = phase % 2 ? nt - 1 - i : i;
            if (done[t])
                continue;
            running = t;
            threadIdx = {(unsigned)t, 0, 0};
            switch_to_fiber(t);
            left -= done[t];
        }
    }
}
} // namespace cpu_block

static inline void __syncthreads() { cpu_block::switch_to_scheduler(); }

#endif
