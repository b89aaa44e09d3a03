#include "ic_cases.h"

static const cJSON *ic_cases_array_first(struct ic_cases *self)
{
    struct ic_cases_array *source = (struct ic_cases_array *)self;
    source->at = cJSON_IsArray(source->array) ? source->array->child : NULL;
    return source->at;
}

static const cJSON *ic_cases_array_next(struct ic_cases *self)
{
    struct ic_cases_array *source = (struct ic_cases_array *)self;
    if (source->at)
        source->at = source->at->next;
    return source->at;
}

void ic_cases_of_array(struct ic_cases_array *source, const cJSON *array)
{
    source->base.first = ic_cases_array_first;
    source->base.next = ic_cases_array_next;
    source->base.text = NULL;
    source->base.count = cJSON_IsArray(array) ? (size_t)cJSON_GetArraySize(array) : 0;
    source->base.status = 0;
    source->array = array;
    source->at = NULL;
}
