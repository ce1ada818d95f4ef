/* SPDX-License-Identifier: MIT */
/* cygprof-capture.h - the capture file: writer and reader API.
 *
 * A capture is one LMDB environment stored in one file (no lock file).
 * Every analysis command reads captures only through this API; nothing else
 * in cygprof opens LMDB.  All values are stored as fixed-width little-endian
 * encodings and all keys as big-endian byte strings (see
 * docs/capture-format.md), so a capture written on one 64-bit little-endian
 * machine reads on another.
 *
 * Error convention: functions return 0 on success and a negative value on
 * failure: -errno for system errors, or one of the CYGPROF_E_* codes below.
 * cygprof_strerror() turns either into a short message.
 *
 * Ownership: arrays and strings returned through out-parameters are owned by
 * the caller and freed with the matching *_free function (or free() where
 * noted).  A capture handle is not thread-safe: use it from one thread.
 */
#ifndef CYGPROF_CAPTURE_H
#define CYGPROF_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CYGPROF_CAPTURE_SCHEMA 8

enum {
	CYGPROF_E_NOTCAPTURE = -20001, /* the file is not a cygprof capture */
	CYGPROF_E_CORRUPT = -20002,    /* truncated or damaged capture */
	CYGPROF_E_VERSION = -20003,    /* written by a newer, unknown schema */
	CYGPROF_E_NOTFOUND = -20004,   /* no such record */
	CYGPROF_E_NOTXN = -20005,      /* commit/abort without begin */
	CYGPROF_E_RDONLY = -20006,     /* write to a capture opened for reading */
	CYGPROF_E_FULL = -20007,       /* disk full */
	CYGPROF_E_ADDRSPACE = -20008,  /* address space limit (ulimit -v) too small */
};

/** A short message for an error code (negative errno or CYGPROF_E_*).  For
 * CYGPROF_E_CORRUPT and CYGPROF_E_VERSION it names what is damaged (or the
 * version) when the last failing call of this thread said so; the string is
 * valid until the next call in this thread. */
const char *cygprof_strerror(int err);

struct cygprof_capture;

/** Start a new capture that will be named path.  The data go to a new file
 * with a unique name in path's directory (".NAME.PID-START.XXXXXX": the
 * writer's pid and start time; such files of NAME whose writer is gone,
 * left by a killed writer, are removed first; created with
 * O_EXCL: never an existing file, never through a symlink); nothing at path
 * changes until cygprof_capture_publish() or cygprof_capture_close().  No
 * lock file is made; the capture's descriptor is close-on-exec.  Errors:
 * -errno (the directory), CYGPROF_E_FULL (no room for the first pages; no
 * file is left), CYGPROF_E_ADDRSPACE (RLIMIT_AS too small for the map).
 * @param[out] out owned; release with cygprof_capture_close() or
 * cygprof_capture_discard(). */
int cygprof_capture_create(const char *path, struct cygprof_capture **out);

/** Rename the new file onto path (rename(2): atomic; whatever was at path
 * is replaced, so the caller decides first that it may be).  After it the
 * capture is visible at path while it is still written.  Idempotent. */
int cygprof_capture_publish(struct cygprof_capture *cap);

/** Give up a capture being written: close it and, unless it was published,
 * remove its file (path is left as it was).  On a reader: close.  NULL is a
 * no-op. */
void cygprof_capture_discard(struct cygprof_capture *cap);

/** Whether path is a cygprof capture: 1 for a regular file that is one
 * (any schema, damaged or not), 0 for anything else (another file, a
 * symlink, a directory, a FIFO, a device), -errno when it cannot be read
 * (-ENOENT when there is nothing).  Never follows a symlink, never blocks. */
int cygprof_capture_probe(const char *path);

/** Open an existing capture read-only.  Creates, writes and locks nothing
 * (works on a full or read-only file system) and maps no more than the
 * file.  Before LMDB reads anything it checks the file structure (meta
 * pages, every B-tree page, overflow runs: see docs/capture-format.md), the
 * magic, the schema version and, for a capture closed by its writer, the
 * count of every DB: a file that is not a capture gives
 * CYGPROF_E_NOTCAPTURE, a truncated or damaged one CYGPROF_E_CORRUPT, a
 * newer schema CYGPROF_E_VERSION (cygprof_strerror() then says what). */
int cygprof_capture_open(const char *path, struct cygprof_capture **out);

/** Open an existing, closed capture (schema 2 or later) to add to it: its
 * file is copied to a new file in path's directory (as for
 * cygprof_capture_create()), checked like cygprof_capture_open() checks, and
 * upgraded to the current schema; puts and appends go to the copy, which
 * cygprof_capture_close() seals and renames onto path (replacing the file
 * there), while cygprof_capture_discard() or any failure leaves path as it
 * was.  Stack ids continue after the capture's; perf samples, off-CPU
 * intervals, counters, meta and records can be added; the timeline,
 * memory event and counter sample streams cannot (-EPERM).  Errors: those of
 * cygprof_capture_open() and cygprof_capture_create(), -EPERM for a capture
 * not closed by its writer (it may still be written) or of schema 1.
 * @param[out] out owned; release with cygprof_capture_close() or
 * cygprof_capture_discard(). */
int cygprof_capture_open_rw(const char *path, struct cygprof_capture **out);

/** What damage was found on this handle (the first; "thread 3 record:
 * checksum mismatch"), NULL when none.  With cap NULL: the detail of the
 * last failing call of this thread (cygprof_capture_open() included). */
