#include <stdio.h>
#include <string.h>

#include "ic_commands.h"
#include "ic_config.h"
#include "ic_report.h"
#include "ic_session.h"
#include "ic_text.h"

static void ic_print_protocols(uint32_t set, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int p = 0; p < IC_PROTOCOL_COUNT && used < size; p++) {
        if (set & (1u << p))
            used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? " " : "",
                                     ic_protocol_id(p));
    }
    if (!buf[0])
        snprintf(buf, size, "-");
}

static void ic_print_text(const struct ic_session *session)
{
    const struct ic_catalog *catalog = &session->catalog;
    char exports[256], imports[256];
    char text[1200]; /* a library's own text, escaped for the terminal */

    printf("interopcheck %s: Python %s (%s), DLPack header %s\n", IC_VERSION,
           session->python_version, session->python, IC_DLPACK_VERSION);
    printf("probes from:");
    for (int i = 0; i < session->ndirs; i++)
        printf(" %s", session->dirs[i]);
    printf("\n\n%-18s %-16s %-12s %s\n", "library", "version", "devices", "exports / imports");
    for (int i = 0; i < catalog->count; i++) {
        const struct ic_library *lib = &catalog->libs[i];
        if (lib->state != IC_LIBRARY_LOADED) {
            const char *status = lib->state == IC_LIBRARY_IMPORT_CRASH ? "crashed"
                                 : lib->state == IC_LIBRARY_INVALID   ? "bad probe"
                                                                      : "unavailable";
            ic_text_for_terminal(text, sizeof(text), lib->error);
            printf("%-18s %-16s %-12s %s\n", lib->name, "-", status, text);
            continue;
        }
        ic_print_protocols(lib->exports, exports, sizeof(exports));
        ic_print_protocols(lib->imports, imports, sizeof(imports));
        char devices[64] = "";
        for (int k = 0; k < IC_KIND_COUNT; k++) {
            if (lib->devices & (1u << k))
                snprintf(devices + strlen(devices), sizeof(devices) - strlen(devices), "%s%s",
                         devices[0] ? "," : "", ic_device_kind_name(k));
        }
        ic_text_for_terminal(text, sizeof(text), lib->version);
        printf("%-18s %-16s %-12s exports: %s\n", lib->name, text,
               devices[0] ? devices : "no device", exports);
        printf("%-18s %-16s %-12s imports: %s\n", "", "", "", imports);
        const char *gpu_note = ic_library_note(lib, "cuda");
        if (!(lib->devices & (1u << IC_KIND_CUDA)) && gpu_note) {
            ic_text_for_terminal(text, sizeof(text), gpu_note);
            printf("%-18s %-16s %-12s cuda: %s\n", "", "", "", text);
        }
        if (lib->error[0]) {
            ic_text_for_terminal(text, sizeof(text), lib->error);
            printf("%-18s %-16s %-12s note: %s\n", "", "", "", text);
        }
    }
    printf("%-18s %-16s %-12s imports: every protocol (the tool's own C consumer)\n",
           IC_REFERENCE_CONSUMER, IC_VERSION, "built in");
    printf("\ndevices:\n");
    for (int k = 0; k < IC_KIND_COUNT; k++)
        printf("  %-6s %s: %s\n", ic_device_kind_name(k),
               session->devices.available & (1u << k) ? "available" : "unavailable",
               session->devices.detail[k]);
    printf("Calls behind each protocol: interopcheck list --json\n");
}

int ic_cmd_list(const struct ic_options *opts)
{
    struct ic_session session;
    char err[2048];
    if (ic_session_open(&session, opts, err, sizeof(err)) < 0) {
        fprintf(stderr, "interopcheck: %s\n", err);
        return IC_EXIT_USAGE;
    }
    struct ic_libset all = {.all = true};
    ic_session_discover(&session, &all, false);
    int status = IC_EXIT_OK;
    if (opts->json) {
        cJSON *json = cJSON_CreateObject();
        cJSON_AddItemToObject(json, "tool", ic_session_tool_json());
        cJSON_AddItemToObject(json, "python", ic_session_python_json(&session));
        cJSON_AddItemToObject(json, "libraries", ic_report_libraries(&session.catalog));
        cJSON_AddItemToObject(json, "devices", ic_report_devices(&session.devices));
        char *text = cJSON_Print(json);
        if (text) {
            printf("%s\n", text);
            cJSON_free(text);
        } else {
            status = IC_EXIT_USAGE;
        }
        cJSON_Delete(json);
    } else {
        ic_print_text(&session);
    }
    ic_session_close(&session);
    return status;
}

int ic_cmd_version(void)
{
    printf("interopcheck %s\n", IC_VERSION);
    printf("built with Python %s (%s)\n", IC_BUILD_PYTHON_VERSION, IC_BUILD_PYTHON);
    printf("DLPack header %s (%s)\n", IC_DLPACK_VERSION, IC_DLPACK_HEADER);
    printf("compiler %s, %s build\n", IC_COMPILER, IC_BUILD_TYPE);
    return IC_EXIT_OK;
}
