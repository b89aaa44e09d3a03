/*
 * ic_device: the device a case runs on, as a kind and an ordinal.
 *
 * Contract
 * - A device is a plain value, {kind, id}: the kind is what case ids, filters and reports name
 *   ("cpu", "cuda"); the id is the ordinal among the devices of that kind (0 for the CPU). Case
 *   ids carry the kind only: a case means the same on every machine, and runs on device 0 of
 *   its kind.
 * - Names are the case-id spelling and never change. Nothing here allocates.
 */
#ifndef IC_DEVICE_H
#define IC_DEVICE_H

#include <stdbool.h>

enum ic_device_kind { IC_KIND_CPU, IC_KIND_CUDA, IC_KIND_COUNT };

struct ic_device {
    enum ic_device_kind kind;
    int id;
};

/* "cpu", "cuda"; "invalid" for a value outside the table. */
const char *ic_device_kind_name(enum ic_device_kind kind);

/* The kind of a name. IC_ENOTFOUND for a name that is not a kind. */
int ic_device_kind_from_name(const char *name, enum ic_device_kind *ret);

/* True for a CUDA device: the GPU code paths (streams, kernels, the driver's pointer checks). */
static inline bool ic_device_is_cuda(struct ic_device device)
{
    return device.kind == IC_KIND_CUDA;
}

#endif