const char *cygprof_capture_damage(const struct cygprof_capture *cap);

/** Flush and close.  For a writer: write the pending events, seal (the
 * record counts and transaction id a reader checks), commit, publish if not
 * yet published.  Returns the first error seen.  NULL is a no-op. */
int cygprof_capture_close(struct cygprof_capture *cap);

/** Finish a writer: write the pending events and the seal with what the
 * open batch holds, commit (what cygprof_capture_close() does before it
 * publishes; a stream capture: its close).  The writer takes nothing more;
 * cygprof_capture_close() then publishes and frees.  Returns 0, -EINVAL for
 * a reader, or the first error (after a failed write, see
 * cygprof_capture_end_failed()). */
int cygprof_capture_seal(struct cygprof_capture *cap);

/** Compact a sealed capture: an LMDB file keeps the pages later
 * transactions freed (trees and open event blocks written again at each
 * commit), so that two recordings of one run could differ by half their
 * size.  When at least 1/32 of its pages are free, the live ones are copied
 * (LMDB's compacting copy) into a new file in path's directory, which is
 * checked as cygprof_capture_open() checks a capture and renamed onto the
 * capture's file (path once published; the new file until then): the same
 * records, the same seal, no free page.  Call it after
 * cygprof_capture_seal(), before cygprof_capture_close(); the writer takes
 * nothing more.  Needs room for the copy until the rename.  Returns 0
 * (also when there was too little to gain, and for a stream capture, which
 * has no file: nothing is done), -EINVAL for a capture not sealed (or a
 * reader, a failed write), or the
 * copy's error (CYGPROF_E_FULL on a full disk, -errno, CYGPROF_E_CORRUPT
 * when the copy does not read): the capture then stays as it was, whole,
 * and close publishes it as usual.
 * The environment variable CYGPROF_CAPTURE_COMPACT=0 turns it off
 * (captures keep their free pages; what the test suite compares).
 * @param[out] saved bytes the file lost (0 when nothing was done); may be
 * NULL. */
int cygprof_capture_compact(struct cygprof_capture *cap, uint64_t *saved);

/** End a capture whose write failed.  The first write that loses what its
 * transaction held (a full disk, an I/O error) makes its error the
 * writer's: every later write call returns it at once, so the file keeps
 * exactly what was committed before, consistent.  This gives back the
 * room cygprof_capture_create() holds next to the capture (64 KiB in an
 * unnamed file), drops what the failed write left open and stores the meta
 * key "ended" = why (one line, e.g. "no space left on device at 1.234 s")
 * with the seal in a transaction of its own: readers open the capture as
 * closed, without "complete", and say why it ends early.
 * cygprof_capture_close() then publishes (if not yet) and frees it, and
 * still returns the first error.  Returns 0, -EINVAL when no write failed
 * (or a stream capture, a reader, why empty or with a newline, called
 * twice), or the error of that transaction (the file then stays as the
 * failed write left it: unsealed). */
int cygprof_capture_end_failed(struct cygprof_capture *cap, const char *why);

/** Batch writes: every put between begin and commit lands in one LMDB write
 * transaction.  Puts outside a batch commit on their own. */
int cygprof_capture_begin(struct cygprof_capture *cap);
int cygprof_capture_commit(struct cygprof_capture *cap);

/** Size in bytes of the capture file on disk. */
uint64_t cygprof_capture_file_size(struct cygprof_capture *cap);

/** 1 when a writer was still writing the capture when it was opened: the
 * handle reads a private copy of the writer's last commit (the profile of
 * its last checkpoint, and the events committed up to then), and the meta
 * "complete" is absent.  0 otherwise, and for a writer's handle. */
int cygprof_capture_in_progress(const struct cygprof_capture *cap);

/* ---- streams: the capture's values handed to a callback ---------------------- */
/* The named databases of a capture (docs/capture-format.md), numbered in the
 * order of the seal's "counts". */
enum cygprof_db {
	CYGPROF_DB_META = 0,
	CYGPROF_DB_PROCS = 1,
	CYGPROF_DB_THREADS = 2,
	CYGPROF_DB_TREES = 3,
	CYGPROF_DB_TIMELINE = 4,
	CYGPROF_DB_OBJECTS = 5,
	CYGPROF_DB_SYMBOLS = 6,
	CYGPROF_DB_MEM = 7,
	CYGPROF_DB_STACKS = 8,
	CYGPROF_DB_SITES = 9,
	CYGPROF_DB_COUNTERS = 10,
	CYGPROF_DB_SAMPLES = 11,
	CYGPROF_DB_PSAMPLES = 12,
	CYGPROF_DB_OFFCPU = 13,
	CYGPROF_DB_CPU = 14,
	CYGPROF_DB_LATENCY = 15,
};

/* Where a stream capture's writes go.  put gets every (db, key, value) the
 * writer would store in an LMDB capture, in the same order: the same key
 * bytes and the very value bytes (event blocks zstd-packed, trees and sites
 * packed, as in the file), without the trailing checksum, which the capture
 * that stores the value adds.  begin and commit bracket a batch
 * (cygprof_capture_begin(), cygprof_capture_commit(): the pending event
 * blocks are put before commit); publish, close (the writer's last call,
 * after its last put) and discard mirror the calls of those names.  Each
 * returns 0 or a negative errno / CYGPROF_E_*; the first error is sticky:
 * every later write to the capture returns it at once, and close and
 * discard then call nothing.  Any member but put may be NULL (nothing to
 * do).  The pointers are valid during the call only. */
