/*
 * sluice.h — the stable C ABI between the sluice host (sluiced) and its plugins.
 *
 * A plugin is a shared library built only against this header (and, for C++
 * authors, the header-only layer sluice.hpp built on it). It exports exactly one
 * symbol, SL_PLUGIN_ENTRY_SYMBOL, which returns a descriptor of what it provides:
 * node types (sources, operators, sinks) and named functions (map, predicate,
 * reducer). The host passes a function table (sl_host_api) for everything a
 * plugin needs from it: values, emitting downstream, timers and the clock,
 * logging, errors and calling other plugins' functions. Plugins never link
 * against the host.
 *
 * Rules that keep the ABI stable:
 *  - Only plain C types cross: fixed-width integers, pointers with lengths,
 *    opaque handles, POD structs, function pointers. Enums travel as int32_t.
 *  - Every struct that crosses starts with `uint32_t struct_size`. Readers touch
 *    only fields inside the size they were given; fields are appended, never
 *    reordered or removed. A changed function gets a `_v2` sibling.
 *  - Ownership is written on every function: "borrows", "returns owned (release
 *    with X)", "takes ownership".
 *  - No exception or longjmp crosses in either direction. Errors are sl_status
 *    codes plus a message set with sl_host_api.set_error.
 *
 * Threading: unless a function says "thread-safe", it may be called only on the
 * executor thread of the task that owns the sl_context, from inside a callback
 * the host made on that thread.
 *
 * Since: ABI 1.0 for every symbol unless stated otherwise.
 */
#ifndef SLUICE_SLUICE_H
#define SLUICE_SLUICE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Versions and export macros                                               */
/* ------------------------------------------------------------------------ */

/** ABI major version: a plugin built for another major is refused. */
#define SL_ABI_MAJOR 1
/** ABI minor version: grows when fields or functions are appended.
 *  1.1: checkpoints, io watches, operator chaining, gauges (see "Since 1.1").
 *  1.2: value constraints on parameters (sl_param.min_int ...) and the optional
 *       validate callbacks of node types and functions (see "Since 1.2").
 *  1.3: sl_message.key_group and sl_node_type.map_keys (see "Since 1.3").
 *  1.4: keyed state that moves with its key group: SL_NODE_KEYED_STATE,
 *       sl_node_type.restore_group and drop_group, sl_host_api.key_groups_assigned
 *       and key_groups_revoked (see "Since 1.4").
 *  1.5: event time: watermarks (sl_host_api.emit_watermark, sl_node_type.
 *       on_watermark, SL_NODE_WATERMARKS) and side outputs (sl_node_type.
 *       side_outputs, sl_host_api.emit_side) (see "Since 1.5").
 *  1.6: sl_host_api.post_owned (a post whose argument the host releases when
 *       the callback never runs), SL_HAS_FIELD (see "Since 1.6").
 *  1.7: sl_validate_init.environment: validate callbacks may check the machine
 *       (files, directories) when the host asks (see "Since 1.7").
 *  A plugin built against an older header loads in a newer host of the same
 *  major; one built against a newer header sets sl_plugin.min_host_minor to
 *  the oldest minor whose additions it needs (older hosts then refuse it). */
#define SL_ABI_MINOR 7

/** Since 1.6 (the macro only; it works on every struct of every minor). True
 *  when `ptr`, a pointer to a struct of type `type` handed over by the other
 *  side, is large enough to hold `field`: the struct_size it carries covers
 *  the field. Check it before reading a field appended after the ABI minor
 *  the other side may have been built with, e.g.
 *    if (SL_HAS_FIELD(host, sl_host_api, emit_side) && host->emit_side) ...
 *  A field it does not cover is absent: read it as 0 or NULL. */
#define SL_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof((ptr)->field))

/** Name of the single symbol every plugin exports (see sl_plugin_entry_fn). */
#define SL_PLUGIN_ENTRY_SYMBOL "sluice_plugin_v1"

/** Marks the entry point as exported even when the plugin builds with hidden
 *  visibility (recommended: only the entry symbol should be visible). */
#if defined(_WIN32)
#define SL_EXPORT __declspec(dllexport)
#else
#define SL_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------ */
/* Status codes                                                             */
/* ------------------------------------------------------------------------ */

/** A status code (one of SL_OK, SL_CANCELLED, ...), carried as int32_t.
 *  The numbering follows the canonical codes of gRPC/absl. */
typedef int32_t sl_status;

#define SL_OK 0                  /**< Success. */
#define SL_CANCELLED 1           /**< The task is stopping; stop producing. */
#define SL_UNKNOWN 2             /**< An error with no better code. */
#define SL_INVALID_ARGUMENT 3    /**< Bad input or config (the element or the call). */
#define SL_NOT_FOUND 5           /**< A named thing (function, key, file) does not exist. */
#define SL_ALREADY_EXISTS 6      /**< A name is already taken. */
#define SL_PERMISSION_DENIED 7   /**< Refused for safety or by the OS. */
#define SL_RESOURCE_EXHAUSTED 8  /**< Back-pressure or out of memory/space. */
#define SL_FAILED_PRECONDITION 9 /**< Called in a state that does not allow it. */
#define SL_OUT_OF_RANGE 11       /**< A value outside what the callee accepts. */
#define SL_UNIMPLEMENTED 12      /**< The callee does not offer this operation. */
#define SL_INTERNAL 13           /**< A bug or broken invariant. */
#define SL_UNAVAILABLE 14        /**< Transient failure; retrying later may succeed. */
#define SL_DATA_LOSS 15          /**< Unrecoverable data corruption or loss. */

/** Name of a status code ("OK", "INVALID_ARGUMENT", ...). Returns a static
 *  string; "UNRECOGNIZED" for codes this header does not know. Thread-safe. */
static inline const char* sl_status_name(sl_status status) {
  switch (status) {
    case SL_OK: return "OK";
    case SL_CANCELLED: return "CANCELLED";
    case SL_UNKNOWN: return "UNKNOWN";
    case SL_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case SL_NOT_FOUND: return "NOT_FOUND";
    case SL_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case SL_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case SL_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case SL_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case SL_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case SL_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case SL_INTERNAL: return "INTERNAL";
    case SL_UNAVAILABLE: return "UNAVAILABLE";
    case SL_DATA_LOSS: return "DATA_LOSS";
    default: return "UNRECOGNIZED";
  }
}

/* ------------------------------------------------------------------------ */
/* Values                                                                   */
/* ------------------------------------------------------------------------ */

/** Kinds of value (sl_value.kind). */
#define SL_KIND_NULL 0
#define SL_KIND_BOOL 1
#define SL_KIND_INT 2    /**< int64_t, inline. */
#define SL_KIND_FLOAT 3  /**< double, inline. */
#define SL_KIND_STRING 4 /**< UTF-8 text, in a host block. */
#define SL_KIND_BYTES 5  /**< Opaque bytes, in a host block (may wrap a foreign buffer). */
#define SL_KIND_ARRAY 6  /**< Ordered values, in a host block. */
#define SL_KIND_OBJECT 7 /**< Keyed values in insertion order, in a host block. */

/** Opaque, immutable, reference-counted storage owned by the host. */
typedef struct sl_block sl_block;

