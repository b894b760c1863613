/*
 * sluice_util.h — helpers for C plugins, header-only, built only on sluice.h.
 *
 * Nothing here crosses the ABI: every function is `static inline` and calls the host
 * through the sl_host_api table it is given, so a plugin that includes this header is
 * still a plain sluice.h plugin. Strict C11 and C++ clean (tests/abi compiles it with the
 * strictest warnings of both). The pieces:
 *
 *  - Config getters (sl_util_config_*): a typed key of the node's config object, with a
 *    default (`_or`) or required; a missing key or one of the wrong kind sets an error
 *    naming the key on ctx ("key 'n' must be an int (got string)") and returns
 *    SL_INVALID_ARGUMENT, so create can `return` the status as it is.
 *  - A hash map keyed by sl_value (sl_util_map): open addressing on the host's
 *    value_hash/value_compare (so 1 and 1.0 are one key, as in the host); keys are owned
 *    (retained on insert, released on erase), values are opaque pointers released with
 *    the callback given at init.
 *  - Emitting a subset or a transformation of a batch (sl_util_emit_selected,
 *    sl_util_emit_mapped): each message keeps its key, headers, event time and key group;
 *    one emit call per batch, as the messages came.
 *  - Snapshot encoding of a map (sl_util_map_encode/decode): the map as an array of
 *    [key, state] pairs the host serialises into the checkpoint, and back.
 *
 * Every helper needs only the ABI 1.0 host table (value_hash, value_compare, emit,
 * array_create, object_get, set_error), so a plugin using them may keep min_host_minor 0.
 * Threading: as the host calls they make (config and map helpers: any thread, for a map
 * owned by one thread; emit helpers: the task's executor thread, inside a callback).
 */
#ifndef SLUICE_SLUICE_UTIL_H
#define SLUICE_SLUICE_UTIL_H

#include <sluice/sluice.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* C and C++ spell casts and the null pointer differently; both compile warning-free. */
#ifdef __cplusplus
#define SL_UTIL_CAST(type, expr) static_cast<type>(expr)
#define SL_UTIL_NULLPTR nullptr
#else
#define SL_UTIL_CAST(type, expr) ((type)(expr))
#define SL_UTIL_NULLPTR NULL
#endif

/* ------------------------------------------------------------------------ */
/* Config getters                                                           */
/* ------------------------------------------------------------------------ */

/** Name of a value kind ("int", "string", ...), for messages. Static string. */
static inline const char* sl_util_kind_name(int32_t kind) {
  switch (kind) {
    case SL_KIND_NULL: return "null";
    case SL_KIND_BOOL: return "bool";
    case SL_KIND_INT: return "int";
    case SL_KIND_FLOAT: return "float";
    case SL_KIND_STRING: return "string";
    case SL_KIND_BYTES: return "bytes";
    case SL_KIND_ARRAY: return "array";
    case SL_KIND_OBJECT: return "object";
    default: return "unknown";
  }
}

/** Sets "key '<key>' <problem>" on ctx (ctx may be NULL: nothing is set) and returns
 *  SL_INVALID_ARGUMENT. The message is cut at 255 bytes. */
static inline sl_status sl_util_config_error(const sl_host_api* host, sl_context* ctx,
                                             const char* key, const char* problem) {
  char msg[256];
  int n = snprintf(msg, sizeof msg, "key '%s' %s", key, problem);
  if (ctx != SL_UTIL_NULLPTR && n > 0) {
    size_t len = SL_UTIL_CAST(size_t, n);
    host->set_error(ctx, msg, len < sizeof msg ? len : sizeof msg - 1);
  }
  return SL_INVALID_ARGUMENT;
}

/** The value under `key` of `config` (borrowed, as the config) into *out. Returns 1 when
 *  present and not null, else 0 (then *out is null). */
