#include "ic_device.h"

#include <string.h>

#include "ic_error.h"
#include "ic_text.h"

static const char *const ic_device_kind_names[IC_KIND_COUNT] = {
    [IC_KIND_CPU] = "cpu",
    [IC_KIND_CUDA] = "cuda",
};

const char *ic_device_kind_name(enum ic_device_kind kind)
{
    return ((int)kind >= 0 && kind < IC_KIND_COUNT) ? ic_device_kind_names[kind] : "invalid";
}

IC_DEFINE_NAMES_LOOKUP(ic_device_kind_from_name, enum ic_device_kind, ic_device_kind_names)