/** A value: 16 bytes. Null, bool, int and float live inline and never
 *  allocate; string, bytes, array and object point to an immutable host block.
 *
 *  A variable of type sl_value is either "owned" (holds one reference, which
 *  its holder must drop with sl_host_api.value_release) or "borrowed" (valid
 *  for the duration of the call that handed it over). Inline kinds need no
 *  release, but releasing them is harmless, so code may treat all kinds alike.
 *  Build inline values with the SL_NULL/sl_bool/sl_int/sl_float helpers. */
typedef struct sl_value {
  int32_t kind;      /**< SL_KIND_*. */
  uint32_t reserved; /**< Zero. */
  union {
    int64_t i;       /**< SL_KIND_INT; SL_KIND_BOOL (0 or 1). */
    double f;        /**< SL_KIND_FLOAT. */
    sl_block* block; /**< String, bytes, array, object. */
  } as;
} sl_value;

/** A read-only view of UTF-8 text or bytes: `data` is not NUL-terminated. */
typedef struct sl_str {
  const char* data;
  size_t size;
} sl_str;

/** The null value. */
static inline sl_value sl_null(void) {
  sl_value v;
  v.kind = SL_KIND_NULL;
  v.reserved = 0;
  v.as.i = 0;
  return v;
}
/** An inline bool value. */
static inline sl_value sl_bool(int b) {
  sl_value v = sl_null();
  v.kind = SL_KIND_BOOL;
  v.as.i = b ? 1 : 0;
  return v;
}
/** An inline int64 value. */
static inline sl_value sl_int(int64_t i) {
  sl_value v = sl_null();
  v.kind = SL_KIND_INT;
  v.as.i = i;
  return v;
}
/** An inline float64 value. */
static inline sl_value sl_float(double f) {
  sl_value v = sl_null();
  v.kind = SL_KIND_FLOAT;
  v.as.f = f;
  return v;
}
/** True when the value keeps its data in a host block (needs retain/release). */
static inline int sl_value_is_boxed(sl_value v) { return v.kind >= SL_KIND_STRING; }

/* ------------------------------------------------------------------------ */
/* Messages and batches                                                     */
/* ------------------------------------------------------------------------ */

/** No event timestamp (sl_message.timestamp_ns). */
#define SL_NO_TIMESTAMP INT64_MIN

/** One element of a stream: a value plus optional key, headers and event time.
 *  Messages travel in arrays, so this struct has no struct_size: its layout is
 *  frozen for ABI 1, and sl_batch carries the array stride (message_size) so a
 *  later ABI could append fields without breaking older readers. */
typedef struct sl_message {
  sl_value value;       /**< The element. */
  sl_value key;         /**< Null when the message has no key (Kafka key, group key). */
  sl_value headers;     /**< Null or an object of string/bytes values. */
  int64_t timestamp_ns; /**< Event time in ns since the Unix epoch, or SL_NO_TIMESTAMP. */
  union {
    /** The field's name before 1.3, when it was always zero; kept so that code
     *  written against an older header still compiles. Same storage as key_group. */
    uint64_t reserved;
    /** Since 1.3: the key group the message belongs to: 0 for none, else 1 + the
     *  input partition it was read from (a partitioned source such as from_kafka
     *  sets it; co-partitioned topics share groups by partition number). Operators
     *  that derive a message from another keep it (copy the message, as the SDK's
     *  operators do); keyed state (aggregate) is kept and checkpointed per key
     *  group, so that it can move with its partition (docs/SCALING.md). A message
     *  built from scratch sets 0; a host before 1.3 gives 0 everywhere. */
    uint64_t key_group;
  };
} sl_message;

/** A contiguous run of messages handed to an operator or sink. Borrowed by the
 *  callee for the duration of the call: values it keeps must be retained. */
typedef struct sl_batch {
  uint32_t struct_size;  /**< sizeof(sl_batch). */
  uint32_t message_size; /**< Stride of `messages` in bytes (sizeof(sl_message) today). */
  const sl_message* messages;
  size_t count;
} sl_batch;

/** The i-th message of a batch, honouring its stride. */
static inline const sl_message* sl_batch_at(const sl_batch* batch, size_t i) {
#ifdef __cplusplus /* C++ casts, so plugins built with -Wold-style-cast -Werror compile */
  return reinterpret_cast<const sl_message*>(reinterpret_cast<const char*>(batch->messages) +
                                             i * batch->message_size);
#else
  return (const sl_message*)((const char*)batch->messages + i * batch->message_size);
#endif
}

/* ------------------------------------------------------------------------ */
/* Config declared as data                                                  */
/* ------------------------------------------------------------------------ */

/** Types of config parameters (sl_param.type). The host checks every node's
 *  TOML table against its declared parameters before anything runs. */
#define SL_PARAM_BOOL 1
#define SL_PARAM_INT 2
#define SL_PARAM_FLOAT 3 /**< Accepts TOML integers too. */
#define SL_PARAM_STRING 4
#define SL_PARAM_ARRAY 5    /**< Any TOML array. */
#define SL_PARAM_TABLE 6    /**< A TOML table (becomes an object). */
#define SL_PARAM_ANY 7      /**< Any TOML value. */
#define SL_PARAM_FUNCTION 8 /**< A named function; see sl_host_api.function_bind. */
#define SL_PARAM_DURATION 9 /**< An integer number of milliseconds (int). */

/** Flags on a parameter (sl_param.flags). */
#define SL_PARAM_REQUIRED 1u /**< The key must be present (then default_json is NULL). */
/** Since 1.2: value constraints, checked by the host at validate (`sluiced
 *  validate` reports a violation with file:line:col, the node id and the key;
 *  the plugin's create never sees such a value). Each names the fields it
 *  uses. They are read only from an sl_param of the 1.2 size (a plugin built
 *  before gave these bits no meaning); a host older than 1.2 ignores them, so
 *  create must still check what it relies on when the plugin's min_host_minor
 *  is below 2. */
#define SL_PARAM_NON_EMPTY 2u      /**< STRING, ARRAY, TABLE: not empty ("", [], {}). */
#define SL_PARAM_HAS_MIN 4u        /**< INT, DURATION: >= min_int; FLOAT: >= min_float. */
#define SL_PARAM_HAS_MAX 8u        /**< INT, DURATION: <= max_int; FLOAT: <= max_float. */
#define SL_PARAM_MIN_EXCLUSIVE 16u /**< With HAS_MIN on a FLOAT: > min_float (e.g. "positive"). */
/** STRING: one of `choices`. FUNCTION: `choices` lists the function kinds the
 *  node can use ("map|predicate", "reducer"); a named function of another kind
 *  is refused at validate, except that a list with "map" also accepts a function
 *  callable with one argument (min_arity <= 1). Lua functions always pass. */
#define SL_PARAM_HAS_CHOICES 32u

/** One declared config key of a node type or named function.
 *
 *  A SL_PARAM_FUNCTION parameter accepts a function name (string) or an inline
 *  table `{ name = "add", args = { value = 1 } }`; with the string form, the
 *  function's arguments come from the sibling key `args` for the parameter named
 *  `function`, and from `<name>_args` for any other. The host validates the name
 *  and the arguments, then hands the plugin the normalised object
 *  `{ name = "...", args = { ... } }` to pass to function_bind. Instead of a name
 *  the config may give Lua code (`lua = "x + 1"` for the parameter `function`,
 *  `<name>_lua` for any other; docs/LUA.md): the host then hands over
 *  `{ lua = "...", file = "...", line = N }`, which function_bind accepts the
 *  same way, so plugins need not know which kind of function they got. */
