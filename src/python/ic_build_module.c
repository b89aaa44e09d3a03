/*
 * interopcheck._build: a Python extension module installed with the probes, holding the build
 * facts of the interopcheck program installed beside it: `python` (the minor it embeds) and
 * `version`.
 *
 * Why it exists: meson-python tags a wheel by its extension modules, and a wheel holding only
 * the program would be tagged py3-none, installable into any Python, where the program then
 * fails to start (it links one minor's libpython). With this module the wheel is tagged for the
 * minor it was built for (cp312-cp312, ...), and pip refuses it elsewhere.
 *
 * Contract: importing it creates the module with its two string constants; a failure leaves
 * the import's exception set and no module. It owns nothing afterwards.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "ic_config.h"

static struct PyModuleDef ic_build_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "interopcheck._build",
    .m_doc = "Build facts of the interopcheck program installed with this package.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__build(void)
{
    PyObject *module = PyModule_Create(&ic_build_module);
    if (!module)
        return NULL;
    if (PyModule_AddStringConstant(module, "python", IC_BUILD_PYTHON_VERSION) < 0 ||
        PyModule_AddStringConstant(module, "version", IC_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
