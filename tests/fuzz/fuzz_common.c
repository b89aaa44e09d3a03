#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fuzz_common.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ic_config.h"
#include "ic_error.h"
#include "ic_guard.h"
#include "ic_python.h"

/* The literal decoder (see fuzz_common.h). Its classes stand for what producers hand over and
 * no literal can spell; everything else is the literal itself. Any failure (a syntax error, a
 * too deep nesting, a bytearray too large for memory) makes the input "no literal". */
static const char fuzz_objects_source[] =
    "import ast\n"
    "import warnings\n"
    "\n"
    "# the parser warns about odd input (SyntaxWarning): noise, and slow\n"
    "warnings.simplefilter('ignore')\n"
    "\n"
    "class ArrayInterface:\n"
    "    def __init__(self, value):\n"
    "        self.__array_interface__ = value\n"
    "\n"
    "class CudaArrayInterface:\n"
    "    def __init__(self, value):\n"
    "        self.__cuda_array_interface__ = value\n"
    "\n"
    "class Raises:\n"
    "    def __getattr__(self, name):\n"
    "        raise RuntimeError('reading ' + name + ' raises')\n"
    "\n"
    "class NoTruth:\n"
    "    def __bool__(self):\n"
    "        raise ValueError('no truth value')\n"
    "\n"
    "class Index:\n"
    "    def __init__(self, value):\n"
    "        self.value = value\n"
    "    def __index__(self):\n"
    "        return self.value\n"
    "\n"
    "def special(key, value):\n"
    "    if key == '$ai':\n"
    "        return ArrayInterface(convert(value))\n"
    "    if key == '$cai':\n"
    "        return CudaArrayInterface(convert(value))\n"
    "    if key == '$raise':\n"
    "        return Raises()\n"
    "    if key == '$notruth':\n"
    "        return NoTruth()\n"
    "    if key == '$index':\n"
    "        return Index(convert(value))\n"
    "    if key == '$bytearray':\n"
    "        return bytearray(value if isinstance(value, bytes) else b'')\n"
    "    if key == '$memoryview':\n"
    "        return memoryview(convert(value))\n"
    "    return None\n"
    "\n"
    "def convert(value):\n"
    "    if isinstance(value, dict):\n"
    "        if len(value) == 1:\n"
    "            key = next(iter(value))\n"
    "            if isinstance(key, str) and key.startswith('$') and key != '$owner':\n"
    "                return special(key, value[key])\n"
    "        return {convert(k): convert(v) for k, v in value.items()}\n"
    "    if isinstance(value, list):\n"
    "        return [convert(v) for v in value]\n"
    "    if isinstance(value, tuple):\n"
    "        return tuple(convert(v) for v in value)\n"
    "    return value\n"
    "\n"
    "def build(data):\n"
    "    try:\n"
    "        return convert(ast.literal_eval(data.decode('utf-8')))\n"
    "    except Exception:\n"
    "        return None\n";

static PyObject *fuzz_build; /* build(bytes) of the decoder; lives as long as the process */

void fuzz_python_start(void)
{
    char err[1024];

    if (fuzz_build)
        return;
    /* Before ic_py_init: a pre-initialised runtime keeps this allocator (see the contract). */
    PyPreConfig pre;
    PyPreConfig_InitIsolatedConfig(&pre);
    pre.allocator = PYMEM_ALLOCATOR_MALLOC;
    PyStatus status = Py_PreInitialize(&pre);
    if (PyStatus_Exception(status)) {
        fprintf(stderr, "fuzz: cannot pre-initialise Python: %s\n",
                status.err_msg ? status.err_msg : "?");
        abort();
    }
    struct ic_py_config config = {.python = IC_BUILD_PYTHON, .sys_path = NULL};
    if (ic_py_init(&config, err, sizeof(err)) < 0) {
        fprintf(stderr, "fuzz: cannot start Python: %s\n", err);
        abort();
    }
    ic_py_enter();
    PyObject *globals = PyDict_New();
    PyObject *done = NULL;
    if (globals && PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins()) == 0)
        done = PyRun_String(fuzz_objects_source, Py_file_input, globals, globals);
    if (done)
        fuzz_build = PyDict_GetItemString(globals, "build");
    if (!fuzz_build) {
        PyErr_Print();
        fprintf(stderr, "fuzz: the literal decoder does not load\n");
        abort();
    }
    Py_INCREF(fuzz_build);
    Py_DECREF(done);
    Py_DECREF(globals);
}