static inline int sl_util_config_find(const sl_host_api* host, sl_value config, const char* key,
                                      sl_value* out) {
  if (config.kind != SL_KIND_OBJECT || !host->object_get(config, key, strlen(key), out)) {
    *out = sl_null();
    return 0;
  }
  return out->kind != SL_KIND_NULL;
}

/* The common part of the getters: *out gets the value under `key` when present and of
 * `kind` (SL_KIND_FLOAT also accepts an int). Returns SL_OK and sets *found; a value of
 * another kind is an error; an absent one is an error only when `required`. */
static inline sl_status sl_util_config_get_kind(const sl_host_api* host, sl_context* ctx,
                                                sl_value config, const char* key, int32_t kind,
                                                const char* what, int required, sl_value* out,
                                                int* found) {
  *found = sl_util_config_find(host, config, key, out);
  if (!*found) return required ? sl_util_config_error(host, ctx, key, "is required") : SL_OK;
  if (out->kind == kind || (kind == SL_KIND_FLOAT && out->kind == SL_KIND_INT)) return SL_OK;
  {
    char problem[96];
    snprintf(problem, sizeof problem, "must be %s (got %s)", what, sl_util_kind_name(out->kind));
    *found = 0;
    return sl_util_config_error(host, ctx, key, problem);
  }
}

/** Required int `key` into *out. SL_INVALID_ARGUMENT (error on ctx naming the key) when
 *  absent or not an int. */
static inline sl_status sl_util_config_int(const sl_host_api* host, sl_context* ctx,
                                           sl_value config, const char* key, int64_t* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_INT, "an int", 1, &v, &found);
  if (st == SL_OK) *out = v.as.i;
  return st;
}
/** Int `key` into *out, `fallback` when absent (or null); an error when of another kind. */
static inline sl_status sl_util_config_int_or(const sl_host_api* host, sl_context* ctx,
                                              sl_value config, const char* key, int64_t fallback,
                                              int64_t* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_INT, "an int", 0, &v, &found);
  if (st == SL_OK) *out = found ? v.as.i : fallback;
  return st;
}
/** Required number `key` (an int converts) into *out. */
static inline sl_status sl_util_config_float(const sl_host_api* host, sl_context* ctx,
                                             sl_value config, const char* key, double* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_FLOAT, "a number", 1, &v, &found);
  if (st == SL_OK) *out = v.kind == SL_KIND_INT ? SL_UTIL_CAST(double, v.as.i) : v.as.f;
  return st;
}
/** Number `key` into *out, `fallback` when absent. */
static inline sl_status sl_util_config_float_or(const sl_host_api* host, sl_context* ctx,
                                                sl_value config, const char* key, double fallback,
                                                double* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_FLOAT, "a number", 0, &v, &found);
  if (st == SL_OK) {
    *out = !found ? fallback : v.kind == SL_KIND_INT ? SL_UTIL_CAST(double, v.as.i) : v.as.f;
  }
  return st;
}
/** Required bool `key` into *out (0 or 1). */
static inline sl_status sl_util_config_bool(const sl_host_api* host, sl_context* ctx,
                                            sl_value config, const char* key, int* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_BOOL, "a bool", 1, &v, &found);
  if (st == SL_OK) *out = v.as.i != 0;
  return st;
}
/** Bool `key` into *out (0 or 1), `fallback` when absent. */
static inline sl_status sl_util_config_bool_or(const sl_host_api* host, sl_context* ctx,
                                               sl_value config, const char* key, int fallback,
                                               int* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_BOOL, "a bool", 0, &v, &found);
  if (st == SL_OK) *out = found ? v.as.i != 0 : fallback != 0;
  return st;
}
/** Required string `key` into *out: borrowed from the config (valid while it is; copy
 *  what you keep), not NUL-terminated. */
static inline sl_status sl_util_config_string(const sl_host_api* host, sl_context* ctx,
                                              sl_value config, const char* key, sl_str* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_STRING, "a string", 1, &v, &found);
  if (st == SL_OK) *out = host->value_str(v);
  return st;
}
/** String `key` into *out (borrowed), the NUL-terminated `fallback` (static, or
 *  outliving *out) when absent. */