typedef struct sl_param {
  uint32_t struct_size;     /**< sizeof(sl_param). */
  const char* name;         /**< Key in the node's TOML table. */
  int32_t type;             /**< SL_PARAM_*. */
  uint32_t flags;           /**< SL_PARAM_REQUIRED, ... */
  const char* default_json; /**< Default as JSON text, or NULL for "no default" (key absent). */
  const char* doc;          /**< One-line description, shown by `sluiced plugins`. */
  /* Since 1.2: constraints, read only when struct_size covers them and the
   * matching SL_PARAM_HAS_* flag is set. The host refuses, at load, a plugin
   * whose default breaks its own constraint. */
  int64_t min_int;     /**< SL_PARAM_HAS_MIN on INT / DURATION. */
  int64_t max_int;     /**< SL_PARAM_HAS_MAX on INT / DURATION. */
  double min_float;    /**< SL_PARAM_HAS_MIN on FLOAT. */
  double max_float;    /**< SL_PARAM_HAS_MAX on FLOAT. */
  const char* choices; /**< SL_PARAM_HAS_CHOICES: the allowed strings (or function
                            kinds), separated by '|' ("fail|skip|dead_letter"). */
} sl_param;

/* ------------------------------------------------------------------------ */
/* Host function table                                                      */
/* ------------------------------------------------------------------------ */

/** Per-node (or per-function-call) context owned by the host. Valid from
 *  the node's create until its destroy. */
typedef struct sl_context sl_context;

/** A named function bound to its arguments (see function_bind). */
typedef struct sl_bound_function sl_bound_function;

/** Log levels (sl_host_api.log). */
#define SL_LOG_TRACE 0
#define SL_LOG_DEBUG 1
#define SL_LOG_INFO 2
#define SL_LOG_WARN 3
#define SL_LOG_ERROR 4

/** Source states returned by sl_node_type.poll through its out parameter. */
#define SL_SOURCE_MORE 0 /**< More is ready: poll again as soon as downstream allows. */
#define SL_SOURCE_IDLE 1 /**< Nothing now: poll again after wake() or a timer fires. */
#define SL_SOURCE_DONE 2 /**< Exhausted: never polled again. */

/** Kinds of named function (sl_function_def.kind). */
#define SL_FUNCTION_MAP 1       /**< out = f(x) (or f(x1, ..., xn) for starmap). */
#define SL_FUNCTION_PREDICATE 2 /**< out = bool f(x). */
#define SL_FUNCTION_REDUCER 3   /**< out = f(state, x): the new state. */

/** A callback run on a task's executor by sl_host_api.post. */
typedef void (*sl_task_fn)(sl_context* ctx, void* arg);

/** A release callback: frees `private_data`. For a wrapped foreign buffer
 *  (bytes_wrap) and, Since 1.6, for the argument of post_owned. */
typedef void (*sl_release_fn)(void* private_data);

/** The host's services, handed to the plugin's entry point. The table lives
 *  as long as the plugin is loaded. Check struct_size before using a field
 *  appended after the ABI minor the plugin was built against. */
