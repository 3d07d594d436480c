/*
 * dat_extension_op is C-variadic, which stable Rust cannot define. This shim reads the
 * variable arguments of each extended operation (as dat_ib_extensions.h's macros pass them)
 * into a plain array and calls the non-variadic Rust entry point. Operations it does not know
 * pass no arguments: Rust refuses them without reading any.
 */
#include <stdarg.h>
#include <stdint.h>

typedef void *DAT_HANDLE;
typedef uint32_t DAT_RETURN;
typedef union { void *as_ptr; uint64_t as_64; unsigned long long as_index; } shim_context;

/* Values of DAT_IB_OP (dat_ib_extensions.h). */
enum {
    OP_FETCH_AND_ADD = 0,
    OP_CMP_AND_SWAP = 1,
    OP_RDMA_WRITE_IMMED = 2,
    OP_UD_SEND = 3,
    OP_QUERY_COUNTERS = 4,
    OP_PRINT_COUNTERS = 5,
    OP_START_COUNTERS = 26,
    OP_STOP_COUNTERS = 27,
    OP_UD_CM_FREE = 28,
    OP_UD_AH_FREE = 29,
    OP_OPEN_QUERY = 0x1000, /* DAT_OPEN_EXTENSION_BASE */
    OP_CLOSE_QUERY = 0x2000 /* DAT_CLOSE_EXTENSION_BASE */
};

/* Mirrored by src/api/ext.rs: each argument widened to 64 bits, in call order. */
struct libdat_ext_args {
    int32_t count;
    uint64_t v[8];
};

DAT_RETURN libdat_extension_op(DAT_HANDLE handle, int32_t op, const struct libdat_ext_args *args);

#define ARG_U64(ap) (a.v[a.count++] = (uint64_t)va_arg(ap, uint64_t))
#define ARG_INT(ap) (a.v[a.count++] = (uint64_t)(int64_t)va_arg(ap, int))
#define ARG_PTR(ap) (a.v[a.count++] = (uint64_t)(uintptr_t)va_arg(ap, void *))
#define ARG_CTX(ap) (a.v[a.count++] = va_arg(ap, shim_context).as_64)

DAT_RETURN dat_extension_op(DAT_HANDLE handle, int op, ...)
{
    struct libdat_ext_args a = { 0, { 0 } };
    va_list ap;
    va_start(ap, op);
    switch (op) {
    case OP_FETCH_AND_ADD: /* add_val, lbuf, cookie, rbuf, flags */
        ARG_U64(ap); ARG_PTR(ap); ARG_CTX(ap); ARG_PTR(ap); ARG_INT(ap);
        break;
    case OP_CMP_AND_SWAP: /* cmp_val, swap_val, lbuf, cookie, rbuf, flags */
        ARG_U64(ap); ARG_U64(ap); ARG_PTR(ap); ARG_CTX(ap); ARG_PTR(ap); ARG_INT(ap);
        break;
    case OP_RDMA_WRITE_IMMED: /* size, lbuf, cookie, rbuf, idata, flags */
        ARG_INT(ap); ARG_PTR(ap); ARG_CTX(ap); ARG_PTR(ap); ARG_INT(ap); ARG_INT(ap);
        break;
    case OP_UD_SEND: /* segments, lbuf, ah_ptr, cookie, flags */
        ARG_INT(ap); ARG_PTR(ap); ARG_PTR(ap); ARG_CTX(ap); ARG_INT(ap);
        break;
    case OP_QUERY_COUNTERS: /* cntr, p_cntrs_out, reset */
        ARG_INT(ap); ARG_PTR(ap); ARG_INT(ap);
        break;
    case OP_PRINT_COUNTERS: /* cntr, reset */
        ARG_INT(ap); ARG_INT(ap);
        break;
    case OP_START_COUNTERS: case OP_STOP_COUNTERS: /* type */
        ARG_INT(ap);
        break;
    case OP_UD_CM_FREE: /* cm */
        ARG_CTX(ap);
        break;
    case OP_UD_AH_FREE: /* ah */
        ARG_PTR(ap);
        break;
    case OP_OPEN_QUERY: /* name, ia_handle, ia_mask, ia_attr, prov_mask, prov_attr */
        ARG_PTR(ap); ARG_PTR(ap); ARG_U64(ap); ARG_PTR(ap); ARG_U64(ap); ARG_PTR(ap);
        break;
    default: /* OP_CLOSE_QUERY has none; collectives and unknown ops are not read */
        break;
    }
    va_end(ap);
    return libdat_extension_op(handle, op, &a);
}