struct cygprof_capture_stream {
	int (*put)(void *arg, unsigned int db, const void *key, size_t klen, const void *value,
		   size_t vlen);
	int (*begin)(void *arg);
	int (*commit)(void *arg);
	int (*publish)(void *arg);
	int (*close)(void *arg);
	void (*discard)(void *arg);
};

/** Start a capture that is not a file: every write call encodes its records
 * exactly as cygprof_capture_create() does (same checks, batching, blocks
 * and keys) and hands the resulting values to ops (with arg), instead of
 * storing them, unpacked: event blocks as stored zstd frames, trees and
 * call sites raw (docs/capture-format.md "Streams"); put_value packs them
 * as cygprof_capture_create() does.  No file is created; the capture has no reader side (the
 * get_* calls, cursors and cygprof_capture_foreach_event() return
 * -EOPNOTSUPP) and cygprof_capture_file_size() is 0.  ops and arg must
 * outlive the capture.  Errors: -EINVAL (no ops or put), -ENOMEM.
 * @param[out] out owned; release with cygprof_capture_close() or
 * cygprof_capture_discard(). */
int cygprof_capture_create_stream(const struct cygprof_capture_stream *ops, void *arg,
				  struct cygprof_capture **out);

/** Store one value as a stream capture hands it out (db a CYGPROF_DB_*,
 * value without its checksum): into a capture from cygprof_capture_create()
 * it is stored like any put (with its checksum, counted in the seal),
 * packed as that writer packs it (an unpacked event block, tree or call
 * sites value, as a stream capture hands them out; a packed one is stored
 * as it is); into a stream capture it is passed on to its put as it is.  The value is first decoded
 * as a reader decodes it, and the records of a DB must come as a writer
 * makes them: stack nodes and counters with the next id, event blocks of a
 * stream dense from 0 (the last one rewritten or the next one started),
 * their times not going back from the block before, the memory events'
 * stack ids among the stack nodes put, samples of a defined counter
 * (docs/capture-format.md "Streams").  Anything else is refused and nothing
 * is stored, so a capture made of accepted values reads as written.
 * Errors: CYGPROF_E_CORRUPT for a key or value a reader would refuse or a
 * record out of sequence (cygprof_capture_damage(NULL) says which and why),
 * -EPERM for a meta key of the library's own (as cygprof_capture_set_meta())
 * or a capture from cygprof_capture_open_rw(), -EINVAL for an unknown db or
 * an empty or too long key, and the errors of a write.  A stream of event
 * blocks is written by put_value or by the append calls, not by both. */
int cygprof_capture_put_value(struct cygprof_capture *cap, unsigned int db, const void *key,
			      size_t klen, const void *value, size_t vlen);

/* ---- metadata: string key -> string value ------------------------------ */
/* Well-known keys (all written by the collector):
 *   "command"        the recorded command line, arguments separated by ' '
 *   "mode"           "profile", plus "+timeline" and/or "+memory"
 *   "start_time"     wall-clock start, ISO 8601 UTC
 *   "duration_ns"    decimal
 *   "clock"          "tsc" or "monotonic"
 *   "time"           "exact", or "sampled" (record --time=sampled: exact calls, no
 *                    times: every total_ns is 0); absent in older captures: exact
 *   "filters"        the record-time filters, as given
 *   "lost_events"    decimal total of dropped timeline events
 *   "drop_mode"      "block" or "drop"
 *   "hostname", "kernel", "machine"
 *   "rr_ticks"       with record --rr-ticks: "counted: CPU, raw 0xCONFIG" (each
 *                    sample's rr_ticks is the thread's count of rr's counter,
 *                    maybe followed by "; ..." caveats), or "missing: WHY"
 *   "complete"       "1", written last: absent when the recording was interrupted
 *   "ended"          written by cygprof_capture_end_failed() (set_meta refuses it):
 *                    why a capture without "complete" ends early, e.g. "no space
 *                    left on device at 1.234 s"
 *   "shm_full"       present when the shared mapping filled up: how many
 *                    allocations were refused (threads or calls not recorded)
 *   "damaged"        present when the traced program wrote garbage into the
 *                    mapping shared with the collector: one line saying what
 *                    was rejected (the rest of the recording is kept)
 */
int cygprof_capture_set_meta(struct cygprof_capture *cap, const char *key, const char *value);
/** @param[out] value owned, free() it.  CYGPROF_E_NOTFOUND when absent. */
int cygprof_capture_get_meta(struct cygprof_capture *cap, const char *key, char **value);

/* ---- processes ---------------------------------------------------------- */
enum cygprof_end_kind {
	CYGPROF_END_UNKNOWN = 0, /* still running at the end, or status not seen */
	CYGPROF_END_EXIT = 1,    /* exited with end_code */
	CYGPROF_END_SIGNAL = 2,  /* killed by signal end_code */
	CYGPROF_END_EXEC = 3,    /* replaced its image by exec (next image: same pid) */
};

#define CYGPROF_NONE UINT32_MAX

struct cygprof_proc {
	uint32_t idx;        /* capture-wide index, 0-based, dense */
	uint32_t pid;
	uint32_t ppid;
	uint32_t parent_idx; /* index of the parent process or CYGPROF_NONE */
	uint64_t start_ns;   /* relative to the capture start */
	uint64_t end_ns;
	uint32_t end_kind;   /* enum cygprof_end_kind */
	int32_t end_code;
	char *command;       /* command line, arguments separated by ' ' */
	char *exe;           /* path of the executable image */
};