typedef struct sl_host_api {
  uint32_t struct_size; /**< sizeof(sl_host_api) in the host. */
  uint32_t abi_major;   /**< The host's SL_ABI_MAJOR. */
  uint32_t abi_minor;   /**< The host's SL_ABI_MINOR. */

  /* -- errors and logging ------------------------------------------------ */

  /** Attach an error message to ctx; the callback then returns its status.
   *  Copies `msg`; a later call replaces the earlier message. The host logs it
   *  with the node id and type. */
  void (*set_error)(sl_context* ctx, const char* msg, size_t len);
  /** Log a line under the node's name (ctx may be NULL: logged under the
   *  plugin being loaded). Copies `msg`. Thread-safe. */
  void (*log)(sl_context* ctx, int32_t level, const char* msg, size_t len);

  /* -- values: reference counting and construction ------------------------ */

  /** Add a reference to a boxed value (no-op for inline kinds). Thread-safe. */
  void (*value_retain)(sl_value v);
  /** Drop a reference; the block is freed with the last one. Thread-safe. */
  void (*value_release)(sl_value v);
  /** A new string (copies `data`). Returns owned; release with value_release.
   *  The host does not validate UTF-8. Thread-safe. */
  sl_value (*string_create)(const char* data, size_t size);
  /** New bytes (copies `data`). Returns owned. Thread-safe. */
  sl_value (*bytes_create)(const void* data, size_t size);
  /** Bytes that reference a foreign buffer without copying it: `release`
   *  (may be NULL) is called with `private_data` once the last reference drops,
   *  on whatever thread drops it. Returns owned. Thread-safe. */
  sl_value (*bytes_wrap)(const void* data, size_t size, sl_release_fn release, void* private_data);
  /** A new array of `count` items. Borrows `items` (retains each). Returns owned.
   *  Thread-safe. */
  sl_value (*array_create)(const sl_value* items, size_t count);
  /** A new object. Borrows `keys` and `values` (copies keys, retains values);
   *  a repeated key keeps its first position and its last value. Returns owned.
   *  Thread-safe. */
  sl_value (*object_create)(const sl_str* keys, const sl_value* values, size_t count);

  /* -- values: reading (all borrow their arguments; all thread-safe) -------- */

  /** Text of a string or bytes value; {NULL, 0} for other kinds. Borrowed: valid
   *  while the value is. */
  sl_str (*value_str)(sl_value v);
  /** Number of items (array), entries (object) or bytes (string/bytes); 0 otherwise. */
  size_t (*value_size)(sl_value v);
  /** Item `index` of an array, or the value of entry `index` of an object.
   *  Borrowed. Null when out of range. */
  sl_value (*value_at)(sl_value v, size_t index);
  /** Key of entry `index` of an object. Borrowed. {NULL, 0} when out of range. */
  sl_str (*object_key_at)(sl_value v, size_t index);
  /** Value under `key` in an object. Borrowed. Returns 1 and sets *out when
   *  found, 0 otherwise (then *out is null). */
  int32_t (*object_get)(sl_value v, const char* key, size_t key_size, sl_value* out);
  /** Total order over values (null < bool < numbers < string < bytes < array
   *  < object; ints and floats compare by numeric value). Returns <0, 0, >0. */
  int32_t (*value_compare)(sl_value a, sl_value b);
  /** Hash consistent with value_compare() == 0. */
  uint64_t (*value_hash)(sl_value v);

  /* -- JSON --------------------------------------------------------------- */

  /** Parse one JSON document into *out (owned). On error returns
   *  SL_INVALID_ARGUMENT with the reason set on ctx (ctx may be NULL). */
  sl_status (*json_parse)(sl_context* ctx, const char* text, size_t size, sl_value* out);
  /** Serialise a value as compact JSON. Returns an owned string value
   *  (bytes are written as base64 strings). Thread-safe. */
  sl_value (*json_dump)(sl_value v);

  /* -- emitting downstream (executor thread only) ------------------------- */

  /** Deliver `count` messages to the node's consumers, depth-first in config
   *  order, before returning. Borrows `messages`: the caller keeps its
   *  references and releases them as usual. Returns SL_CANCELLED when the task
   *  is stopping (stop producing and return), or the first error of a consumer
   *  (already reported by the host; return it unchanged). */
  sl_status (*emit)(sl_context* ctx, const sl_message* messages, size_t count);
  /** Like emit, for bare values (no key, headers or timestamp). */
  sl_status (*emit_values)(sl_context* ctx, const sl_value* values, size_t count);

  /* -- time: the host's clock (virtual under `sluiced test`) --------------- */

  /** Current time in ns since the Unix epoch, from the task's clock. */
  int64_t (*now_ns)(sl_context* ctx);
  /** Arm timer `timer_id` (any value the node chooses) to fire once after
   *  `delay_ns`; re-arming an armed id moves it. on_timer is then called on
   *  the executor. */
  sl_status (*timer_start)(sl_context* ctx, uint64_t timer_id, int64_t delay_ns);
  /** Disarm timer `timer_id`; no-op when not armed. */
  void (*timer_cancel)(sl_context* ctx, uint64_t timer_id);

  /* -- other threads ------------------------------------------------------ */

  /** Run fn(ctx, arg) on the node's executor soon. Thread-safe. Returns
   *  SL_CANCELLED (fn will not run) once the task is stopping; the caller then
   *  still owns `arg`. A post accepted just before the task stops (or fails,
   *  or while a checkpoint holds the node's callbacks) may never run, and
   *  nothing tells the caller: `arg` must not own resources that only fn
   *  frees. Use post_owned (Since 1.6) for an `arg` that owns memory. */
  sl_status (*post)(sl_context* ctx, sl_task_fn fn, void* arg);
  /** Tell the host that an idle source has data: it will be polled again.
   *  Thread-safe. */
  void (*wake)(sl_context* ctx);

  /* -- back-pressure (executor thread only) -------------------------------- */

  /** A sink (or buffering operator) that cannot take more sets `full` to 1; the
   *  task then stops polling the sources upstream of it (those feeding it, directly
   *  or through other nodes; sources of unrelated branches go on) until it sets 0. */
  void (*set_backpressure)(sl_context* ctx, int32_t full);

  /* -- named functions (executor thread only) ------------------------------ */

  /** Bind a function named in config: `spec` (borrowed) is the normalised
   *  `{ name, args }` (or `{ lua, file, line }`) object of a SL_PARAM_FUNCTION
   *  parameter, or a string name. Lua functions report SL_FUNCTION_MAP as their
   *  kind: call them with the arity you need (a reducer: acc, x). `ctx` is the
   *  binding node's: names resolve in the plugins its graph was loaded with.
   *  On success *out is owned by the caller; release with function_release.
   *  Errors (unknown name, bad args) are set on ctx. */
  sl_status (*function_bind)(sl_context* ctx, sl_value spec, sl_bound_function** out);
  /** The function's kind (SL_FUNCTION_*). */
  int32_t (*function_kind)(const sl_bound_function* fn);
  /** Call with `argc` arguments (borrowed). On success *out is owned by the
   *  caller. On failure the message is set on the binding node's context. */
  sl_status (*function_call)(sl_bound_function* fn, const sl_value* argv, uint32_t argc,
                             sl_value* out);
  /** Call the one-argument form on `count` inputs (borrowed), writing `count`
   *  owned outputs to `out`. Uses the function's batch form when it has one. On
   *  failure no output is owned by the caller. */
  sl_status (*function_call_batch)(sl_bound_function* fn, const sl_value* in, size_t count,
                                   sl_value* out);
  /** Release a binding made by function_bind. NULL is allowed. */
  void (*function_release)(sl_bound_function* fn);

  /* -- identity ----------------------------------------------------------- */

  /** The node's id in the config (e.g. "words"). Borrowed; valid as ctx. */
  sl_str (*node_id)(sl_context* ctx);

  /* -- Since 1.1 ---------------------------------------------------------- */

  /** Back-pressure on one input of a multi-input node (a zip whose buffer for
   *  input `input_index` is full): while set, the host stops polling the
   *  sources that feed only that input, so the other inputs can catch up.
   *  Sources that also feed another input of the node keep running (pausing
   *  them could never let the node drain). Clear it with full = 0. Use
   *  set_backpressure to pause every source upstream of the node. Task thread
   *  only. */
  void (*set_input_backpressure)(sl_context* ctx, uint32_t input_index, int32_t full);

  /** Wait for a file descriptor on the task's own event loop (network
   *  sources: no thread of their own). When `fd` is ready for any of `events`
   *  (SL_IO_READ | SL_IO_WRITE), the node's on_io(watch_id, ready) runs once on
   *  the executor; call io_watch again to keep waiting. The fd stays owned by
   *  the plugin and must be non-blocking; io_unwatch before closing it. Task
   *  thread only. */
  sl_status (*io_watch)(sl_context* ctx, int fd, uint32_t events, uint64_t watch_id);
  /** Stop waiting for watch `watch_id` (no-op when not armed). */
  void (*io_unwatch)(sl_context* ctx, uint64_t watch_id);

  /* -- checkpoints (Since 1.1; docs/CHECKPOINTING.md) ---------------------- */

  /** A sink answers sl_node_type.checkpoint_prepare(epoch): `status` SL_OK
   *  says everything the sink received before that prepare call is durable
   *  (fsynced, acknowledged by the broker, in the open transaction); any
   *  other status says it cannot be (set_error first: the host fails the task
   *  with that message and the epoch is not stored). Call it exactly once per
   *  prepare, either inside checkpoint_prepare or later (e.g. from a delivery
   *  report handed to the task with post). Task thread only; a call for an
   *  epoch that is not being prepared is ignored with a warning. */
  void (*checkpoint_ready)(sl_context* ctx, uint64_t epoch, sl_status status);

  /* -- values: copy-on-write fast path (Since 1.1) ------------------------- */

  /** Set the value of entry `index` (insertion order, as object_key_at) of
   *  object `obj` IN PLACE, when the caller holds the only reference to `obj`
   *  (so nobody can observe the change: values stay immutable to everyone
   *  else). Returns 1 when done: it took ownership of `value` and released the
   *  entry's old value. Returns 0 and changes nothing (the caller still owns
   *  `value`) when `obj` is shared, not an object, or `index` is out of range:
   *  build a new object instead. For reducers whose state is a large object
   *  (count_by), this turns an O(keys) copy per element into an O(1) update.
   *  Executor thread of the reference's holder. */
  int32_t (*object_set_unique)(sl_value obj, size_t index, sl_value value);

  /* -- plugin-reported gauges (Since 1.1) ---------------------------------- */

  /** Set a gauge of the node, shown on the admin endpoint's /metrics as
   *  `sluice_node_<name>{pipeline="P",node="ID",type="T",<labels>} value`
   *  (e.g. name "kafka_consumer_lag", labels "topic=t,partition=3").
   *  `name`: [a-zA-Z_][a-zA-Z0-9_]*. `labels`: empty, or comma-separated
   *  key=value pairs; keys [a-zA-Z_][a-zA-Z0-9_]* (not "pipeline", "node",
   *  "type", nor starting with "__"); a value is every byte up to the next
   *  comma (it cannot hold a comma; the host escapes it for Prometheus). Each
   *  distinct (name, labels) is one series; `value` NaN removes the series
   *  (e.g. a revoked partition's lag). The same series reported by several
   *  tasks of the node is shown as their sum. An invalid name or labels is
   *  ignored with a warning. Task thread only; meant for changes per poll or
   *  per second (it takes a small lock), not per element. */
  void (*gauge_set)(sl_context* ctx, const char* name, size_t name_len, const char* labels,
                    size_t labels_len, double value);

  /* -- values: copy-on-write fast path, continued (Since 1.1) -------------- */

  /** Set `key` (copied) to `value` in the object `*obj` IN PLACE, adding the
   *  key after the last entry when absent, when the caller holds the only
   *  reference to `*obj` (as object_set_unique). The object may move to a
   *  larger block: then `*obj` is updated (still the caller's one reference)
   *  and the old block is gone; room grows by doubling, so adding keys one at a
   *  time costs O(1) amortised per key. Returns 1 when done: it took ownership
   *  of `value` (and released the key's old value). Returns 0 and changes
   *  nothing (the caller still owns `value`) when `*obj` is shared, not an
   *  object, or memory ran out: build a new object instead. For reducers whose
   *  state is an object with many distinct keys (count_by over user ids), this
   *  turns the O(keys) copy per new key into amortised O(1). Executor thread of
   *  the reference's holder. */
  int32_t (*object_put_unique)(sl_value* obj, const char* key, size_t key_size, sl_value value);

  /* -- values: reading without a call per item (Since 1.1) ----------------- */

  /** The items of array `v` as one contiguous, read-only run of
   *  value_size(v) values. Borrowed: valid while `v` is. NULL when `v` is not
   *  an array or is empty. A plugin that reads every item of large or many
   *  arrays (sum of a window) does one call instead of one value_at per item.
   *  Thread-safe. */
  const sl_value* (*array_items)(sl_value v);

  /* -- key groups (Since 1.4; docs/SCALING.md) ----------------------------- */

  /** Since 1.4. A partitioned source (from_kafka with a group) says that this
   *  task now owns key groups `groups[0..count)` (1 + each newly assigned
   *  partition). Before this returns, the host hands every keyed node of the
   *  task (SL_NODE_KEYED_STATE, the caller included) each group's state from
   *  the newest committed checkpoint that holds the group, whichever daemon or
   *  task wrote it (restore_group), or an empty start when none does; and it
   *  claims the groups, so that checkpoints of a member that lost them (a
   *  zombie) never win over this task's. The first call of a task also drops
   *  the groups restored at start that it does not name (they moved while the
   *  pipeline was down). `groups` is borrowed. Without checkpoints: SL_OK, no
   *  effect. Task thread only, from the source's own callbacks (its rebalance
   *  handling inside poll), before it reads the groups' records. Non-OK (after
   *  the host set the error) when the store cannot be read: fail the source. */
  sl_status (*key_groups_assigned)(sl_context* ctx, const uint32_t* groups, size_t count);
  /** Since 1.4. This task no longer owns these key groups (partitions revoked
   *  or lost): every keyed node drops them (drop_group), and the next owner
   *  restores them from the checkpoint. `groups` is borrowed. Task thread only. */
  sl_status (*key_groups_revoked)(sl_context* ctx, const uint32_t* groups, size_t count);

  /* -- event time (Since 1.5; docs/EVENT_TIME.md) -------------------------- */

  /** Since 1.5. Advance the node's output watermark to `watermark_ns`: the
   *  node promises that the messages it emits from now on have an event time
   *  (sl_message.timestamp_ns) above it, or are late. A value not above the
   *  current one is ignored (watermarks only rise). Before returning, the host
   *  hands it to the consumers depth-first, as emit does with messages, so a
   *  watermark never overtakes the messages emitted before it: each consumer's
   *  input watermark becomes the minimum over its inputs that carry watermarks
   *  (see SL_NODE_WATERMARKS), and when that rose, its on_watermark runs (or,
   *  without one, the host forwards it as the consumer's output watermark).
   *  SL_WATERMARK_END is reserved to the host (an output that ended). Returns
   *  as emit does. Executor thread only. */
  sl_status (*emit_watermark)(sl_context* ctx, int64_t watermark_ns);
  /** Since 1.5. Like emit, on side output `output` (an index into the node
   *  type's side_outputs), which other nodes read as "ID.<name>" in their
   *  inputs ("window.late"). Messages on a side output nobody reads are counted
   *  and logged, then dropped. SL_INVALID_ARGUMENT for an index out of range.
   *  Borrows `messages`. Executor thread only. */
  sl_status (*emit_side)(sl_context* ctx, uint32_t output, const sl_message* messages,
                         size_t count);

  /* -- other threads, owned arguments (Since 1.6) --------------------------- */

  /** Since 1.6. As post, but the host takes ownership of `arg` when it
   *  returns SL_OK: it calls release(arg) exactly once, after fn(ctx, arg)
   *  returned, or instead of fn when fn will never run (the task stopped or
   *  failed first, or it shut down with the post still queued). release may
   *  run on any thread, also after the node's destroy: it must free `arg` and
   *  touch nothing else of the node. `release` may be NULL (then this is post).
   *  On any other status (SL_CANCELLED once the task is stopping) fn and
   *  release are not called and the caller still owns `arg`. Thread-safe. */
  sl_status (*post_owned)(sl_context* ctx, sl_task_fn fn, void* arg, sl_release_fn release);
} sl_host_api;