static inline sl_status sl_util_config_string_or(const sl_host_api* host, sl_context* ctx,
                                                 sl_value config, const char* key,
                                                 const char* fallback, sl_str* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_STRING, "a string", 0, &v, &found);
  if (st != SL_OK) return st;
  if (found) {
    *out = host->value_str(v);
  } else {
    out->data = fallback;
    out->size = fallback != SL_UTIL_NULLPTR ? strlen(fallback) : 0;
  }
  return SL_OK;
}
/** Required array `key` into *out (borrowed from the config: value_retain what you keep).
 *  Read it with value_size/value_at (or array_items on a 1.1 host). */
static inline sl_status sl_util_config_array(const sl_host_api* host, sl_context* ctx,
                                             sl_value config, const char* key, sl_value* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_ARRAY, "an array", 1, &v, &found);
  if (st == SL_OK) *out = v;
  return st;
}
/** Array `key` into *out (borrowed), `fallback` (borrowed; e.g. sl_null()) when absent. */
static inline sl_status sl_util_config_array_or(const sl_host_api* host, sl_context* ctx,
                                                sl_value config, const char* key, sl_value fallback,
                                                sl_value* out) {
  sl_value v;
  int found = 0;
  sl_status st =
      sl_util_config_get_kind(host, ctx, config, key, SL_KIND_ARRAY, "an array", 0, &v, &found);
  if (st == SL_OK) *out = found ? v : fallback;
  return st;
}

/* ------------------------------------------------------------------------ */
/* A hash map keyed by sl_value                                             */
/* ------------------------------------------------------------------------ */

/** Releases a map's value (a payload the plugin allocated), e.g. `free`. */
typedef void (*sl_util_release_value_fn)(void* value);

/** One slot of an sl_util_map (internal: use the functions). */
typedef struct sl_util_map_slot {
  sl_value key; /**< Owned (one reference) when used. */
  void* value;
  uint64_t hash;
  uint32_t used; /**< 1 when the slot holds an entry. */
  uint32_t reserved;
} sl_util_map_slot;

/** A hash map from sl_value keys (owned: retained on insert, released on erase) to opaque
 *  values (void*, released with `release_value` when erased, replaced or cleared). Keys
 *  are equal when value_compare says 0 (1 and 1.0 are one key). Linear probing with
 *  backward-shift erase (no tombstones), load at most 3/4. Not thread-safe: one owner.
 *  Zero-initialised it is not usable: call sl_util_map_init. */
typedef struct sl_util_map {
  const sl_host_api* host;
  sl_util_release_value_fn release_value; /**< NULL: values are not released. */
  sl_util_map_slot* slots;                /**< capacity slots (a power of two), or NULL. */
  size_t capacity;
  size_t count; /**< Entries held. */
} sl_util_map;

/** An empty map (no allocation until the first insert). */
static inline void sl_util_map_init(sl_util_map* map, const sl_host_api* host,
                                    sl_util_release_value_fn release_value) {
  map->host = host;
  map->release_value = release_value;
  map->slots = SL_UTIL_NULLPTR;
  map->capacity = 0;
  map->count = 0;
}

/** Releases every key and value; the map stays usable (and keeps its room). */
static inline void sl_util_map_clear(sl_util_map* map) {
  size_t i;
  for (i = 0; i < map->capacity; ++i) {
    sl_util_map_slot* s = &map->slots[i];
    if (!s->used) continue;
    map->host->value_release(s->key);
    if (map->release_value != SL_UTIL_NULLPTR) map->release_value(s->value);
    s->used = 0;
  }
  map->count = 0;
}

/** Releases everything and frees the table; init again to reuse. */
static inline void sl_util_map_free(sl_util_map* map) {
  sl_util_map_clear(map);
  free(map->slots);
  map->slots = SL_UTIL_NULLPTR;
  map->capacity = 0;
}