int cygprof_capture_put_proc(struct cygprof_capture *cap, const struct cygprof_proc *p);
/** All processes ordered by idx.  @param[out] procs owned: cygprof_procs_free(). */
int cygprof_capture_get_procs(struct cygprof_capture *cap, struct cygprof_proc **procs, size_t *n);
void cygprof_procs_free(struct cygprof_proc *procs, size_t n);

/* ---- threads ------------------------------------------------------------ */
struct cygprof_thread {
	uint32_t idx;      /* capture-wide index, 0-based, dense */
	uint32_t proc_idx;
	uint32_t tid;
	uint32_t flags;    /* CYGPROF_THREAD_* */
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t calls;    /* function entries recorded */
	uint64_t events;   /* timeline events stored */
	uint64_t lost;     /* timeline events dropped (drop mode / collector gone) */
	uint64_t waits;    /* times the writer waited on a full ring */
	uint64_t wait_ns;  /* total time spent waiting */
	uint64_t unpaired; /* exit hooks with no matching entry (ignored) */
	uint64_t unwound;  /* frames closed by longjmp/exception/exit recovery */
	char name[16];     /* thread name (comm), NUL-terminated */
	/* Optional fields appended later (0 when the capture predates them): */
	uint64_t overflow; /* calls past the depth limit: counted in calls, not in
			    * the tree */
	uint64_t sig_lost; /* calls and allocations of signal handlers that could not
			    * be recorded */
	uint64_t mem_lost; /* allocations and frees not traced (nested in the runtime) */
};

enum {
	CYGPROF_THREAD_ENDED = 1,    /* the thread exited normally */
	CYGPROF_THREAD_CUT = 2,      /* did not end by itself: killed, crashed, exec'd, or
					* still running when its process exited; its open
					* frames were closed at that end */
	CYGPROF_THREAD_FORKED = 4,   /* first thread of a forked child */
	CYGPROF_THREAD_SIGNAL = 8,   /* the calls of signal handlers that interrupted the
					* hooks of the thread with the same tid */
	CYGPROF_THREAD_CLONED = 16,  /* made by a raw clone(), not pthread_create/fork */
	CYGPROF_THREAD_TRIMMED = 32, /* set by the reader, never stored: the record
					* counts more events than its calls make (a
					* capture cut off, or an older collector's); its
					* events are given up to what the calls make
					* (events), the rest left out */
};

int cygprof_capture_put_thread(struct cygprof_capture *cap, const struct cygprof_thread *t);
/** All threads ordered by idx.  @param[out] threads owned: free(). */
int cygprof_capture_get_threads(struct cygprof_capture *cap, struct cygprof_thread **threads,
				size_t *n);

/* ---- calling-context trees (one per thread) ----------------------------- */
/* nodes[0] is the thread's root (fn == 0, parent == CYGPROF_NONE).  Every
 * other node is one call path: its function, the call site it was called
 * from, how often it was entered along this path and its inclusive time. */
struct cygprof_node {
	uint32_t parent;   /* index into the same array, CYGPROF_NONE for the root */
	uint32_t flags;    /* reserved, 0 */
	uint64_t fn;       /* function address (runtime, in its process) */
	uint64_t site;     /* call site address (return address in the caller) */
	uint64_t calls;
	uint64_t total_ns; /* inclusive time on this path */
};

/** Store a thread's tree.  Parents must precede their children. */
int cygprof_capture_put_tree(struct cygprof_capture *cap, uint32_t thread_idx,
			     const struct cygprof_node *nodes, size_t n);
/** @param[out] nodes owned: free().  An empty tree gives n = 0. */
int cygprof_capture_get_tree(struct cygprof_capture *cap, uint32_t thread_idx,
			     struct cygprof_node **nodes, size_t *n);

/* ---- call sites ------------------------------------------------------------ */
/* The calls of each tree node broken down by the call site they were made
 * from (a node is one call path and function; a caller may call the same
 * function from several places).  Every node with calls has at least one
 * entry; the entries of a node add up to its calls and total_ns. */
struct cygprof_callsite {
	uint32_t node;     /* index into the thread's tree */
	uint32_t flags;    /* reserved, 0 */
	uint64_t site;     /* call site: return address in the caller */
	uint64_t calls;
	uint64_t total_ns; /* inclusive time of the calls made from this site */
};

/** Store a thread's call sites (replacing any stored before). */
int cygprof_capture_put_sites(struct cygprof_capture *cap, uint32_t thread_idx,
			      const struct cygprof_callsite *v, size_t n);
/** @param[out] v owned: free().  A capture written before call sites were
 * stored gives one entry per node (its site, calls and total_ns). */
int cygprof_capture_get_sites(struct cygprof_capture *cap, uint32_t thread_idx,
			      struct cygprof_callsite **v, size_t *n);

/* ---- timeline (only with record --timeline) ------------------------------ */
enum cygprof_event_kind {
	CYGPROF_EV_ENTER = 0,
	CYGPROF_EV_EXIT = 1,
	CYGPROF_EV_UNWIND = 2, /* synthetic exit: frame left by longjmp/exception/exit */
};

struct cygprof_event {
	uint64_t ts_ns; /* relative to the capture start, non-decreasing per thread */
	uint32_t node;  /* index into the thread's tree */
	uint32_t kind;  /* enum cygprof_event_kind */
};