/** io_watch events. */
#define SL_IO_READ 1u
#define SL_IO_WRITE 2u

/* ------------------------------------------------------------------------ */
/* Node types                                                               */
/* ------------------------------------------------------------------------ */

/** Roles of node types (sl_node_type.role). */
#define SL_ROLE_SOURCE 1
#define SL_ROLE_OPERATOR 2
#define SL_ROLE_SINK 3

/** Flags on a node type (sl_node_type.flags). */
/** Has state the checkpoint must capture: snapshot and restore are set. The
 *  host refuses a node type whose flags and callbacks disagree (the flag
 *  without both callbacks, or snapshot or restore without the flag, whose
 *  state would never be saved). */
#define SL_NODE_STATEFUL 1u
/** Since 1.4. With SL_NODE_STATEFUL: the state is kept per key group
 *  (sl_message.key_group), so that a group can move alone with its partition.
 *  snapshot returns an object whose member "groups" is an object mapping each
 *  key group, in decimal ("3"), to that group's state (other members are kept
 *  with the node's own task and do not move); restore_group and drop_group are
 *  set. The host cuts snapshots apart by group and joins them again. */
#define SL_NODE_KEYED_STATE 2u
/** Since 1.5. The node makes watermarks of its own (event_time): it calls
 *  emit_watermark whatever its inputs carry. An input carries watermarks when
 *  a node of this kind is upstream of it (through main outputs); the host
 *  takes a node's input watermark as the minimum over those inputs only, so a
 *  stream with no event time anywhere upstream does not hold the others back.
 *  A node with no input that carries watermarks gets SL_WATERMARK_END once all
 *  its inputs ended, and no watermark before. */
#define SL_NODE_WATERMARKS 4u

/** Since 1.5. No watermark yet (the lowest). */
#define SL_NO_WATERMARK INT64_MIN
/** Since 1.5. The watermark of an output that ended: nothing more comes, so
 *  every event-time window closes. Only the host sets it. */
#define SL_WATERMARK_END INT64_MAX

/** Unlimited number of inputs (sl_node_type.max_inputs). */
#define SL_INPUTS_UNLIMITED (-1)

