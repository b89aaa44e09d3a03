/*
 * ic_arrow_stream: the Arrow PyCapsule interface's streams (__arrow_c_stream__, protocols.md
 * §6): an ArrowArrayStream in a capsule named arrow_array_stream, read to its end and each of
 * its arrays validated as the arrow protocol validates one (ic_arrow.h). The protocol
 * "arrow_stream", into a consumer such as polars.Series or pyarrow.chunked_array.
 *
 * Contract
 * - The stream struct is read through the guard and moved out of its capsule; its callbacks
 *   are then called (get_schema once, get_next until a released array ends the stream). A
 *   callback that returns an error or leaves its out struct released is a finding against the
 *   producer (arrow.stream). A callback pointer that is not code crashes the worker: the supervisor
 *   records that case as the producer's crash.
 * - Scope: the arrow protocol's (1-D primitive arrays, no nulls). A struct type of one field
 *   (a one-column table or record batch) stands for that field. The stream's arrays, in order,
 *   are the export: one array is viewed where it lies; several, or bit-packed booleans, are
 *   joined into one copy (a bytes object the stream keeps, a byte per boolean), so their
 *   contents are compared but whether they share the producer's memory is not; no array is
 *   an empty export of the schema's type.
 * - A library consumer gets a replay: a stream of interopcheck's whose get_schema asks the
 *   producer's stream again and whose get_next hands out the arrays read before, each with an
 *   instrumented release callback (ic_arrow_watch). The replay's own release is counted (it
 *   must be called exactly once, by the consumer that moved it or by its capsule); its first
 *   call releases what the consumer never took and then the producer's stream, whose release
 *   must mark it released.
 * - Ownership: everything read from the producer belongs to one struct ic_arrow_stream, kept
 *   alive by the proxy (or interopcheck's consumer's handle) and by the replay until the
 *   consumer released it; whichever lets go last frees it. A release call after both let go
 *   cannot be counted.
 */
#ifndef IC_ARROW_STREAM_H
#define IC_ARROW_STREAM_H

#include "ic_arrow.h"

#define IC_ARROW_STREAM_CAPSULE "arrow_array_stream"

/* Arrays read from one stream at most. A longer stream is legal: its case is not compared
 * (a warning says why), as the matrix's arrays are a few dozen elements. */
#define IC_ARROW_STREAM_MAX_CHUNKS 4096

#endif
