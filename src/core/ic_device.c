#include "ic_device.h"

#include <string.h>

#include "ic_error.h"

static const char *const ic_device_kind_names[IC_KIND_COUNT] = {
    [IC_KIND_CPU] = "cpu",
    [IC_KIND_CUDA] = "cuda",
};

const char *ic_device_kind_name(enum ic_device_kind kind)
{
    return ((int)kind >= 0 && kind < IC_KIND_COUNT) ? ic_device_kind_names[kind] : "invalid";
}

int ic_device_kind_from_name(const char *name, enum ic_device_kind *ret)
{
    for (int i = 0; i < IC_KIND_COUNT; i++) {
        if (strcmp(ic_device_kind_names[i], name) == 0) {
            *ret = (enum ic_device_kind)i;
            return 0;
        }
    }
    return IC_ENOTFOUND;
}