/** What the host hands to sl_node_type.create. Borrowed for the call. */
typedef struct sl_node_init {
  uint32_t struct_size;    /**< sizeof(sl_node_init) in the host. */
  const sl_host_api* host; /**< The host table; lives as long as the plugin. */
  sl_context* ctx;         /**< The node's context; valid until destroy returns. */
  sl_value config;         /**< Object of validated params with defaults filled in.
                                Borrowed: retain what you keep. */
  uint32_t input_count;    /**< Number of inputs wired to the node. */
  uint32_t task_index;     /**< Which task (0..task_count-1) runs this instance. */
  uint32_t task_count;     /**< Number of parallel instances of the graph. */
  /* Since 1.1 (check struct_size before reading): */
  const sl_str* input_ids; /**< input_count ids of the inputs, in config order (e.g.
                                "clicks", or "parse.dead_letter" for an error
                                output). Borrowed; valid until destroy. */
  /* Since 1.1, checkpoints (check struct_size before reading; appended for the
   * Kafka plugin, which must know from the start whether it may commit
   * offsets on its own and needs a stable transactional.id): */
  sl_str pipeline;        /**< The pipeline's name (config `name`). Borrowed; valid
                               until destroy. A host that fills these two fields
                               sets pipeline.data non-NULL (NULL: it does not say). */
  uint32_t checkpointing; /**< 1 when the pipeline has a [checkpoint] table: nodes
                               then make progress visible (offset commits,
                               transactions) only in checkpoint_commit. */
} sl_node_init;

/** Since 1.2. How a validate callback reports one problem: `key` is the
 *  config key at fault (a declared param name, or for a function's args the
 *  arg name; may be empty for the node as a whole), `msg` says what is wrong
 *  and what would be valid, without the node id or key (the host adds
 *  file:line:col, the node id and the key). Both are copied. */
typedef void (*sl_report_fn)(void* report_arg, const char* key, size_t key_len, const char* msg,
                             size_t msg_len);

/** Since 1.2. What the host hands to sl_node_type.validate and
 *  sl_function_def.validate. Borrowed for the call. */
typedef struct sl_validate_init {
  uint32_t struct_size;    /**< sizeof(sl_validate_init) in the host. */
  const sl_host_api* host; /**< For the value functions only: there is no context. */
  sl_value config;         /**< The node's config, exactly as create will get it (params
                                checked against their types and constraints, defaults
                                filled in, functions normalised), or a function's args. */
  sl_str node_id;          /**< The node's id in config. */
  uint32_t input_count;    /**< Inputs wired to the node (0 for functions). */
  const sl_str* input_ids; /**< input_count ids, in config order (NULL when 0). */
  uint32_t task_count;     /**< [runtime] tasks: how many instances create will make. */
  uint32_t checkpointing;  /**< As sl_node_init.checkpointing. */
  sl_str pipeline;         /**< The pipeline's name (config `name`; may be empty). */
  sl_report_fn report;     /**< Call once per problem found. */
  void* report_arg;        /**< Pass to report. */
  /** Since 1.7. 1 when the host also asks for the checks that need this machine as the
   *  pipeline will run on it, so that a config that validates does not fail at start:
   *  a file that start will read exists and is readable, the directory of a file it
   *  will write exists and is writable. Relative paths are relative to the host's working
   *  directory, as they will be at start. `sluiced validate` (unless --no-environment),
   *  `sluiced run` before it starts anything, and a reload set it; `graph`, `test` and
   *  `plugins` do not (the machine they run on need not be the one that runs the
   *  pipeline). 0 (or a host older than 1.7: test with SL_HAS_FIELD) asks for the checks
   *  of the config alone. */
  uint32_t environment;
} sl_validate_init;

/** A node type: a source, operator or sink. Each callback receives the state
 *  pointer its create returned and the node's context. All callbacks run on
 *  the task's executor thread, one at a time, never after destroy. Optional
 *  callbacks may be NULL. A callback that fails returns a non-OK status after
 *  set_error(); the host reports it with the node id and stops the task. */
