# SPDX-License-Identifier: MIT
"""The one binding to libbrooq-client: its C declarations and the loaded library.

cffi in ABI mode (``ffi.dlopen``): nothing is compiled when the package is installed,
so ``pip install`` needs no compiler and no headers, only the shared library.

Every declaration the package uses is in ``CDEF`` below, copied from
``client/include/brooq/brooq.h``; nothing else in the package declares C types.
The worker path uses opaque handles and accessor functions only; the structs the
producer passes or reads (marked "layout" below) must match the header exactly, and
are the part to update when the library's ABI changes.
"""

from __future__ import annotations

import os

from cffi import FFI

CDEF = r"""
typedef enum brooq_err {
    BROOQ_OK = 0, BROOQ_EINVAL, BROOQ_ENOMEM, BROOQ_ETIMEDOUT, BROOQ_ECONNECT,
    BROOQ_EPROTO, BROOQ_ETOKEN, BROOQ_EINVALID_ARGUMENT, BROOQ_EUNAUTHENTICATED,
    BROOQ_EPERMISSION_DENIED, BROOQ_ENOT_FOUND, BROOQ_EUNAVAILABLE, BROOQ_ETOO_LARGE,
    BROOQ_ERESOURCE_EXHAUSTED, BROOQ_EINTERNAL, BROOQ_ECONFLICT
} brooq_err;
typedef enum brooq_state {
    BROOQ_PENDING = 0, BROOQ_PROCESSING, BROOQ_FAILED, BROOQ_DONE, BROOQ_DEAD, BROOQ_CANCELED
} brooq_state;
typedef enum brooq_cancel_reason {
    BROOQ_CANCEL_NONE = 0, BROOQ_CANCEL_TIMEOUT, BROOQ_CANCEL_OPERATOR,
    BROOQ_CANCEL_LEASE_LOST, BROOQ_CANCEL_MAX_EXECUTION, BROOQ_CANCEL_STOP
} brooq_cancel_reason;

const char *brooq_version(void);
const char *brooq_strerror(brooq_err err);
const char *brooq_last_message(void);
const char *brooq_state_name(brooq_state st);
const char *brooq_cancel_reason_name(brooq_cancel_reason r);

typedef struct brooq_client brooq_client;
typedef void (*brooq_log_fn)(int level, const char *msg, const void *fields, size_t n_fields, void *arg);

/* layout: brooq_client_opts (leading size; fields past it count as zero) */
typedef struct brooq_client_opts {
    size_t size;
    const char *url;
    const char *token_file;
    int timeout_ms;
    brooq_log_fn log;
    void *log_arg;
    const char *tls_ca_file;
    const char *tls_cert_file;
    const char *tls_key_file;
    const char *tls_server_name;
} brooq_client_opts;
brooq_err brooq_client_open(const brooq_client_opts *opts, brooq_client **out);
void brooq_client_close(brooq_client *c);
brooq_err brooq_ping(brooq_client *c, char *server, size_t cap);

/* layout: brooq_job_spec (leading size in every element; arrays passed to brooq_enqueue
   and brooq_job_done_chain) */
typedef struct brooq_job_spec {
    size_t size;
    const char *topic;
    const char *payload;
    size_t payload_len;
    const char *key;
    uint64_t delay_ms;
    int64_t run_at_ms;
    uint32_t max_attempts;
    uint32_t priority;
} brooq_job_spec;
/* layout: brooq_enqueue_result (leading size in every element; filled by brooq_enqueue) */
typedef struct brooq_enqueue_result {
    size_t size;
    uint64_t id;
    bool created;
} brooq_enqueue_result;
brooq_err brooq_enqueue(brooq_client *c, const brooq_job_spec *jobs, size_t n,
                        brooq_enqueue_result *results);

brooq_err brooq_cancel(brooq_client *c, uint64_t id, brooq_state *state, bool *canceled);

/* layout: brooq_attempt_error (library-allocated, reached through brooq_job_info) */
typedef struct brooq_attempt_error {
    uint32_t attempt;
    int64_t at_ms;
    char *error;
} brooq_attempt_error;
/* layout: brooq_job_info (library-allocated, read field by field) */
typedef struct brooq_job_info {
    uint64_t id;
    char *topic;
    char *payload;
    brooq_state state;
    uint32_t attempts;
    uint32_t max_attempts;
    int64_t available_at_ms;
    char *locked_by;
    int64_t locked_until_ms;
    char *last_error;
    char *key;
    int64_t created_at_ms;
    int64_t updated_at_ms;
    int64_t claimed_at_ms;
    int64_t attempt_deadline_ms;
    int64_t max_execution_deadline_ms;
    uint32_t priority;
    char *result;
    uint64_t retry_of;
    uint32_t lost_leases;
    bool has_errors;
    size_t n_errors;
    brooq_attempt_error **errors;
} brooq_job_info;
brooq_err brooq_job_get(brooq_client *c, uint64_t id, brooq_job_info **out);
void brooq_job_info_free(brooq_job_info *j);

/* layout: brooq_list_opts (leading size) */
typedef struct brooq_list_opts {
    size_t size;
    const char *topic;
    bool has_state;
    brooq_state state;
    int64_t created_after_ms;
    int64_t created_before_ms;
    const char *key;
    const char *cursor;
    uint32_t limit;
} brooq_list_opts;
/* layout: brooq_job_page (library-allocated) */
typedef struct brooq_job_page {
    brooq_job_info **jobs;
    size_t n;
    char *next;
} brooq_job_page;
brooq_err brooq_list(brooq_client *c, const brooq_list_opts *o, brooq_job_page **out);
void brooq_job_page_free(brooq_job_page *p);
brooq_err brooq_retry(brooq_client *c, uint64_t id, uint64_t *new_id, bool *created);

/* ---- the worker: opaque handles and accessors only, besides its options ---- */
typedef struct brooq_job_ctx brooq_job_ctx;
typedef struct brooq_worker brooq_worker;
uint64_t brooq_job_id(const brooq_job_ctx *j);
const char *brooq_job_topic(const brooq_job_ctx *j);
const char *brooq_job_payload(const brooq_job_ctx *j, size_t *len);
uint32_t brooq_job_attempts(const brooq_job_ctx *j);
uint32_t brooq_job_max_attempts(const brooq_job_ctx *j);
bool brooq_job_canceled(const brooq_job_ctx *j);
brooq_cancel_reason brooq_job_cancel_reason(const brooq_job_ctx *j);
int64_t brooq_job_deadline(const brooq_job_ctx *j);
void brooq_job_done(brooq_job_ctx *j);
void brooq_job_done_chain(brooq_job_ctx *j, const brooq_job_spec *chain, size_t n);
void brooq_job_done_result(brooq_job_ctx *j, const char *json, size_t len);
void brooq_job_fail(brooq_job_ctx *j, const char *error);
void brooq_job_delay(brooq_job_ctx *j, uint64_t delay_ms);
void brooq_job_preserve(brooq_job_ctx *j, const char *error);
void brooq_job_cancel(brooq_job_ctx *j);
void brooq_job_cancel_error(brooq_job_ctx *j, const char *error);

/* layout: brooq_worker_opts (leading size) */
typedef struct brooq_worker_opts {
    size_t size;
    const char *name;
    int threads;
    uint32_t lease_ms;
    uint32_t wait_ms;
    uint32_t stop_grace_ms;
    uint32_t hung_grace_ms;
    int prefetch_max;
} brooq_worker_opts;
brooq_err brooq_worker_new(brooq_client *c, const brooq_worker_opts *o, brooq_worker **out);
brooq_err brooq_worker_handle_pull(brooq_worker *w, const char *topic);
brooq_err brooq_worker_run(brooq_worker *w);
void brooq_worker_stop(brooq_worker *w);
void brooq_worker_free(brooq_worker *w);
brooq_err brooq_worker_next(brooq_worker *w, int timeout_ms, brooq_job_ctx **job);
void brooq_job_finish(brooq_job_ctx *job);
int brooq_worker_fd(brooq_worker *w);
uint64_t brooq_worker_wait_cancels(brooq_worker *w, uint64_t seen, int timeout_ms);
"""