/* The home slot of `hash` in a table of mask + 1 slots. */
static inline size_t sl_util_hash_slot(uint64_t hash, size_t mask) {
#if SIZE_MAX >= UINT64_MAX
  return hash & mask;
#else
  return SL_UTIL_CAST(size_t, hash & mask);
#endif
}

/* The slot of `key` (used), or of the free slot where it would go (unused). Precondition:
 * capacity > 0 and at least one free slot. */
static inline sl_util_map_slot* sl_util_map_probe(const sl_util_map* map, sl_value key,
                                                  uint64_t hash) {
  size_t mask = map->capacity - 1;
  size_t i = sl_util_hash_slot(hash, mask);
  for (;;) {
    sl_util_map_slot* s = &map->slots[i];
    if (!s->used) return s;
    if (s->hash == hash && map->host->value_compare(s->key, key) == 0) return s;
    i = (i + 1) & mask;
  }
}

/* Moves the entries into a table of `capacity` slots. 0 when out of memory (unchanged). */
static inline int sl_util_map_rehash(sl_util_map* map, size_t capacity) {
  sl_util_map_slot* old = map->slots;
  size_t old_capacity = map->capacity;
  size_t i;
  sl_util_map_slot* slots =
      SL_UTIL_CAST(sl_util_map_slot*, calloc(capacity, sizeof(sl_util_map_slot)));
  if (slots == SL_UTIL_NULLPTR) return 0;
  map->slots = slots;
  map->capacity = capacity;
  for (i = 0; i < old_capacity; ++i) {
    size_t j;
    if (!old[i].used) continue;
    j = sl_util_hash_slot(old[i].hash, capacity - 1);
    while (slots[j].used) j = (j + 1) & (capacity - 1); /* keys are distinct: no compare */
    slots[j] = old[i];
  }
  free(old);
  return 1;
}

/** The value of `key` (borrowed), or NULL when absent: a pointer to the map's slot for
 *  it, valid until the next insert or erase (write through it to replace the value
 *  without releasing the old one). */
static inline void** sl_util_map_find(const sl_util_map* map, sl_value key) {
  sl_util_map_slot* s;
  if (map->count == 0) return SL_UTIL_NULLPTR;
  s = sl_util_map_probe(map, key, map->host->value_hash(key));
  return s->used ? &s->value : SL_UTIL_NULLPTR;
}

/** The slot of `key` (borrowed), inserted with value NULL (the key retained) when absent;
 *  *inserted (may be NULL) says which. NULL when out of memory. The pointer is valid until
 *  the next insert or erase: the way to count or accumulate with one lookup. */
static inline void** sl_util_map_emplace(sl_util_map* map, sl_value key, int* inserted) {
  uint64_t hash = map->host->value_hash(key);
  sl_util_map_slot* s;
  if ((map->count + 1) * 4 > map->capacity * 3 &&
      !sl_util_map_rehash(map, map->capacity == 0 ? 16 : map->capacity * 2)) {
    return SL_UTIL_NULLPTR;
  }
  s = sl_util_map_probe(map, key, hash);
  if (inserted != SL_UTIL_NULLPTR) *inserted = !s->used;
  if (!s->used) {
    map->host->value_retain(key);
    s->key = key;
    s->value = SL_UTIL_NULLPTR;
    s->hash = hash;
    s->used = 1;
    ++map->count;
  }
  return &s->value;
}

/** Sets `key` (borrowed: retained when new) to `value` (the map takes it over), releasing
 *  the value it replaces. SL_RESOURCE_EXHAUSTED when out of memory (then the caller still
 *  owns `value`). */
static inline sl_status sl_util_map_put(sl_util_map* map, sl_value key, void* value) {
  int inserted = 0;
  void** slot = sl_util_map_emplace(map, key, &inserted);
  if (slot == SL_UTIL_NULLPTR) return SL_RESOURCE_EXHAUSTED;
  if (!inserted && map->release_value != SL_UTIL_NULLPTR && *slot != value) {
    map->release_value(*slot);
  }
  *slot = value;
  return SL_OK;
}