/** Append events of one thread, in time order.  The capture encodes them
 * compactly (delta times and node indices as varints, in blocks). */
int cygprof_capture_append_events(struct cygprof_capture *cap, uint32_t thread_idx,
				  const struct cygprof_event *ev, size_t n);

typedef int (*cygprof_event_fn)(const struct cygprof_event *ev, size_t n, void *data);
/** Call fn with consecutive runs of the thread's events in time order; a
 * non-zero return from fn stops the walk and is returned. */
int cygprof_capture_foreach_event(struct cygprof_capture *cap, uint32_t thread_idx,
				  cygprof_event_fn fn, void *data);

/** A pull cursor over one thread's events, a block at a time (a reader
 * that merges threads by time holds one block per thread, not the
 * timeline).  @param[out] cur owned: cygprof_event_cursor_close(). */
struct cygprof_event_cursor;
int cygprof_event_cursor_open(struct cygprof_capture *cap, uint32_t thread_idx,
			      struct cygprof_event_cursor **cur);
/** The next block's events in time order, *n of them at *ev (owned by the
 * cursor, valid until the next call); *n == 0 at the end. */
int cygprof_event_cursor_next(struct cygprof_event_cursor *cur, const struct cygprof_event **ev,
			      size_t *n);
void cygprof_event_cursor_close(struct cygprof_event_cursor *cur);

/** A call open at the start of a timeline block. */
struct cygprof_open_call {
	uint64_t enter_ns; /* when it was entered (before the block) */
	uint32_t node;     /* index into the thread's tree */
	uint32_t reserved;
};

/** Move the cursor so that the next block it gives holds the first event
 * at or after ts_ns (or is the last block): a binary search on the blocks'
 * first times, decoding none of the blocks it skips.  -EOPNOTSUPP (the
 * cursor then starts from the beginning) for a capture of schema 4 or
 * older, whose blocks do not store the calls open at their start. */
int cygprof_event_cursor_seek(struct cygprof_event_cursor *cur, uint64_t ts_ns);
/** The calls open before the first event of the block the last
 * cursor_next() gave, outermost first: *n of them at *calls (owned by the
 * cursor), *depth all of them (a capture stores the outermost
 * CYGPROF_OPEN_CALLS_MAX).  -EOPNOTSUPP for a capture of schema 4 or older,
 * which does not store them; -EINVAL before a block was given. */
int cygprof_event_cursor_open_calls(struct cygprof_event_cursor *cur,
				    const struct cygprof_open_call **calls, size_t *n,
				    uint32_t *depth);
#define CYGPROF_OPEN_CALLS_MAX 1024
/** When the call open at depth level (0: the outermost) at the end of the
 * block the last cursor_next() gave, entered at enter_ns, ends (its exit
 * or unwind event): found by a binary search on the open calls of the
 * blocks after it, decoding about log2(blocks) of them; the cursor does
 * not move.  CYGPROF_E_NOTFOUND when the timeline ends first (or the call
 * is deeper than the stored open calls); -EOPNOTSUPP before schema 5. */
int cygprof_event_cursor_exit(struct cygprof_event_cursor *cur, uint32_t level,
			      uint64_t enter_ns, uint64_t *exit_ns);

/* ---- objects and symbols: what decodes the capture elsewhere ------------- */
struct cygprof_object {
	uint32_t idx;
	uint32_t proc_idx;
	uint64_t start;        /* lowest mapped address of the object */
	uint64_t end;          /* highest mapped address + 1 */
	uint64_t bias;         /* load bias: runtime address - ELF virtual address */
	uint32_t build_id_len; /* 0 when the object has none */
	uint8_t build_id[32];
	char *path;
};

int cygprof_capture_put_object(struct cygprof_capture *cap, const struct cygprof_object *o);
/** All objects ordered by idx.  @param[out] objs owned: cygprof_objects_free(). */
int cygprof_capture_get_objects(struct cygprof_capture *cap, struct cygprof_object **objs,
				size_t *n);
void cygprof_objects_free(struct cygprof_object *objs, size_t n);

/* One function the capture refers to, in one process. */
struct cygprof_symbol {
	uint32_t proc_idx;
	uint32_t object_idx; /* CYGPROF_NONE when no object contains it */
	uint64_t addr;       /* runtime start address of the function */
	uint64_t size;       /* 0 when unknown */
	char *name;          /* demangled for C++; "0x..." when no symbol covers it */
};

int cygprof_capture_put_symbol(struct cygprof_capture *cap, const struct cygprof_symbol *s);
/** The symbols of one process, sorted by addr.
 * @param[out] syms owned: cygprof_symbols_free(). */
int cygprof_capture_get_symbols(struct cygprof_capture *cap, uint32_t proc_idx,
				struct cygprof_symbol **syms, size_t *n);
void cygprof_symbols_free(struct cygprof_symbol *syms, size_t n);

/** Find the symbol covering addr in a sorted array (addr in [s.addr, s.addr+size),
 * or the nearest preceding when size is 0).  NULL when none. */
const struct cygprof_symbol *cygprof_symbols_lookup(const struct cygprof_symbol *syms, size_t n,
						    uint64_t addr);

/* ---- memory (record --memory) ---------------------------------------------- */
/* Every allocation and free of every thread, in the thread's time order, and
 * the stack stash their stacks refer to.  Frees carry no stack: analysis
 * attributes a free to the stack that allocated the block. */

