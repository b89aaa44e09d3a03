/*
 * ic_case: one cell of the matrix, and its stable id.
 *
 * Contract
 * - A case id is `<protocol>.<producer>.<consumer>.<device>.<dtype>.<layout>` with an optional
 *   `.<variant>`. Every part is made of [a-z0-9_], so ids split on '.' unambiguously; they
 *   are the key of a case in every report and expectations file and never change meaning.
 * - Library names come from probes and must be valid name parts (ic_name_is_valid); the
 *   other parts come from the tables of ic_protocol, ic_dtype and ic_layout.
 * - Cases are plain values with no pointers; nothing here allocates.
 */
#ifndef IC_CASE_H
#define IC_CASE_H

#include <stdbool.h>
#include <stddef.h>

#include "ic_device.h"
#include "ic_dtype.h"
#include "ic_layout.h"
#include "ic_protocol.h"

#define IC_NAME_MAX 48
#define IC_CASE_ID_MAX 256

struct ic_case {
    enum ic_protocol protocol;
    char producer[IC_NAME_MAX];
    char consumer[IC_NAME_MAX];
    struct ic_device device; /* the id part names its kind */
    enum ic_dtype dtype;
    enum ic_layout layout;
    enum ic_variant variant;
};

/* True when `name` is non-empty, shorter than IC_NAME_MAX and only [a-z0-9_]. */
bool ic_name_is_valid(const char *name);

/* Writes the case id. IC_EINVAL when a part is not a valid name, IC_ERANGE when it does not
 * fit in `size`. */
int ic_case_format_id(const struct ic_case *c, char *buf, size_t size);

/* Parses an id written by ic_case_format_id. IC_EINVAL for anything else. */
int ic_case_parse_id(const char *id, struct ic_case *ret);

#endif