ffi = FFI()
ffi.cdef(CDEF)

# The soname whose ABI CDEF declares: a library of another soname has other struct
# layouts (libbrooq-client.so.0's job specs had no size field) and is never loaded.
SONAMES = ("libbrooq-client.so.1",)

# The structs CDEF lays out, for the test that compares them with the C header
# (tests/python/test_layout.py: sizeof and every field's offset).
LAYOUT_STRUCTS = ("brooq_client_opts", "brooq_job_spec", "brooq_enqueue_result",
                  "brooq_attempt_error", "brooq_job_info", "brooq_list_opts", "brooq_job_page", "brooq_worker_opts")


def _load():
    """The library: $BROOQ_LIB when set (a path or a name; nothing else is tried, so a
    test of a build tree never loads an installed copy by mistake), else the sonames."""
    forced = os.environ.get("BROOQ_LIB")
    if forced:
        return ffi.dlopen(forced)
    errors = []
    for name in SONAMES:
        try:
            return ffi.dlopen(name)
        except OSError as e:
            errors.append(str(e))
    raise OSError(
        "brooq: libbrooq-client is not installed (tried %s; set BROOQ_LIB to its path): %s"
        % (", ".join(SONAMES), "; ".join(errors))
    )


lib = _load()


def cstr(p) -> str:
    """A C string (borrowed) as str; None for NULL."""
    if p == ffi.NULL:
        return None
    return ffi.string(p).decode("utf-8", "replace")
