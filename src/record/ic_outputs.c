#include "ic_outputs.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ic_error.h"

void ic_output_sibling(const char *json_path, const char *ext, char *buf, size_t size)
{
    size_t len = strlen(json_path);
    if (len > 3 && strcmp(json_path + len - 3, ".gz") == 0)
        len -= 3;
    if (len > 6 && strncmp(json_path + len - 6, ".jsonl", 6) == 0)
        len -= 6;
    else if (len > 5 && strncmp(json_path + len - 5, ".json", 5) == 0)
        len -= 5;
    snprintf(buf, size, "%.*s%s", (int)len, json_path, ext);
}

static const char *ic_file_kind(mode_t mode)
{
    return S_ISLNK(mode)    ? "a symbolic link"
           : S_ISDIR(mode)  ? "a directory"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

int ic_output_check(const char *path, char *err, size_t err_size)
{
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, err_size, "%s is %s: interopcheck only writes regular files (give another "
                 "path)", path, ic_file_kind(st.st_mode));
        return IC_EIO;
    }
    char *copy = strdup(path);
    if (!copy) {
        snprintf(err, err_size, "out of memory");
        return IC_ENOMEM;
    }
    const char *dir = dirname(copy);
    int rc = 0;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, err_size, "cannot write %s: the directory %s does not exist", path, dir);
        rc = IC_EIO;
    } else if (access(dir, W_OK | X_OK) != 0) {
        snprintf(err, err_size, "cannot write %s: the directory %s is not writable (%s)", path,
                 dir, strerror(errno));
        rc = IC_EIO;
    }
    free(copy);
    return rc;
}

int ic_output_list_add(struct ic_output_list *list, const char *path)
{
    if (!path)
        return 0;
    if (list->count == IC_OUTPUT_MAX)
        return IC_ERANGE;
    list->paths[list->count] = strdup(path);
    if (!list->paths[list->count])
        return IC_ENOMEM;
    list->count++;
    return 0;
}

int ic_output_list_check(const struct ic_output_list *list, char *err, size_t err_size)
{
    for (int i = 0; i < list->count; i++) {
        int rc = ic_output_check(list->paths[i], err, err_size);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void ic_output_list_release(struct ic_output_list *list)
{
    for (int i = 0; i < list->count; i++)
        free(list->paths[i]);
    list->count = 0;
}