enum cygprof_mem_op {
	CYGPROF_MEM_ALLOC = 0,
	CYGPROF_MEM_FREE = 1,
};

/* The API call that made the event (realloc is a FREE of the old block
 * followed by an ALLOC of the new one, both with fn REALLOC). */
enum cygprof_mem_fn {
	CYGPROF_FN_MALLOC = 0,
	CYGPROF_FN_CALLOC,
	CYGPROF_FN_REALLOC,
	CYGPROF_FN_REALLOCARRAY,
	CYGPROF_FN_POSIX_MEMALIGN,
	CYGPROF_FN_ALIGNED_ALLOC,
	CYGPROF_FN_MEMALIGN,
	CYGPROF_FN_VALLOC,
	CYGPROF_FN_PVALLOC,
	CYGPROF_FN_FREE,
	CYGPROF_FN_NEW,          /* operator new, all variants */
	CYGPROF_FN_NEW_ARRAY,    /* operator new[], all variants */
	CYGPROF_FN_DELETE,       /* operator delete, all variants */
	CYGPROF_FN_DELETE_ARRAY, /* operator delete[], all variants */
	CYGPROF_FN_COUNT
};

struct cygprof_mem_event {
	uint64_t ts_ns; /* relative to the capture start, non-decreasing per thread */
	uint64_t addr;  /* block address */
	uint64_t size;  /* bytes the program asked for (ALLOC); 0 for FREE */
	uint32_t stack; /* stack stash id of the allocation (ALLOC); 0 for FREE */
	uint8_t op;     /* enum cygprof_mem_op */
	uint8_t fn;     /* enum cygprof_mem_fn */
	uint16_t flags; /* reserved, 0 */
};

/** Append memory events of one thread, in time order (encoded compactly:
 * column by column in blocks, frees referring to their allocation; from
 * 0.005 bytes per event in a malloc/free loop to 1.5-3 on random heaps).
 * A reader gets ts_ns rounded down to 10 us, 100 us or 1 ms (chosen per
 * block) while only one thread may have memory events, exact (ns) once
 * more than one has appended some or cygprof_capture_mem_threads() said
 * more may: a reader merges the threads by time.
 * -EINVAL (and nothing appended) for time going backwards, an unknown op or
 * fn, or a FREE with a non-zero size or stack. */
int cygprof_capture_append_mem(struct cygprof_capture *cap, uint32_t thread_idx,
			       const struct cygprof_mem_event *ev, size_t n);

/** How many threads of the recorded program(s) may have memory events: a
 * writer that knows more than one thread exists, before appending the
 * events it drained, says so, and every memory block closed from then on
 * keeps its times in ns.  Coarser times are safe only while no other thread
 * can have an event between two of one thread's (the merge by time would
 * order them wrongly); the count of threads that appended is not enough: a
 * thread's first events may come to the writer after the other thread's
 * block closed.  Never lowers the count. */
void cygprof_capture_mem_threads(struct cygprof_capture *cap, uint32_t threads);

/* A cursor over one thread's memory events in time order, reading the
 * capture block by block (memory use does not grow with the run length).
 * Any number of cursors may be open on one handle at once (for a merge over
 * all threads); the handle must outlive them.  A cursor holds no LMDB
 * transaction between calls: on a writer's handle it sees what was appended
 * before it was opened (the thread's pending block is written then). */
struct cygprof_mem_cursor;

/** @param[out] cur owned: cygprof_mem_cursor_close().  A thread without
 * memory events gives a cursor that is at its end. */
int cygprof_mem_cursor_open(struct cygprof_capture *cap, uint32_t thread_idx,
			    struct cygprof_mem_cursor **cur);
/** Read the next event: 1 when one was read, 0 at the end, <0 on error. */
int cygprof_mem_cursor_next(struct cygprof_mem_cursor *cur, struct cygprof_mem_event *ev);
void cygprof_mem_cursor_close(struct cygprof_mem_cursor *cur);

/** Number of memory events stored for a thread (0 when none). */
int cygprof_capture_mem_count(struct cygprof_capture *cap, uint32_t thread_idx, uint64_t *n);

/* The stack stash: a trie of frames from the outermost frame inwards, so
 * shared prefixes are stored once.  A stack is named by the id of its
 * innermost frame; following parent links leads to the outermost one. */
enum cygprof_frame_kind {
	CYGPROF_FRAME_FN = 0, /* a function entry address (from the call tree) */
	CYGPROF_FRAME_RA = 1, /* a return address (from unwinding, or a call site) */
	CYGPROF_FRAME_IP = 2, /* an instruction pointer: a sample's own frame (schema 4) */
};

struct cygprof_stack_node {
	uint32_t id;       /* 1-based, dense */
	uint32_t parent;   /* 0 for an outermost frame */
	uint32_t proc_idx; /* the process whose addresses these are */
	uint32_t kind;     /* enum cygprof_frame_kind */
	uint64_t addr;
};

/** Store stash nodes; ids must be new, parents stored before children
 * (earlier in this call or in a previous one).  Ids are dense and in order:
 * the first node of a call has the id after the last one stored, and each
 * next node the id after that.  -EINVAL (and nothing stored) otherwise, or
 * for parent >= id or an unknown kind.  Call it with thousands of nodes
 * inside a batch rather than node by node. */
int cygprof_capture_put_stacks(struct cygprof_capture *cap, const struct cygprof_stack_node *v,
			       size_t n);