typedef struct sl_node_type {
  uint32_t struct_size;   /**< sizeof(sl_node_type) the plugin was built with. */
  int32_t role;           /**< SL_ROLE_*. */
  const char* name;       /**< Type name used in config (`type = "map"`). Unique across plugins. */
  const char* doc;        /**< One paragraph for `sluiced plugins` and docs/CONFIG.md. */
  const sl_param* params; /**< Declared config keys: param_count structs, all of one
                               struct_size, which the host uses as the array stride. */
  uint32_t param_count;
  uint32_t flags;     /**< SL_NODE_*. */
  int32_t min_inputs; /**< Operators/sinks: at least this many inputs (>= 1). */
  int32_t max_inputs; /**< Or SL_INPUTS_UNLIMITED. */

  /** Required. Make an instance; *out_self is passed to every later callback.
   *  On failure (any status but SL_OK, after set_error) create must itself
   *  free whatever it allocated: the host ignores *out_self and never calls
   *  destroy for an instance whose create failed. */
  sl_status (*create)(const sl_node_init* init, void** out_self);
  /** Required. Free the instance. Called exactly once for every successful
   *  create, also after a failed start or a failed callback, and never for a
   *  failed create. */
  void (*destroy)(void* self);

  /** Optional. Called once before the first delivery/poll, on the executor.
   *  Sources open files or connections here; timers may be armed. */
  sl_status (*start)(void* self, sl_context* ctx);
  /** Sources: emit up to about `budget` messages and say via *out_state
   *  whether more is ready (SL_SOURCE_MORE), nothing is ready yet
   *  (SL_SOURCE_IDLE: poll after wake() or a timer) or the source is exhausted
   *  (SL_SOURCE_DONE). The host polls only while downstream has room. */
  sl_status (*poll)(void* self, sl_context* ctx, uint32_t budget, int32_t* out_state);
  /** Operators and sinks: a batch arrived on input `input_index` (0-based, in
   *  the order of `inputs` in config). Borrows `batch`. */
  sl_status (*process)(void* self, sl_context* ctx, uint32_t input_index, const sl_batch* batch);
  /** Optional. Timer `timer_id` fired. */
  sl_status (*on_timer)(void* self, sl_context* ctx, uint64_t timer_id);
  /** Optional. Input `input_index` ended (its producer is exhausted). */
  sl_status (*on_input_end)(void* self, sl_context* ctx, uint32_t input_index);
  /** Optional. All inputs ended (operators, sinks) or the task is draining at
   *  end of input: emit what must still go out, make output durable. After it
   *  returns the node's own output ends. Sinks must report write failures here. */
  sl_status (*finish)(void* self, sl_context* ctx);
  /** Optional. The task is stopping (signal or error): release external
   *  resources promptly; emit is no longer possible. */
  void (*stop)(void* self, sl_context* ctx);
  /** Optional (stateful nodes). Return the node's state as a value (owned by
   *  the host after return). Sources return their position. */
  sl_status (*snapshot)(void* self, sl_context* ctx, sl_value* out_state);
  /** Optional (stateful nodes). Restore from a value snapshot returned (borrowed).
   *  Called after create and before start. */
  sl_status (*restore)(void* self, sl_context* ctx, sl_value state);

  /* Since 1.1 */
  /** Optional. A descriptor armed with io_watch is ready (`ready`: SL_IO_*). */
  sl_status (*on_io)(void* self, sl_context* ctx, uint64_t watch_id, uint32_t ready);

  /* Since 1.1: checkpoints (the epoch protocol of docs/CHECKPOINTING.md). An epoch
   * runs on each task between two source polls: sources are paused, every
   * live sink is asked to prepare, the host waits for all their answers (the
   * timers, io readiness and posts of non-sink nodes are held meanwhile and
   * run once the epoch ends; a sink's own keep running), snapshots every
   * stateful node, stores the checkpoint, then calls checkpoint_commit on
   * sinks and then on sources, and resumes polling. */

  /** Optional (sinks). Make everything received before this call durable for
   *  `epoch`, then answer with sl_host_api.checkpoint_ready(ctx, epoch, status)
   *  — inside this call or later on the task thread. Returning non-OK (after
   *  set_error) is the same as answering with that status. A sink without
   *  this callback is assumed durable as soon as its process returned (it
   *  writes synchronously): the host answers for it. Nothing is delivered to
   *  the sink between this call and the end of the epoch. */
  sl_status (*checkpoint_prepare)(void* self, sl_context* ctx, uint64_t epoch);
  /** Optional (sinks and sources). Checkpoint `epoch` is stored: make it
   *  visible (commit the transaction, commit consumer offsets to the
   *  positions of the last snapshot). Covers every epoch prepared before it
   *  that was aborted. Called on sinks first, then on sources. A failure
   *  fails the task (the stored checkpoint stays valid for the restart). */
  sl_status (*checkpoint_commit)(void* self, sl_context* ctx, uint64_t epoch);
  /** Optional (sinks and sources). Epoch `epoch` will not be stored (another
   *  node or task failed, or the store write failed); the pipeline goes on.
   *  What was prepared for it must be covered by the next checkpoint_commit
   *  (keep the transaction open); a node that cannot do that returns non-OK,
   *  which fails the task (the restart then goes back to the last stored
   *  checkpoint). Not called for epochs that failed because the task fails. */
  sl_status (*checkpoint_abort)(void* self, sl_context* ctx, uint64_t epoch);
  /** Optional (nodes whose commit can be lost in a crash, e.g. Kafka
   *  transactions). On restart, when the newest stored checkpoint was never
   *  confirmed committed (the process died between the store write and the end
   *  of the commits), the host calls this after create and before restore with
   *  that checkpoint's `epoch` and this node's `state` from it (borrowed). Set
   *  *out_committed to 1 when this node's commit of `epoch` happened (e.g. the
   *  group's committed offsets equal the positions in `state`), 0 when it did
   *  not: then the host uses the previous checkpoint for every node. Nodes
   *  without this callback count as committed. */
  sl_status (*checkpoint_recover)(void* self, sl_context* ctx, uint64_t epoch, sl_value state,
                                  int32_t* out_committed);

  /* Since 1.1: operator chaining. A run of single-input operators that each have
   * one of these two callbacks, each feeding only the next, is run by the host
   * over bare values: no message batch between them. The host carries each
   * message's key, headers and event time itself and counts messages in and
   * out per node as if process had run. Set them only when process does
   * exactly this for every batch (with the same state changes and errors);
   * the host may call either process or these, batch by batch. Not used for
   * nodes with on_error = skip or dead_letter. */

  /** Optional (operators that emit one message per input message, carrying
   *  its key, headers and event time, and nothing else: map). Writes to
   *  out[i] the value process would emit for in[i] (owned by the host after
   *  an SL_OK return); `in` is borrowed; every out[i] is null on entry. On
   *  failure: set_error, leave no value in `out` owned (all null), return
   *  non-OK: the task fails as if process had failed. */
  sl_status (*map_values)(void* self, sl_context* ctx, const sl_value* in, size_t count,
                          sl_value* out);
  /** Optional (operators that emit a subset of their input messages
   *  unchanged, in order, and nothing else: filter). Sets keep[i] to 1 when
   *  process would pass message i, else 0; `in` is borrowed. Failure as for
   *  map_values. */
  sl_status (*select_values)(void* self, sl_context* ctx, const sl_value* in, size_t count,
                             uint8_t* keep);

  /** Since 1.2. Optional. The checks of create that value constraints
   *  (sl_param) cannot express: cross-key rules, an input reference against
   *  the input count, text that must parse. `sluiced validate` (and run, before
   *  any create) calls it once per node with the config create will get; it
   *  reports each problem with init->report and returns SL_OK when it found
   *  none (any other status with no report is shown as a generic failure).
   *  The contract that makes `ExecStartPre=sluiced validate` mean something:
   *  a config that passes validate (constraints and this callback) must not
   *  fail in create for a config reason. It must have no side effects: no
   *  files, sockets, threads, processes or clients; it may run without the
   *  node ever being created, any number of times, on any thread. */
  sl_status (*validate)(const sl_validate_init* init);

  /** Since 1.3. Optional, operator chaining (see map_values): for operators that
   *  emit one message per input message with only its key replaced, computed from
   *  its value, and nothing else (key_by). Writes to out[i] the key process would
   *  give message i, whose value is in[i] (borrowed); owned by the host after an
   *  SL_OK return; every out[i] is null on entry. The host carries the keys with
   *  the values through the rest of the chain. Failure as for map_values. */
  sl_status (*map_keys)(void* self, sl_context* ctx, const sl_value* in, size_t count,
                        sl_value* out);

  /** Since 1.4. Required with SL_NODE_KEYED_STATE. Key group `group` (>= 1)
   *  came to this task: replace what the node holds for it by `state` (borrowed:
   *  what this node type's snapshot had under "groups"/"<group>"), or by an
   *  empty start when `state` is null. Called after create, on the task thread,
   *  between other callbacks (from inside a source's key_groups_assigned). */
  sl_status (*restore_group)(void* self, sl_context* ctx, uint32_t group, sl_value state);
  /** Since 1.4. Required with SL_NODE_KEYED_STATE. Forget key group `group`: it
   *  moved to another task or daemon, which restores it from the checkpoint.
   *  What the node emits later must not depend on it. Task thread only. */
  sl_status (*drop_group)(void* self, sl_context* ctx, uint32_t group);

  /** Since 1.5. Optional. The node's input watermark rose to `watermark_ns`
   *  (see emit_watermark): no message with an event time at or below it is
   *  still to come, except late ones. The node emits what that completes
   *  (windows that end at or before it) and then its own output watermark
   *  with emit_watermark; without this callback the host forwards the input
   *  watermark as the node's output watermark. SL_WATERMARK_END when every
   *  input ended (before on_input_end and finish): a node may emit all it
   *  holds, but its own output watermark becomes SL_WATERMARK_END only when
   *  its output ends, after finish. The watermark is not part of the host's
   *  checkpoint: a node that needs it after a restart keeps it in its state. */
  sl_status (*on_watermark)(void* self, sl_context* ctx, int64_t watermark_ns);
  /** Since 1.5. Optional. The names of the node's side outputs (emit_side),
   *  side_output_count of them, each a non-empty name of [a-z0-9_] other than
   *  "dead_letter" ("late"). Static: the strings live as long as the plugin.
   *  Side outputs carry no watermark. */
  const char* const* side_outputs;
  uint32_t side_output_count;
} sl_node_type;

/* ------------------------------------------------------------------------ */
/* Checkpoint stores (Since 1.1)                                            */
/* ------------------------------------------------------------------------ */

