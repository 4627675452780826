// SPDX-License-Identifier: MIT
// Internals shared by the store's files (store*.c): the store itself and the helpers
// that run statements, read results and build parameters.
#ifndef BRQ_GATEWAY_STORE_INT_H
#define BRQ_GATEWAY_STORE_INT_H

#include "store.h"
#include "store_hint.h"
#include "store_sql.h"

#define BRQ_BINARY 1
#define BRQ_TEXT   0

typedef struct brq_policy_cache brq_policy_cache;
typedef struct brq_schema_box   brq_schema_box;

struct brq_store {
	const brq_config *cfg; // borrowed
	char             *texts[BRQ_STMT__COUNT];
	brq_db_stmt       stmts[BRQ_STMT__COUNT];
	brq_policy_cache *pc;     // owned; mutable through the pointer (store_policy.c)
	brq_hints        *hints;  // owned; where this gateway's leased rows are (store_hint.h)
	brq_schema_box   *schema; // owned; mutable through the pointer: a refused schema
};

// The schema box: what a connection that refused the schema found (store_schema.c).
// 0 or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_schema_box_new(brq_schema_box **out);
void              brq_schema_box_free(brq_schema_box *b);
// brq_db_opts.on_connect of every store connection (arg: the brq_store): reads the
// schema; 0 when this build serves it.
int brq_store_schema_on_connect(brq_db *db, void *arg);

// The cache of topics with a policy (store_policy.c). 0 or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_policy_cache_new(brq_policy_cache **out);
void              brq_policy_cache_free(brq_policy_cache *pc);
// True when a claim of topics[0..n) must take the policy path (one of them has a
// policy, or the cache could not be read). May read topic_policy (once per poll
// interval for the whole store).
bool brq_store_policy_applies(brq_store_conn *c, const brq_str *topics, uint32_t n);
// Locks the topic_policy rows of the limited topics among topics[0..n), in topic
// order, in the open transaction.
BRQ_MUSTCHECK int brq_store_policy_lock(brq_store_conn *c, const brq_str *topics, uint32_t n);

// Runs statement st; on success returns 0 and *out (kept by c until brq_store_reset,
// so strings read from it may be borrowed), checking that it has `ncols` columns. On
// failure returns the classified BRQ_E* code (message in c->db.errmsg).
BRQ_MUSTCHECK int brq_store_run(brq_store_conn *c, brq_stmt st, const char *const *values, const int *lengths,
				const int *formats, int ncols, PGresult **out);

// Transaction helpers: begin/commit return 0 or a BRQ_E* code; rollback never fails
// (a broken connection rolls back by itself).
BRQ_MUSTCHECK int brq_store_begin(brq_store_conn *c);
BRQ_MUSTCHECK int brq_store_commit(brq_store_conn *c);
void              brq_store_rollback(brq_store_conn *c);
// Opens a transaction when `need` and the caller has none open: *own says whether
// this did (brq_store_tx_close ends only such a one). 0 or the BEGIN's failure.
BRQ_MUSTCHECK int brq_store_tx_open(brq_store_conn *c, bool need, bool *own);
// Ends what brq_store_tx_open opened: COMMIT when rv is 0, else ROLLBACK. Returns rv,
// or the COMMIT's failure.
BRQ_MUSTCHECK int brq_store_tx_close(brq_store_conn *c, bool own, int rv);

// Inserts jobs[0..n) (res[i]: id, created), resolving key conflicts; a keyed batch
// needs the caller's transaction. 0 or a BRQ_E* code.
BRQ_MUSTCHECK int brq_store_insert(brq_store_conn *c, const brq_job_spec *jobs, uint32_t n,
				   brq_enqueue_result *res);
// The guarded settle statement for items[0..n), inside whatever transaction is open;
// then the chained jobs of applied `done` items (the transaction must be open then).
BRQ_MUSTCHECK int brq_store_settle_rows(brq_store_conn *c, const brq_settle_item *items, uint32_t n,
					brq_store_settled *out, brq_store_chain *chain);

// Finishes array a as the parameter at index k of values/lengths. 0 or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_store_param(brq_pgarr *a, const char **values, int *lengths, int k);