/** All stash nodes ordered by id (v[i].id == i + 1).  CYGPROF_E_CORRUPT
 * when the ids are not dense, a parent is not smaller than its id or a
 * kind is unknown.  @param[out] v owned: free(). */
int cygprof_capture_get_stacks(struct cygprof_capture *cap, struct cygprof_stack_node **v,
			       size_t *n);

/* ---- counters (record --counters, --memdump) ------------------------------ */
/* Named series of (time, value) samples: the system's /proc/meminfo, each
 * process's /proc/PID/statm and CPU time, and the memdump API's subsystems.
 * Times are ns from the capture start, on the clock of every other event. */

enum cygprof_counter_unit {
	CYGPROF_UNIT_BYTES = 0,
	CYGPROF_UNIT_NS = 1,
	CYGPROF_UNIT_COUNT = 2, /* a plain number (blocks, events) */
};

struct cygprof_counter {
	uint32_t id;       /* dense from 0, in the order they were put */
	uint32_t proc_idx; /* the process it belongs to; CYGPROF_NONE: the system's */
	uint32_t unit;     /* enum cygprof_counter_unit */
	uint32_t flags;    /* reserved, 0 */
	char *name;        /* "meminfo/MemFree", "statm/resident", "memdump/Cache", ... */
};

struct cygprof_sample {
	uint64_t t_ns; /* from the capture start, non-decreasing per counter */
	int64_t value; /* its 64 bits are an unsigned quantity: cast to uint64_t */
};

/** Define a counter; its id must be the next one (0, 1, ...), its name
 * non-empty.  -EINVAL otherwise. */
int cygprof_capture_put_counter(struct cygprof_capture *cap, const struct cygprof_counter *c);
/** All counters ordered by id (none: n = 0).  @param[out] v owned:
 * cygprof_counters_free(). */
int cygprof_capture_get_counters(struct cygprof_capture *cap, struct cygprof_counter **v,
				 size_t *n);
void cygprof_counters_free(struct cygprof_counter *v, size_t n);
/** Append samples of a defined counter, in time order (-EINVAL, nothing
 * appended, for time going backwards or an unknown counter). */
int cygprof_capture_append_samples(struct cygprof_capture *cap, uint32_t counter_id,
				   const struct cygprof_sample *s, size_t n);
/** All samples of a counter in time order (none: n = 0).  @param[out] s
 * owned: free(). */
int cygprof_capture_get_samples(struct cygprof_capture *cap, uint32_t counter_id,
				struct cygprof_sample **s, size_t *n);

/* ---- samples (record --sample, import-perf; schema 4) ---------------------- */
/* perf samples of the recorded threads, on the capture's clock, and the
 * intervals each thread spent off CPU (from context-switch records). */

enum {
	CYGPROF_SAMPLE_IMPORTED = 1, /* from `cygprof import-perf`, not recorded */
	CYGPROF_SAMPLE_KERNEL = 2,   /* the sample hit kernel code (the stack is the user part) */
};

struct cygprof_psample {
	uint64_t t_ns;       /* from the capture start, non-decreasing per call of append */
	uint64_t weight_ns;  /* the CPU time it stands for (the event's period in ns) */
	uint64_t rr_ticks;   /* retired conditional branches of the thread at the
			      * sample, UINT64_MAX when not counted */
	uint32_t thread_idx; /* the capture's thread, CYGPROF_NONE when unknown */
	uint32_t pid, tid;   /* as the kernel saw them */
	uint32_t stack;      /* stash id of its call chain, innermost frame an
			      * CYGPROF_FRAME_IP; 0 when none */
	uint32_t flags;      /* CYGPROF_SAMPLE_* */
	uint32_t pad;        /* 0 */
};

/* struct cygprof_offcpu.flags */
enum {
	CYGPROF_OFFCPU_WAIT = 1, /* not the program's: the thread waited for cygprof's
				  * collector (its timeline ring was full; schema 8) */
};

struct cygprof_offcpu {
	uint64_t start_ns, end_ns; /* from the capture start; start <= end */
	uint32_t thread_idx;       /* CYGPROF_NONE when unknown */
	uint32_t tid;
	uint32_t stack;            /* stash id of where it went off CPU, 0 when unknown */
	uint32_t flags;            /* CYGPROF_OFFCPU_* */
};

/** Append samples (any threads, in time order within the call).  -EINVAL
 * (nothing appended) for time going backwards or non-zero pad. */
int cygprof_capture_append_psamples(struct cygprof_capture *cap,
				    const struct cygprof_psample *s, size_t n);
/** All samples in time order (none: n = 0).  @param[out] s owned: free(). */
int cygprof_capture_get_psamples(struct cygprof_capture *cap, struct cygprof_psample **s,
				 size_t *n);
/** Append off-CPU intervals (ordered by start within the call). */
int cygprof_capture_append_offcpu(struct cygprof_capture *cap, const struct cygprof_offcpu *o,
				  size_t n);
/** All off-CPU intervals ordered by start.  @param[out] o owned: free(). */
int cygprof_capture_get_offcpu(struct cygprof_capture *cap, struct cygprof_offcpu **o,
			       size_t *n);

/* ---- CPU samples and off-CPU time per call path (schema 6) ----------------- */
/* What the runtime measured inside each thread (record --cpu-freq): CPU-time
 * samples charged to the node of the thread's tree that was current (no
 * stack walk: the runtime's shadow stack), and the time the thread spent off
 * the CPU, from its context switches, charged to the node whose frame was
 * innermost when it left the CPU.  All figures are SELF figures of a node:
 * nothing of its descendants. */

