/* Links only where the compiler has libFuzzer: tests/fuzz/meson.build compiles it with clang
 * -fsanitize=fuzzer to learn whether the harnesses can be built. */
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)data;
    (void)size;
    return 0;
}