PyObject *fuzz_py_object(const uint8_t *data, size_t size)
{
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)size);
    PyObject *value = bytes ? PyObject_CallOneArg(fuzz_build, bytes) : NULL;
    Py_XDECREF(bytes);
    if (!value) {
        PyErr_Clear(); /* only memory can fail here: the decoder catches everything */
        return NULL;
    }
    if (value == Py_None) {
        Py_DECREF(value);
        return NULL;
    }
    return value;
}

void fuzz_check_no_exception(const char *what)
{
    if (PyErr_Occurred()) {
        fprintf(stderr, "fuzz: %s left a Python exception pending:\n", what);
        PyErr_Print();
        abort();
    }
}

void fuzz_reader_init(struct fuzz_reader *in, const uint8_t *data, size_t size)
{
    in->data = data;
    in->size = size;
    in->pos = 0;
}

static uint64_t fuzz_bytes(struct fuzz_reader *in, int width)
{
    uint64_t value = 0;
    for (int i = 0; i < width; i++) {
        uint64_t byte = in->pos < in->size ? in->data[in->pos] : 0;
        in->pos++;
        value |= byte << (8 * i);
    }
    return value;
}

uint8_t fuzz_u8(struct fuzz_reader *in)
{
    return (uint8_t)fuzz_bytes(in, 1);
}

uint16_t fuzz_u16(struct fuzz_reader *in)
{
    return (uint16_t)fuzz_bytes(in, 2);
}

uint32_t fuzz_u32(struct fuzz_reader *in)
{
    return (uint32_t)fuzz_bytes(in, 4);
}

uint64_t fuzz_u64(struct fuzz_reader *in)
{
    return fuzz_bytes(in, 8);
}

int64_t *fuzz_i64_array(struct fuzz_reader *in, size_t count)
{
    /* malloc(0) under ASan is a block with no usable bytes: any read is reported */
    int64_t *values = malloc(count * sizeof(int64_t));
    FUZZ_CHECK(values || count == 0);
    for (size_t i = 0; i < count; i++)
        values[i] = (int64_t)fuzz_u64(in);
    return values;
}

char *fuzz_cstring(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    FUZZ_CHECK(text);
    if (size)
        memcpy(text, data, size);
    text[size] = '\0';
    return text;
}