/** What the host hands to sl_checkpoint_store.open. Borrowed for the call. */
typedef struct sl_store_init {
  uint32_t struct_size;    /**< sizeof(sl_store_init) in the host. */
  const sl_host_api* host; /**< The host table. */
  sl_context* ctx;         /**< For set_error and log; valid until close returns. Its
                                node_id is "checkpoint". No emit, timers or posts. */
  sl_str pipeline;         /**< The pipeline's name (config `name`). Borrowed. */
  sl_value config;         /**< Object of the store's declared params from the
                                [checkpoint] table, defaults filled in. Borrowed. */
} sl_store_init;

/** One stored epoch, as listed by sl_checkpoint_store.list. */
typedef struct sl_epoch_info {
  uint32_t struct_size; /**< sizeof(sl_epoch_info) in the store. */
  uint32_t committed;   /**< 1 after mark_committed(epoch), else 0. */
  uint64_t epoch;
  int64_t time_ns; /**< When it was written (ns since the Unix epoch), 0 if unknown. */
  uint64_t size;   /**< Bytes as written. */
} sl_epoch_info;

/** Called by sl_checkpoint_store.list once per epoch. Borrows `info`. */
typedef void (*sl_epoch_list_fn)(void* arg, const sl_epoch_info* info);

/** A checkpoint store: where the host keeps its checkpoint files. The store
 *  keeps opaque byte strings by epoch number (the host frames them with a
 *  checksum and checks it on read, so a store need not). Every callback runs
 *  on the host's control thread, one at a time; a failing one returns
 *  non-OK after host->set_error(ctx, ...). The filesystem store "fs" is built
 *  into the host and registered the same way as plugin stores. */
typedef struct sl_checkpoint_store {
  uint32_t struct_size;   /**< sizeof(sl_checkpoint_store) the plugin was built with. */
  const char* name;       /**< `[checkpoint] store = "<name>"`. Unique across plugins. */
  const char* doc;        /**< One paragraph. */
  const sl_param* params; /**< Store options, keys of the [checkpoint] table. */
  uint32_t param_count;

  /** Required. Open (create if needed) the store of this pipeline. A failing
   *  open frees what it allocated: close is not called for it. */
  sl_status (*open)(const sl_store_init* init, void** out_self);
  /** Required. Close; `self` is not used again. */
  void (*close)(void* self);
  /** Required. Store `size` bytes (borrowed) as `epoch`, atomically and
   *  durably: once it returns SL_OK the epoch survives a crash; on failure
   *  nothing of it is visible and earlier epochs are untouched. An existing
   *  epoch with that number is replaced. */
  sl_status (*write)(void* self, uint64_t epoch, const void* data, size_t size);
  /** Required. Record durably that the commits of `epoch` finished (see
   *  sl_node_type.checkpoint_recover); list reports it as committed. */
  sl_status (*mark_committed)(void* self, uint64_t epoch);
  /** Required. The bytes of `epoch` into *out_bytes (owned: release with
   *  value_release; a bytes value). SL_NOT_FOUND when there is no such epoch. */
  sl_status (*read)(void* self, uint64_t epoch, sl_value* out_bytes);
  /** Required. Calls fn(arg, info) for every stored epoch, in any order. */
  sl_status (*list)(void* self, sl_epoch_list_fn fn, void* arg);
  /** Required. Delete `epoch` (retention: the host keeps the newest `keep`).
   *  Removing an absent epoch is OK. */
  sl_status (*remove)(void* self, uint64_t epoch);
} sl_checkpoint_store;

/* ------------------------------------------------------------------------ */
/* Named functions                                                          */
/* ------------------------------------------------------------------------ */

/** What the host hands to sl_function_def.bind. Borrowed for the call. */
typedef struct sl_function_init {
  uint32_t struct_size; /**< sizeof(sl_function_init) in the host. */
  const sl_host_api* host;
  sl_context* ctx; /**< Context of the node that binds the function. */
  sl_value args;   /**< Object of validated args with defaults. Borrowed. */
} sl_function_init;

/** A named function that higher-order operators (map, filter, accumulate...)
 *  call. Calls happen on the binding node's executor thread. */
typedef struct sl_function_def {
  uint32_t struct_size; /**< sizeof(sl_function_def) the plugin was built with. */
  int32_t kind;         /**< SL_FUNCTION_*. */
  const char* name;     /**< Name used in config. Unique across plugins. */
  const char* doc;
  const sl_param* params; /**< Declared args (same stride rule as sl_node_type.params). */
  uint32_t param_count;
  uint32_t min_arity; /**< Fewest positional arguments call accepts (1 for map). */
  uint32_t max_arity; /**< Most positional arguments (UINT32_MAX = any). */

  /** Optional. Prepare per-binding state from args; *out_self is passed to call.
   *  Without bind, call receives NULL. */
  sl_status (*bind)(const sl_function_init* init, void** out_self);
  /** Optional. Free what bind made. As with create and destroy: called once
   *  for every successful bind and never after a failed one (a failing bind
   *  frees what it allocated). */
  void (*unbind)(void* self);
  /** Required. Compute *out (owned by the caller) from `argc` borrowed
   *  arguments. Reducers receive (state, element). */
  sl_status (*call)(void* self, sl_context* ctx, const sl_value* argv, uint32_t argc,
                    sl_value* out);
  /** Optional batch form of the one-argument call: out[i] = f(in[i]). */
  sl_status (*call_batch)(void* self, sl_context* ctx, const sl_value* in, size_t count,
                          sl_value* out);

  /** Since 1.2. Optional. Checks the args beyond their declared constraints
   *  (what bind would refuse), as sl_node_type.validate: init->config is the
   *  args object, input_count is 0, report's key is the arg name. Same
   *  contract: a binding whose args pass must not fail in bind for a config
   *  reason; no side effects. */
  sl_status (*validate)(const sl_validate_init* init);
} sl_function_def;

/* ------------------------------------------------------------------------ */
/* The plugin descriptor and entry point                                    */
/* ------------------------------------------------------------------------ */

/** What a plugin provides. Returned by the entry point; must stay valid (and
 *  unchanged) until the library is unloaded. Arrays hold pointers so that each
 *  element can carry its own struct_size. */
typedef struct sl_plugin {
  uint32_t struct_size;    /**< sizeof(sl_plugin) the plugin was built with. */
  uint32_t abi_major;      /**< SL_ABI_MAJOR the plugin was built with. */
  uint32_t abi_minor;      /**< SL_ABI_MINOR the plugin was built with. */
  uint32_t min_host_minor; /**< Oldest host minor whose table has what the plugin uses. */
  const char* name;        /**< Plugin name, e.g. "core_ops". */
  const char* version;     /**< The plugin's own version, e.g. "0.1.0". */
  const char* doc;         /**< One line. */
  const sl_node_type* const* node_types;
  uint32_t node_type_count;
  const sl_function_def* const* functions;
  uint32_t function_count;
  /* Since 1.1 (the host reads these only when struct_size covers them): */
  const sl_checkpoint_store* const* stores; /**< Checkpoint stores (see sl_checkpoint_store). */
  uint32_t store_count;
} sl_plugin;

/** The entry point: `SL_EXPORT const sl_plugin* sluice_plugin_v1(const
 *  sl_host_api* host)`. Called once after loading, on the host's main thread.
 *  Borrows `host` (valid until unload). Returns a descriptor owned by the
 *  plugin, or NULL to refuse loading (after host->log explaining why, with a
 *  NULL context). */
typedef const sl_plugin* (*sl_plugin_entry_fn)(const sl_host_api* host);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLUICE_SLUICE_H */