/** Removes `key` (borrowed), releasing its key and value. Returns 1 when it was there. */
static inline int sl_util_map_erase(sl_util_map* map, sl_value key) {
  size_t mask, i, j;
  sl_util_map_slot* s;
  if (map->count == 0) return 0;
  s = sl_util_map_probe(map, key, map->host->value_hash(key));
  if (!s->used) return 0;
  map->host->value_release(s->key);
  if (map->release_value != SL_UTIL_NULLPTR) map->release_value(s->value);
  s->used = 0;
  --map->count;
  /* Backward shift: move later entries of the run into the hole when their home slot is
   * not between the hole and them, so every probe still finds its key. */
  mask = map->capacity - 1;
  i = SL_UTIL_CAST(size_t, s - map->slots);
  j = i;
  for (;;) {
    size_t home;
    j = (j + 1) & mask;
    if (!map->slots[j].used) break;
    home = sl_util_hash_slot(map->slots[j].hash, mask);
    if (((j - home) & mask) >= ((j - i) & mask)) {
      map->slots[i] = map->slots[j];
      map->slots[j].used = 0;
      i = j;
    }
  }
  return 1;
}

/** Iteration: start with *pos = 0; each call that returns 1 sets *key (borrowed) and
 *  *value of the next entry, in no particular order. Returns 0 after the last one. Do not
 *  insert or erase while iterating (collect the keys first). */