/* struct cygprof_cpu.method: how the thread was sampled */
enum {
	CYGPROF_CPU_OFF = 0,   /* not sampled */
	CYGPROF_CPU_PERF = 1,  /* a perf task-clock event signalling the thread */
	CYGPROF_CPU_TIMER = 2, /* a POSIX CPU-time timer: at most one per scheduler tick */
};

/* struct cygprof_cpu.flags */
enum {
	CYGPROF_CPU_SWITCHES = 1, /* its context switches were tracked (wait_ns, blocked_ns) */
};

/* One thread's record (key: its thread index). */
struct cygprof_cpu {
	uint32_t thread_idx;
	uint32_t method;        /* CYGPROF_CPU_* */
	uint32_t flags;         /* CYGPROF_CPU_SWITCHES */
	uint32_t pad;           /* 0 */
	uint64_t period_ns;     /* the sampling period asked for, in ns of the thread's CPU
				 * time (0: not sampled) */
	uint64_t cpu_ns;        /* the thread's CPU time as the runtime read it at its end
				 * (or its process's), 0 when not known */
	uint64_t samples;       /* samples taken: on its nodes, in the profiler, unplaced */
	uint64_t overhead;      /* of them, taken inside the profiler's hooks */
	uint64_t unplaced;      /* of them, with no node to charge */
	uint64_t wait_ns;       /* off-CPU time charged to its nodes: runnable, waiting for
				 * a CPU (preempted) ... */
	uint64_t blocked_ns;    /* ... and blocked */
	uint64_t unplaced_ns;   /* off-CPU time with no frame to charge */
	uint64_t switches;      /* context-switch records read */
	uint64_t switches_lost; /* records overwritten before they were read */
};

/* The figures of one node of the thread's tree (only nodes with one). */
struct cygprof_cpu_node {
	uint32_t node;       /* index in the thread's tree */
	uint32_t pad;        /* 0 */
	uint64_t samples;    /* CPU samples in it (its function, or code it called that
			      * is not instrumented) */
	uint64_t overhead;   /* samples inside the profiler while it was current */
	uint64_t wait_ns;    /* off-CPU, preempted, that began while it was innermost */
	uint64_t blocked_ns; /* off-CPU, blocked, that began while it was innermost */
};

/** Store the record of thread c->thread_idx and its nodes' figures (n of
 * them, strictly increasing node indices; replaces an earlier put).
 * -EINVAL (nothing stored) for nodes out of order or non-zero pads;
 * -EPERM on a capture reopened from one older than schema 6. */
int cygprof_capture_put_cpu(struct cygprof_capture *cap, const struct cygprof_cpu *c,
			    const struct cygprof_cpu_node *v, size_t n);
/** The record of a thread: CYGPROF_E_NOTFOUND when it has none (not
 * sampled, or a capture older than schema 6).
 * @param[out] v owned: free() (NULL when n is 0). */
int cygprof_capture_get_cpu(struct cygprof_capture *cap, uint32_t thread_idx,
			    struct cygprof_cpu *c, struct cygprof_cpu_node **v, size_t *n);

/* ---- latency histograms per call path (schema 8) ---------------------------- */
/* Each node of a thread's tree counts its calls by inclusive duration, in
 * log-linear buckets (the runtime's: 8 sub-buckets per power of two, a
 * bucket at most 1/8 of its lower bound wide), with the exact least and
 * greatest call.  Times are as measured (no compensation): the buckets'
 * bounds are the runtime's converted to ns. */

/* struct cygprof_lat_row.kind */
enum {
	CYGPROF_LAT_BUCKET = 0, /* count calls took at least lo_ns and less than hi_ns */
	CYGPROF_LAT_RANGE = 1,  /* the node's calls in its buckets (count), the
				 * shortest (lo_ns) and the longest (hi_ns), exact;
				 * first of the node's rows */
};

/* One thread's record (key: its thread index). */
struct cygprof_latency {
	uint32_t thread_idx;
	uint32_t sub;        /* sub-buckets per power of two (8) */
	uint64_t unit_ns;    /* the buckets' resolution at the bottom (ns, rounded) */
};

/* One row: a node's range, then its buckets with calls in increasing lo_ns. */
struct cygprof_lat_row {
	uint32_t node; /* index in the thread's tree */
	uint32_t kind; /* CYGPROF_LAT_* */
	uint64_t lo_ns;
	uint64_t hi_ns;
	uint64_t count;
};

/** Store the histograms of thread h->thread_idx (replaces an earlier put):
 * rows ordered by node, each node's CYGPROF_LAT_RANGE row first.  -EINVAL
 * (nothing stored) for rows out of order or a bad kind; -EPERM on a
 * capture reopened from one older than schema 8. */
int cygprof_capture_put_latency(struct cygprof_capture *cap, const struct cygprof_latency *h,
				const struct cygprof_lat_row *v, size_t n);
/** The histograms of a thread: CYGPROF_E_NOTFOUND when it has none (a
 * capture older than schema 8, or recorded with --time=sampled).
 * @param[out] v owned: free() (NULL when n is 0). */
int cygprof_capture_get_latency(struct cygprof_capture *cap, uint32_t thread_idx,
				struct cygprof_latency *h, struct cygprof_lat_row **v, size_t *n);

#ifdef __cplusplus
}
#endif
#endif
