/* cuda_triton.c: Triton kernels on the CUDA backend. A Triton candidate's build is temper's
 * container (python/temper_triton.py): "TEMPER-TRITON 1\n", a header line of JSON naming each
 * kernel with Triton's launch metadata and its cubin's place, then the cubins. Each cubin is loaded
 * with cuModuleLoadData like NVRTC's; a launch takes 32 * num_warps threads a block, the shared
 * memory Triton reported, and after the kernel's own arguments the two pointers Triton 3.x kernels
 * take last: global scratch and profile scratch (NULL where the kernel needs none). What Triton
 * would launch otherwise (clusters, cooperative grids, programmatic dependent launch) is refused
 * when the container is made. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_impl.h"
#include "temper/error.h"

static const char magic[] = "TEMPER-TRITON 1\n";

int cuda_triton_is_container(const void *data, size_t size)
{
    return size > sizeof(magic) - 1 && !memcmp(data, magic, sizeof(magic) - 1);
}

/* One header entry into k; its cubin's offset and size in *off, *len. */
static int read_entry(json_t *e, struct cuda_triton_kernel *k, size_t *off, size_t *len)
{
    const char *kernel = json_string_value(json_object_get(e, "kernel"));
    const char *symbol = json_string_value(json_object_get(e, "name"));
    if (!kernel || !symbol || strlen(kernel) >= sizeof(k->kernel) || strlen(symbol) >= sizeof(k->symbol))
        return -1;
    snprintf(k->kernel, sizeof(k->kernel), "%s", kernel);
    snprintf(k->symbol, sizeof(k->symbol), "%s", symbol);
    k->num_warps = (int)json_integer_value(json_object_get(e, "num_warps"));
    k->shared = (size_t)json_integer_value(json_object_get(e, "shared"));
    k->scratch_size[0] = (size_t)json_integer_value(json_object_get(e, "global_scratch_size"));
    k->scratch_align[0] = (size_t)json_integer_value(json_object_get(e, "global_scratch_align"));
    k->scratch_size[1] = (size_t)json_integer_value(json_object_get(e, "profile_scratch_size"));
    k->scratch_align[1] = (size_t)json_integer_value(json_object_get(e, "profile_scratch_align"));
    *off = (size_t)json_integer_value(json_object_get(e, "offset"));
    *len = (size_t)json_integer_value(json_object_get(e, "size"));
    return k->num_warps < 1 || k->num_warps > 32 || json_integer_value(json_object_get(e, "num_ctas")) != 1 ? -1 : 0;
}

int cuda_triton_load(struct cuda_ctx *c, const void *data, size_t size, struct temper_dmodule *m, char *msg,
                     size_t msg_size)
{
    const char *head = (const char *)data + sizeof(magic) - 1;
    const char *nl = memchr(head, '\n', size - (sizeof(magic) - 1));
    json_t *h = nl ? json_loadb(head, (size_t)(nl - head), 0, NULL) : NULL;
    json_t *ks = json_object_get(h, "kernels");
    size_t n = json_array_size(ks);
    const char *body = nl ? nl + 1 : NULL;
    size_t body_len = nl ? size - (size_t)(body - (const char *)data) : 0;
    m->triton = n ? calloc(n, sizeof(*m->triton)) : NULL;
    int err =
        !m->triton ? temper_fail(msg, msg_size, TEMPER_EINVALID, "load: a Triton container without kernels") : 0;
    for (size_t i = 0; i < n && !err; i++) {
        struct cuda_triton_kernel *k = &m->triton[i];
        size_t off = 0, len = 0;
        if (read_entry(json_array_get(ks, i), k, &off, &len) || off > body_len || len > body_len - off || len < 4) {
            err = temper_fail(msg, msg_size, TEMPER_EINVALID, "load: the Triton container's kernel %zu is malformed", i);
            break;
        }
        /* The cubin is copied so that it is aligned as the driver expects an ELF image to be. */
        void *cubin = malloc(len);
        CUresult r = cubin ? (memcpy(cubin, body + off, len), cuda_cu.cuModuleLoadData(&k->mod, cubin))
                           : CUDA_ERROR_OUT_OF_MEMORY;
        free(cubin);
        if (r != CUDA_SUCCESS) {
            err = cuda_fail(c, r, TEMPER_ECOMPILE, msg, msg_size, "cuModuleLoadData (a Triton cubin)");
            break;
        }
        m->ntriton++;
    }
    json_decref(h);
    if (err)
        cuda_triton_free(m);
    return err;
}

const struct cuda_triton_kernel *cuda_triton_find(const struct temper_dmodule *m, const char *name)
{
    for (int i = 0; i < m->ntriton; i++)
        if (!strcmp(m->triton[i].kernel, name))
            return &m->triton[i];
    return NULL;
}

int cuda_triton_prepare(struct cuda_ctx *c, struct temper_dkernel *k, const size_t grid[3], const size_t block[3],
                        size_t *smem, CUdeviceptr scratch[2], char *msg, size_t msg_size)
{
    const struct cuda_triton_kernel *t = k->triton;
    if (block[0] != 32u * (size_t)t->num_warps || block[1] != 1 || block[2] != 1)
        return temper_fail(msg, msg_size, TEMPER_ELAUNCH,
                           "launch %s: block (%zu, %zu, %zu), but Triton compiled it for %d warps (%d threads)",
                           k->name, block[0], block[1], block[2], t->num_warps, 32 * t->num_warps);
    *smem = t->shared;
    for (int s = 0; s < 2; s++) {
        scratch[s] = 0;
        if (!t->scratch_size[s])
            continue;
        /* One slice per block, as Triton's own launcher allocates it; grown, never shrunk, so that
         * a timed launch at a shape seen before allocates nothing. */
        size_t align = t->scratch_align[s] ? t->scratch_align[s] : 1;
        size_t per = (t->scratch_size[s] + align - 1) / align * align;
        size_t bytes = grid[0] * grid[1] * grid[2] * per;
        if (bytes > k->scratch_bytes[s]) {
            if (k->scratch[s])
                cuda_cu.cuMemFree(k->scratch[s]);
            k->scratch[s] = 0;
            k->scratch_bytes[s] = 0;
            CUresult r = cuda_cu.cuMemAlloc(&k->scratch[s], bytes);
            if (r != CUDA_SUCCESS)
                return cuda_fail(c, r, TEMPER_ELAUNCH, msg, msg_size, "allocating a Triton kernel's scratch");
            k->scratch_bytes[s] = bytes;
        }
        scratch[s] = k->scratch[s];
    }
    return 0;
}

void cuda_triton_free(struct temper_dmodule *m)
{
    for (struct temper_dkernel *k = m->kernels; k; k = k->next)
        for (int s = 0; s < 2; s++)
            if (k->scratch[s])
                cuda_cu.cuMemFree(k->scratch[s]);
    for (int i = 0; i < m->ntriton; i++)
        cuda_cu.cuModuleUnload(m->triton[i].mod);
    free(m->triton);
    m->triton = NULL;
    m->ntriton = 0;
}