static inline int sl_util_map_next(const sl_util_map* map, size_t* pos, sl_value* key,
                                   void** value) {
  while (*pos < map->capacity) {
    const sl_util_map_slot* s = &map->slots[(*pos)++];
    if (!s->used) continue;
    *key = s->key;
    *value = s->value;
    return 1;
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Snapshots of a map                                                       */
/* ------------------------------------------------------------------------ */

/** Encodes one entry's value (borrowed) as a value the host can serialise; returns it
 *  owned in *out. A non-OK status (after set_error) stops the encoding. */
typedef sl_status (*sl_util_encode_fn)(void* arg, sl_value key, void* value, sl_value* out);
/** Decodes one entry's `state` (borrowed) back into a value for the map, in *out (then
 *  owned by the map). A non-OK status (after set_error) stops the decoding. */
typedef sl_status (*sl_util_decode_fn)(void* arg, sl_value key, sl_value state, void** out);

/** A cell holding one owned sl_value, for maps whose values are sl_values: allocate with
 *  sl_util_value_cell_new (takes `v` over), free with sl_util_value_cell_free (the
 *  map's release_value). NULL when out of memory (v is then released). */
static inline sl_value* sl_util_value_cell_new(const sl_host_api* host, sl_value v) {
  sl_value* cell = SL_UTIL_CAST(sl_value*, malloc(sizeof(sl_value) + sizeof(void*)));
  if (cell == SL_UTIL_NULLPTR) {
    host->value_release(v);
    return SL_UTIL_NULLPTR;
  }
  cell[0] = v;
  /* The host table travels behind the value, so that the release callback, which gets
   * only the pointer, can release it. */
  memcpy(SL_UTIL_CAST(void*, cell + 1), SL_UTIL_CAST(const void*, &host), sizeof host);
  return cell;
}
/** Releases a cell made by sl_util_value_cell_new (NULL is allowed). */
static inline void sl_util_value_cell_free(void* cell) {
  const sl_host_api* host;
  sl_value* v = SL_UTIL_CAST(sl_value*, cell);
  if (v == SL_UTIL_NULLPTR) return;
  memcpy(SL_UTIL_CAST(void*, &host), SL_UTIL_CAST(const void*, v + 1), sizeof host);
  host->value_release(v[0]);
  free(cell);
}

/** The map as an array of [key, encode(value)] pairs, owned in *out (a snapshot returns
 *  it as its state). `encode` NULL: the values are sl_value* cells the map owns and are
 *  stored as they are (see sl_util_map_value_of). SL_RESOURCE_EXHAUSTED when out of
 *  memory; an encode failure is returned as it is. On failure *out is null. */
static inline sl_status sl_util_map_encode(const sl_util_map* map, sl_util_encode_fn encode,
                                           void* arg, sl_value* out) {
  const sl_host_api* host = map->host;
  sl_value* pairs;
  size_t n = 0, pos = 0, i;
  sl_value key;
  void* value;
  sl_status st = SL_OK;
  *out = sl_null();
  pairs = SL_UTIL_CAST(sl_value*, malloc((map->count + 1) * sizeof(sl_value)));
  if (pairs == SL_UTIL_NULLPTR) return SL_RESOURCE_EXHAUSTED;
  while (sl_util_map_next(map, &pos, &key, &value)) {
    sl_value item[2];
    item[0] = key;
    if (encode != SL_UTIL_NULLPTR) {
      item[1] = sl_null();
      st = encode(arg, key, value, &item[1]);
      if (st != SL_OK) break;
      pairs[n++] = host->array_create(item, 2);
      host->value_release(item[1]);
    } else {
      item[1] = *SL_UTIL_CAST(const sl_value*, value);
      pairs[n++] = host->array_create(item, 2);
    }
  }
  if (st == SL_OK) *out = host->array_create(pairs, n);
  for (i = 0; i < n; ++i) host->value_release(pairs[i]);
  free(pairs);
  return st;
}

/** Fills `map` (cleared first) from `state` (borrowed), an array of [key, state] pairs as
 *  sl_util_map_encode made. `decode` NULL: each value becomes an sl_value* cell
 *  (malloc'ed, holding a retained reference) for a map whose release_value is
 *  sl_util_value_cell_free. A malformed state sets an error on ctx (may be NULL) and
 *  returns SL_DATA_LOSS; a decode failure is returned as it is; on failure the map holds
 *  the entries read before. */
static inline sl_status sl_util_map_decode(sl_util_map* map, sl_context* ctx, sl_value state,
                                           sl_util_decode_fn decode, void* arg) {
  const sl_host_api* host = map->host;
  size_t n, i;
  sl_util_map_clear(map);
  if (state.kind == SL_KIND_NULL) return SL_OK; /* an empty start */
  if (state.kind != SL_KIND_ARRAY) {
    static const char msg[] = "map state: expected an array of [key, state] pairs";
    if (ctx != SL_UTIL_NULLPTR) host->set_error(ctx, msg, sizeof msg - 1);
    return SL_DATA_LOSS;
  }
  n = host->value_size(state);
  for (i = 0; i < n; ++i) {
    sl_value pair = host->value_at(state, i);
    sl_value key, item;
    void* value = SL_UTIL_NULLPTR;
    sl_status st;
    if (pair.kind != SL_KIND_ARRAY || host->value_size(pair) != 2) {
      static const char msg[] = "map state: an entry is not a [key, state] pair";
      if (ctx != SL_UTIL_NULLPTR) host->set_error(ctx, msg, sizeof msg - 1);
      return SL_DATA_LOSS;
    }
    key = host->value_at(pair, 0);
    item = host->value_at(pair, 1);
    if (decode != SL_UTIL_NULLPTR) {
      st = decode(arg, key, item, &value);
      if (st != SL_OK) return st;
    } else {
      host->value_retain(item);
      value = sl_util_value_cell_new(host, item);
      if (value == SL_UTIL_NULLPTR) return SL_RESOURCE_EXHAUSTED;
    }
    st = sl_util_map_put(map, key, value);
    if (st != SL_OK) {
      if (map->release_value != SL_UTIL_NULLPTR) map->release_value(value);
      return st;
    }
  }
  return SL_OK;
}

/** The sl_value in a map value made by sl_util_value_cell_new (borrowed). */
static inline sl_value sl_util_map_value_of(void* cell) {
  return *SL_UTIL_CAST(const sl_value*, cell);
}

/* ------------------------------------------------------------------------ */
/* Emitting part of a batch                                                 */
/* ------------------------------------------------------------------------ */

/** Messages the emit helpers build on the stack; a larger subset is built in one
 *  malloc'ed buffer per call (or, when that fails, emitted in chunks of this many). */
#define SL_UTIL_EMIT_CHUNK 64

/* Emits the messages that `take` makes of batch messages (see the two helpers below), in
 * one emit call when it can. take(i, keep, values, &m): 0 to skip message i, else 1 with
 * m filled. */
static inline int sl_util_take_message(const sl_batch* batch, size_t i, const uint8_t* keep,
                                       const sl_value* values, sl_message* m) {
  if (keep != SL_UTIL_NULLPTR && keep[i] == 0) return 0;
  *m = *sl_batch_at(batch, i);
  if (values != SL_UTIL_NULLPTR) m->value = values[i];
  return 1;
}
static inline sl_status sl_util_emit_taken(const sl_host_api* host, sl_context* ctx,
                                           const sl_batch* batch, const uint8_t* keep,
                                           const sl_value* values, size_t taken) {
  sl_message chunk[SL_UTIL_EMIT_CHUNK];
  sl_message* buf = chunk;
  size_t room = SL_UTIL_EMIT_CHUNK, n = 0, i;
  sl_status st = SL_OK;
  if (taken > room) {
    sl_message* big = SL_UTIL_CAST(sl_message*, malloc(taken * sizeof(sl_message)));
    if (big != SL_UTIL_NULLPTR) {
      buf = big;
      room = taken;
    }
  }
  for (i = 0; i < batch->count && st == SL_OK; ++i) {
    if (!sl_util_take_message(batch, i, keep, values, &buf[n])) continue;
    if (++n == room) {
      st = host->emit(ctx, buf, n);
      n = 0;
    }
  }
  if (st == SL_OK && n > 0) st = host->emit(ctx, buf, n);
  if (buf != chunk) free(buf);
  return st;
}

/** Emits message i of `batch` for every i with keep[i] != 0, in order and unchanged (value,
 *  key, headers, event time, key group), in one emit call: the batch as it is when every
 *  message is kept. Borrows everything. Returns as emit does (SL_OK when nothing is kept).
 *  Executor thread only, inside a callback. */
static inline sl_status sl_util_emit_selected(const sl_host_api* host, sl_context* ctx,
                                              const sl_batch* batch, const uint8_t* keep) {
  size_t i, kept = 0;
  for (i = 0; i < batch->count; ++i) {
    if (keep[i] != 0) ++kept;
  }
  if (kept == 0) return SL_OK;
  if (kept == batch->count && batch->message_size == sizeof(sl_message)) {
    return host->emit(ctx, batch->messages, batch->count);
  }
  return sl_util_emit_taken(host, ctx, batch, keep, SL_UTIL_NULLPTR, kept);
}

/** Emits one message per message of `batch`, with value `values[i]` (borrowed: the caller
 *  releases what it made) and the key, headers, event time and key group of message i, in
 *  one emit call. Returns as emit does. Executor thread only, inside a callback. */
static inline sl_status sl_util_emit_mapped(const sl_host_api* host, sl_context* ctx,
                                            const sl_batch* batch, const sl_value* values) {
  if (batch->count == 0) return SL_OK;
  return sl_util_emit_taken(host, ctx, batch, SL_UTIL_NULLPTR, values, batch->count);
}

/** The values of `batch` into out[0 .. count) (borrowed from the batch), for a function
 *  that takes an array of values (function_call_batch). */
static inline void sl_util_batch_values(const sl_batch* batch, sl_value* out) {
  size_t i;
  for (i = 0; i < batch->count; ++i) out[i] = sl_batch_at(batch, i)->value;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SLUICE_SLUICE_UTIL_H */