// Begins arrays c->arr[0..n) with element types oids[0..n) (BRQ_OID_*).
void brq_store_arrays_begin(brq_store_conn *c, const uint32_t *oids, int n);
// Runs statement st, as brq_store_run, with arrays c->arr[0..n) as its (binary)
// parameters and NULL for the statement's further ones. BRQ_ENOMEM (message `nomem`)
// when an array cannot be finished.
BRQ_MUSTCHECK int brq_store_run_arrays(brq_store_conn *c, brq_stmt st, int n, int ncols, const char *nomem,
				       PGresult **out);

// Runs statement st whose only parameter is job `id` (text), as brq_store_run.
// BRQ_ENOTFOUND ("job <id> not found") when it returns no row.
BRQ_MUSTCHECK int brq_store_run_by_id(brq_store_conn *c, brq_stmt st, uint64_t id, int ncols, PGresult **out);

// Reads row `row` of a result into *elem, one element of the caller's array (strings
// borrow the result).
typedef void brq_store_row_fn(const PGresult *r, int row, void *elem);
// Every row of r read with `read` into a new array of `size`-byte elements in c's
// arena; *n its length. NULL (and *n = 0) when out of memory.
void *brq_store_read_all(brq_store_conn *c, const PGresult *r, size_t size, brq_store_row_fn *read,
			 uint32_t *n);
// Runs statement st (no parameters) and reads all its rows as brq_store_read_all into
// *out (out: the address of the caller's array pointer, any `T **`) and *n. 0, the
// statement's failure, or BRQ_ENOMEM with message `nomem`; *out is NULL on failure.
BRQ_MUSTCHECK int brq_store_run_all(brq_store_conn *c, brq_stmt st, int ncols, size_t size,
				    brq_store_row_fn *read, const char *nomem, void *out, uint32_t *n);
// The topic of every row of r (TOPIC_COLS) as strings borrowing r, into c's arena: the
// reply of the statements that name the topics they touched (store_reads.c,
// store_upkeep.c). 0 or BRQ_ENOMEM.
BRQ_MUSTCHECK int brq_store_topics_column(brq_store_conn *c, const PGresult *r, brq_str **topics,
					  uint32_t *n);

// Column readers (the value must be non-NULL unless the reader says otherwise).
int64_t   brq_store_int(const PGresult *r, int row, int col);
double    brq_store_double(const PGresult *r, int row, int col);
bool      brq_store_bool(const PGresult *r, int row, int col);
bool      brq_store_is_null(const PGresult *r, int row, int col);
brq_str   brq_store_str(const PGresult *r, int row, int col); // borrows r
brq_state brq_store_state(const PGresult *r, int row, int col);

// Row `row` of a result with JOB_COLS into *out (strings borrow r); a processing job's
// deadlines from cfg's timeouts of its topic.
void brq_store_job_row(const brq_config *cfg, const PGresult *r, int row, brq_job_info *out);

// ---- the order rows are locked in (store_order.c) ----------------------------------------
//
// A batch position and the id of the row it reaches. The statements that write leased
// rows by their items (settle, heartbeat, unclaim) lock each row as they reach it, in
// the order of their arrays (a nested loop driven by unnest: schema_test checks the
// plans). A worker's heartbeat round and its settle of the same leases run at once on
// two connections; in two orders each could wait for a row the other holds, and
// PostgreSQL ended one with "deadlock detected" after a second (deadlock_timeout).
// Every such batch goes in id order, so the later one waits at their first common row.
typedef struct brq_row_ref {
	uint64_t id;
	uint32_t at;
} brq_row_ref;

// Sorts refs[0..m) by id (equal ids in their given order) and writes their positions to
// at[0..m).
void brq_store_in_id_order(brq_row_ref *refs, uint32_t m, uint32_t *at);
// The positions of leases[0..n) in id order, from c's arena (valid until its reset);
// NULL when out of memory.
uint32_t *brq_store_leases_in_id_order(brq_store_conn *c, const brq_lease_ref *leases, uint32_t n);

#endif