/* A mapping of `size` accessible bytes followed by one inaccessible page. */
static unsigned char *fuzz_map_guarded(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size = (size + page - 1) / page * page;
    unsigned char *base =
        mmap(NULL, size + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    FUZZ_CHECK(base != MAP_FAILED);
    FUZZ_CHECK(mprotect(base + size, page, PROT_NONE) == 0);
    return base;
}

void *fuzz_tail(int slot, size_t size)
{
    static unsigned char *slots[FUZZ_TAIL_SLOTS];
    FUZZ_CHECK(slot >= 0 && slot < FUZZ_TAIL_SLOTS && size <= FUZZ_TAIL_MAX);
    if (!slots[slot]) {
        FUZZ_CHECK(FUZZ_TAIL_MAX % sysconf(_SC_PAGESIZE) == 0); /* so the block ends at the page */
        slots[slot] = fuzz_map_guarded(FUZZ_TAIL_MAX);
    }
    return slots[slot] + FUZZ_TAIL_MAX - size;
}

unsigned char *fuzz_region(void)
{
    static unsigned char *region;
    if (!region)
        region = fuzz_map_guarded(FUZZ_REGION_SIZE);
    return region;
}

/* The guard, wrapped (see fuzz_common.h). The __real_ functions are the linker's names for
 * the originals. */
int __real_ic_guard_copy(void *dst, uintptr_t src, size_t n);
int __real_ic_guard_string(uintptr_t src, char *dst, size_t size);
int __real_ic_guard_span(uintptr_t start, size_t n, uintptr_t *ret_bad);
int __real_ic_guard_view(const struct ic_view *view, int64_t *ret_bad_index,
                         uintptr_t *ret_bad_address);
int __wrap_ic_guard_copy(void *dst, uintptr_t src, size_t n);
int __wrap_ic_guard_string(uintptr_t src, char *dst, size_t size);
int __wrap_ic_guard_span(uintptr_t start, size_t n, uintptr_t *ret_bad);
int __wrap_ic_guard_view(const struct ic_view *view, int64_t *ret_bad_index,
                         uintptr_t *ret_bad_address);

static int guard_calls, guard_faults;

static int fuzz_guard_note(int rc)
{
    guard_calls++;
    if (rc == IC_EFAULT)
        guard_faults++;
    return rc;
}

int __wrap_ic_guard_copy(void *dst, uintptr_t src, size_t n)
{
    return fuzz_guard_note(__real_ic_guard_copy(dst, src, n));
}

int __wrap_ic_guard_string(uintptr_t src, char *dst, size_t size)
{
    return fuzz_guard_note(__real_ic_guard_string(src, dst, size));
}

int __wrap_ic_guard_span(uintptr_t start, size_t n, uintptr_t *ret_bad)
{
    return fuzz_guard_note(__real_ic_guard_span(start, n, ret_bad));
}

int __wrap_ic_guard_view(const struct ic_view *view, int64_t *ret_bad_index,
                         uintptr_t *ret_bad_address)
{
    return fuzz_guard_note(__real_ic_guard_view(view, ret_bad_index, ret_bad_address));
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FUZZ_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FUZZ_ASAN 1
#endif

bool fuzz_in_asan_shadow(uint64_t address)
{
#if defined(FUZZ_ASAN) && defined(__x86_64__)
    /* LowShadow, ShadowGap and HighShadow: 0x7fff8000 up to HighMem at 0x10007fff8000 */
    return address >= 0x7fff8000ULL && address < 0x10007fff8000ULL;
#else
    (void)address;
    return false;
#endif
}

void fuzz_guard_reset(void)
{
    guard_calls = guard_faults = 0;
}

int fuzz_guard_calls(void)
{
    return guard_calls;
}

int fuzz_guard_faults(void)
{
    return guard_faults;
}

void fuzz_validation_start(struct fuzz_validation *v)
{
    ic_diag_init(&v->diag);
    v->have_view = true;
    fuzz_guard_reset();
}

void fuzz_validation_check(const struct fuzz_validation *v, const char *validator)
{
    fuzz_check_no_exception(validator);
    FUZZ_CHECK(v->diag.count >= 0 && v->diag.count <= IC_DIAG_MAX);
}

/* Every extent is non-negative, and a dtype the view names has the view's itemsize. */
void fuzz_check_view_items(const struct ic_view *view)
{
    for (int i = 0; i < view->ndim; i++)
        FUZZ_CHECK(view->shape[i] >= 0);
    if (view->dtype != IC_DTYPE_INVALID) {
        const struct ic_dtype_info *info = ic_dtype_info(view->dtype);
        FUZZ_CHECK(info != NULL && info->itemsize == view->itemsize);
    }
}

void fuzz_check_no_faults(const char *harness, const struct ic_diag *diag)
{
    if (fuzz_guard_faults() > 0) {
        char text[1024];
        ic_diag_format(diag, text, sizeof(text));
        fprintf(stderr, "%s: unreadable memory reported for good pointers: %s\n", harness, text);
        FUZZ_CHECK(fuzz_guard_faults() == 0);
    }
}

static char fuzz_dir[256];

static void fuzz_remove_dir(void)
{
    DIR *dir = opendir(fuzz_dir);
    if (dir) {
        char path[512];
        for (struct dirent *entry; (entry = readdir(dir)) != NULL;) {
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof(path), "%s/%s", fuzz_dir, entry->d_name);
            unlink(path);
        }
        closedir(dir);
    }
    rmdir(fuzz_dir);
}

const char *fuzz_temp_path(const char *name)
{
    static char path[512];
    if (!fuzz_dir[0]) {
        /* /dev/shm when it is there: the report and expectations harnesses write every input,
         * and a file in memory keeps that cheap */
        const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/icfuzz-XXXXXX", base && *base ? base : "/tmp");
        FUZZ_CHECK(mkdtemp(fuzz_dir) != NULL);
        atexit(fuzz_remove_dir);
    }
    snprintf(path, sizeof(path), "%s/%s", fuzz_dir, name);
    return path;
}

void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    FUZZ_CHECK(fd >= 0);
    size_t done = 0;
    while (done < size) {
        ssize_t n = write(fd, data + done, size - done);
        FUZZ_CHECK(n > 0);
        done += (size_t)n;
    }
    close(fd);
}

void fuzz_check_unchanged(PyObject *before, PyObject *value)
{
    if (!before)
        return;
    int same = PyObject_RichCompareBool(before, value, Py_EQ);
    PyErr_Clear(); /* a value's own __eq__ may raise; that says nothing of the validator */
    FUZZ_CHECK(same != 0);
}
