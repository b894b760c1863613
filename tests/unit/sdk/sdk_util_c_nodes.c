/* Node types and checks written in C11 against sluice_util.h; see sdk_util_c_nodes.h.
 * Compiled with the strict flags of tests/abi, as a C plugin author might. */
#include "sdk_util_c_nodes.h"

#include <sluice/sluice_util.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --- c_every: the messages whose position in the stream is `offset` modulo `every` (or,
 * with `negate`, the others), through the config getters and sl_util_emit_selected. */

typedef struct every_node {
  const sl_host_api* host;
  int64_t every, offset;
  int negate;
  uint64_t seen;
  uint8_t* keep;
  size_t keep_size;
} every_node;

static sl_status every_create(const sl_node_init* init, void** out) {
  const sl_host_api* h = init->host;
  every_node* n = (every_node*)calloc(1, sizeof *n);
  sl_status st;
  sl_str label;
  sl_value unused;
  if (n == NULL) return SL_RESOURCE_EXHAUSTED;
  n->host = h;
  /* Every getter returns its error as the create's failure. */
  if ((st = sl_util_config_int(h, init->ctx, init->config, "every", &n->every)) != SL_OK ||
      (st = sl_util_config_int_or(h, init->ctx, init->config, "offset", 0, &n->offset)) != SL_OK ||
      (st = sl_util_config_bool_or(h, init->ctx, init->config, "negate", 0, &n->negate)) != SL_OK ||
      (st = sl_util_config_string_or(h, init->ctx, init->config, "label", "", &label)) != SL_OK ||
      (st = sl_util_config_array_or(h, init->ctx, init->config, "unused", sl_null(), &unused)) !=
          SL_OK) {
    free(n);
    return st;
  }
  if (n->every <= 0) {
    free(n);
    return sl_util_config_error(h, init->ctx, "every", "must be positive");
  }
  *out = n;
  return SL_OK;
}

static void every_destroy(void* self) {
  every_node* n = (every_node*)self;
  free(n->keep);
  free(n);
}

static sl_status every_process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  every_node* n = (every_node*)self;
  size_t i;
  (void)input;
  if (batch->count > n->keep_size) {
    uint8_t* keep = (uint8_t*)realloc(n->keep, batch->count);
    if (keep == NULL) return SL_RESOURCE_EXHAUSTED;
    n->keep = keep;
    n->keep_size = batch->count;
  }
  for (i = 0; i < batch->count; ++i) {
    int hit = (int64_t)(n->seen++ % (uint64_t)n->every) == n->offset;
    n->keep[i] = (uint8_t)(hit != n->negate);
  }
  return sl_util_emit_selected(n->host, ctx, batch, n->keep);
}

/* --- c_scale: value * factor (numbers), through sl_util_batch_values and
 * sl_util_emit_mapped. */

typedef struct scale_node {
  const sl_host_api* host;
  double factor;
} scale_node;

static sl_status scale_create(const sl_node_init* init, void** out) {
  scale_node* n = (scale_node*)calloc(1, sizeof *n);
  sl_status st;
  if (n == NULL) return SL_RESOURCE_EXHAUSTED;
  n->host = init->host;
  st = sl_util_config_float(init->host, init->ctx, init->config, "factor", &n->factor);
  if (st != SL_OK) {
    free(n);
    return st;
  }
  *out = n;
  return SL_OK;
}

static void scale_destroy(void* self) { free(self); }

static sl_status scale_process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  scale_node* n = (scale_node*)self;
  sl_value* values = (sl_value*)malloc((batch->count + 1) * sizeof(sl_value));
  size_t i;
  sl_status st;
  (void)input;
  if (values == NULL) return SL_RESOURCE_EXHAUSTED;
  sl_util_batch_values(batch, values);
  for (i = 0; i < batch->count; ++i) {
    double x = values[i].kind == SL_KIND_INT ? (double)values[i].as.i : values[i].as.f;
    values[i] = sl_float(x * n->factor); /* inline: nothing to release */
  }
  st = sl_util_emit_mapped(n->host, ctx, batch, values);
  free(values);
  return st;
}

/* --- c_count: per value, how often it was seen (the count kept in a malloc'ed int64 per
 * key of an sl_util_map); emits [value, count]; forgets a value when its count reaches
 * `forget_at` (> 0). Snapshot: the map as [key, count] pairs. */

typedef struct count_node {
  const sl_host_api* host;
  sl_util_map counts;
  int64_t forget_at;
} count_node;

static sl_status count_create(const sl_node_init* init, void** out) {
  count_node* n = (count_node*)calloc(1, sizeof *n);
  sl_status st;
  if (n == NULL) return SL_RESOURCE_EXHAUSTED;
  n->host = init->host;
  sl_util_map_init(&n->counts, init->host, free);
  st = sl_util_config_int_or(init->host, init->ctx, init->config, "forget_at", 0, &n->forget_at);
  if (st != SL_OK) {
    free(n);
    return st;
  }
  *out = n;
  return SL_OK;
}

static void count_destroy(void* self) {
  count_node* n = (count_node*)self;
  sl_util_map_free(&n->counts);
  free(n);
}

static sl_status count_process(void* self, sl_context* ctx, uint32_t input, const sl_batch* batch) {
  count_node* n = (count_node*)self;
  sl_value* out = (sl_value*)calloc(batch->count + 1, sizeof(sl_value));
  size_t i;
  sl_status st = SL_OK;
  (void)input;
  if (out == NULL) return SL_RESOURCE_EXHAUSTED;
  for (i = 0; i < batch->count; ++i) {
    sl_value v = sl_batch_at(batch, i)->value;
    int inserted = 0;
    void** slot = sl_util_map_emplace(&n->counts, v, &inserted);
    int64_t count;
    sl_value pair[2];
    if (slot == NULL) {
      st = SL_RESOURCE_EXHAUSTED;
      break;
    }
    if (inserted) {
      *slot = calloc(1, sizeof(int64_t));
      if (*slot == NULL) {
        sl_util_map_erase(&n->counts, v); /* free(NULL) is fine */
        st = SL_RESOURCE_EXHAUSTED;
        break;
      }
    }
    count = ++*(int64_t*)*slot;
    if (n->forget_at > 0 && count >= n->forget_at) sl_util_map_erase(&n->counts, v);
    pair[0] = v;
    pair[1] = sl_int(count);
    out[i] = n->host->array_create(pair, 2);
  }
  if (st == SL_OK) st = sl_util_emit_mapped(n->host, ctx, batch, out);
  for (i = 0; i < batch->count; ++i) n->host->value_release(out[i]);
  free(out);
  return st;
}

static sl_status count_encode(void* arg, sl_value key, void* value, sl_value* out) {
  (void)arg;
  (void)key;
  *out = sl_int(*(const int64_t*)value);
  return SL_OK;
}

static sl_status count_decode(void* arg, sl_value key, sl_value state, void** out) {
  int64_t* count;
  count_node* n = (count_node*)arg;
  (void)key;
  (void)n;
  if (state.kind != SL_KIND_INT) return SL_DATA_LOSS;
  count = (int64_t*)malloc(sizeof *count);
  if (count == NULL) return SL_RESOURCE_EXHAUSTED;
  *count = state.as.i;
  *out = count;
  return SL_OK;
}

static sl_status count_snapshot(void* self, sl_context* ctx, sl_value* out) {
  count_node* n = (count_node*)self;
  (void)ctx;
  return sl_util_map_encode(&n->counts, count_encode, n, out);
}

static sl_status count_restore(void* self, sl_context* ctx, sl_value state) {
  count_node* n = (count_node*)self;
  return sl_util_map_decode(&n->counts, ctx, state, count_decode, n);
}

/* --- the descriptors --- */

static const sl_param k_every_params[] = {
    {sizeof(sl_param), "every", SL_PARAM_INT, SL_PARAM_REQUIRED, NULL, "Keep one in this many.", 0,
     0, 0.0, 0.0, NULL},
    {sizeof(sl_param), "offset", SL_PARAM_INT, 0, NULL, "Which one.", 0, 0, 0.0, 0.0, NULL},
    {sizeof(sl_param), "negate", SL_PARAM_BOOL, 0, NULL, "Keep the others.", 0, 0, 0.0, 0.0, NULL},
    {sizeof(sl_param), "label", SL_PARAM_STRING, 0, NULL, "Unused.", 0, 0, 0.0, 0.0, NULL},
    {sizeof(sl_param), "unused", SL_PARAM_ARRAY, 0, NULL, "Unused.", 0, 0, 0.0, 0.0, NULL},
};
static const sl_param k_scale_params[] = {
    {sizeof(sl_param), "factor", SL_PARAM_ANY, SL_PARAM_REQUIRED, NULL,
     "The factor (ANY, so that create's getter sees wrong kinds).", 0, 0, 0.0, 0.0, NULL},
};
static const sl_param k_count_params[] = {
    {sizeof(sl_param), "forget_at", SL_PARAM_INT, 0, NULL, "Forget a value at this count.", 0, 0,
     0.0, 0.0, NULL},
};

static sl_node_type make_type(const char* name, const sl_param* params, uint32_t param_count) {
  sl_node_type t;
  memset(&t, 0, sizeof t);
  t.struct_size = sizeof t;
  t.role = SL_ROLE_OPERATOR;
  t.name = name;
  t.doc = "A test node of sluice_util.h.";
  t.params = params;
  t.param_count = param_count;
  t.min_inputs = 1;
  t.max_inputs = 1;
  return t;
}

const sl_node_type* const* c_util_node_types(uint32_t* count) {
  static sl_node_type every, scale, counter;
  static const sl_node_type* types[3];
  every = make_type("c_every", k_every_params, 5);
  every.create = every_create;
  every.destroy = every_destroy;
  every.process = every_process;
  scale = make_type("c_scale", k_scale_params, 1);
  scale.create = scale_create;
  scale.destroy = scale_destroy;
  scale.process = scale_process;
  counter = make_type("c_count", k_count_params, 1);
  counter.flags = SL_NODE_STATEFUL;
  counter.create = count_create;
  counter.destroy = count_destroy;
  counter.process = count_process;
  counter.snapshot = count_snapshot;
  counter.restore = count_restore;
  types[0] = &every;
  types[1] = &scale;
  types[2] = &counter;
  *count = 3;
  return types;
}

/* --- direct checks --- */

#define CHECK(cond)                       \
  do {                                    \
    if (!(cond)) return "failed: " #cond; \
  } while (0)

static int str_is(sl_str s, const char* text) {
  return s.size == strlen(text) && (s.size == 0 || memcmp(s.data, text, s.size) == 0);
}

const char* c_util_check_config(const sl_host_api* host, sl_context* ctx, sl_value config) {
  int64_t i = 0;
  double f = 0.0;
  int b = 0;
  sl_str s;
  sl_value v;
  CHECK(sl_util_config_int(host, ctx, config, "n", &i) == SL_OK && i == 5);
  CHECK(sl_util_config_int_or(host, ctx, config, "n", 9, &i) == SL_OK && i == 5);
  CHECK(sl_util_config_int_or(host, ctx, config, "absent", 9, &i) == SL_OK && i == 9);
  CHECK(sl_util_config_int_or(host, ctx, config, "gone", 8, &i) == SL_OK && i == 8); /* null */
  CHECK(sl_util_config_float(host, ctx, config, "pi", &f) == SL_OK && f == 3.5);
  CHECK(sl_util_config_float(host, ctx, config, "ratio", &f) == SL_OK && f == 2.0); /* int */
  CHECK(sl_util_config_float_or(host, ctx, config, "absent", 0.25, &f) == SL_OK && f == 0.25);
  CHECK(sl_util_config_bool(host, ctx, config, "flag", &b) == SL_OK && b == 1);
  CHECK(sl_util_config_bool_or(host, ctx, config, "absent", 7, &b) == SL_OK && b == 1);
  CHECK(sl_util_config_string(host, ctx, config, "name", &s) == SL_OK && str_is(s, "abc"));
  CHECK(sl_util_config_string_or(host, ctx, config, "absent", "dflt", &s) == SL_OK &&
        str_is(s, "dflt"));
  CHECK(sl_util_config_array(host, ctx, config, "list", &v) == SL_OK && v.kind == SL_KIND_ARRAY &&
        host->value_size(v) == 2);
  CHECK(sl_util_config_array_or(host, ctx, config, "absent", sl_null(), &v) == SL_OK &&
        v.kind == SL_KIND_NULL);
  CHECK(sl_util_config_find(host, config, "gone", &v) == 0 && v.kind == SL_KIND_NULL);
  CHECK(sl_util_config_find(host, sl_int(1), "n", &v) == 0); /* not an object */
  return NULL;
}

sl_status c_util_config_fail(const sl_host_api* host, sl_context* ctx, sl_value config, int which) {
  int64_t i = 0;
  double f = 0.0;
  int b = 0;
  sl_str s;
  sl_value v;
  switch (which) {
    case 0: return sl_util_config_int(host, ctx, config, "absent", &i);
    case 1: return sl_util_config_int_or(host, ctx, config, "name", 1, &i);
    case 2: return sl_util_config_float(host, ctx, config, "name", &f);
    case 3: return sl_util_config_bool_or(host, ctx, config, "n", 0, &b);
    case 4: return sl_util_config_string(host, ctx, config, "n", &s);
    case 5: return sl_util_config_array_or(host, ctx, config, "name", sl_null(), &v);
    case 6: return sl_util_config_float_or(host, ctx, config, "flag", 1.0, &f);
    default: return SL_OK;
  }
}

/* Payloads of the map check: an int64 whose releases are counted. */
static int64_t g_released;
static void counted_free(void* p) {
  ++g_released;
  free(p);
}
static int64_t* boxed(int64_t x) {
  int64_t* p = (int64_t*)malloc(sizeof *p);
  if (p != NULL) *p = x;
  return p;
}

/* Key i of the map check: an int, a float or a string, by i modulo 3. Owned. */
static sl_value key_of(const sl_host_api* host, int64_t i) {
  char text[32];
  size_t len;
  if (i % 3 == 0) return sl_int(i);
  if (i % 3 == 1) return sl_float((double)i + 0.5);
  len = (size_t)snprintf(text, sizeof text, "k%lld", (long long)i);
  return host->string_create(text, len);
}

const char* c_util_check_map(const sl_host_api* host, int64_t n) {
  sl_util_map map;
  int64_t i;
  int inserted = 0;
  size_t pos = 0, seen = 0;
  sl_value key;
  void* value;
  void** slot;
  g_released = 0;
  sl_util_map_init(&map, host, counted_free);
  CHECK(sl_util_map_find(&map, sl_int(1)) == NULL && map.count == 0);
  CHECK(!sl_util_map_erase(&map, sl_int(1)));
  CHECK(!sl_util_map_next(&map, &pos, &key, &value));
  for (i = 0; i < n; ++i) {
    sl_value k = key_of(host, i);
    CHECK(sl_util_map_put(&map, k, boxed(i)) == SL_OK);
    host->value_release(k); /* the map holds its own reference */
  }
  CHECK(map.count == (size_t)n && map.capacity >= map.count * 4 / 3);
  for (i = 0; i < n; ++i) {
    sl_value k = key_of(host, i);
    slot = sl_util_map_find(&map, k);
    host->value_release(k);
    CHECK(slot != NULL && *(int64_t*)*slot == i);
  }
  /* 3 and 3.0 are one key (value_compare), as in the host. */
  slot = sl_util_map_find(&map, sl_float(3.0));
  CHECK(n <= 3 || (slot != NULL && *(int64_t*)*slot == 3));
  /* Replacing releases the old payload. */
  CHECK(sl_util_map_put(&map, sl_int(0), boxed(-1)) == SL_OK && g_released == 1);
  slot = sl_util_map_emplace(&map, sl_int(0), &inserted);
  CHECK(slot != NULL && !inserted && *(int64_t*)*slot == -1 && map.count == (size_t)n);
  /* Erase every even i: the others are still found (backward shift keeps runs intact). */
  for (i = 0; i < n; i += 2) {
    sl_value k = key_of(host, i);
    CHECK(sl_util_map_erase(&map, k));
    CHECK(!sl_util_map_erase(&map, k));
    host->value_release(k);
  }
  CHECK(map.count == (size_t)(n / 2));
  for (i = 0; i < n; ++i) {
    sl_value k = key_of(host, i);
    slot = sl_util_map_find(&map, k);
    host->value_release(k);
    CHECK((i % 2 == 0) == (slot == NULL));
    CHECK(slot == NULL || *(int64_t*)*slot == i);
  }
  /* Iteration visits each entry once. */
  while (sl_util_map_next(&map, &pos, &key, &value)) {
    int64_t x = *(const int64_t*)value;
    sl_value k = key_of(host, x);
    CHECK(x % 2 == 1 && host->value_compare(k, key) == 0);
    host->value_release(k);
    ++seen;
  }
  CHECK(seen == map.count);
  /* A new key after erasures, then clear: every payload released exactly once. */
  slot = sl_util_map_emplace(&map, sl_bool(1), &inserted);
  CHECK(slot != NULL && inserted && *slot == NULL && map.count == (size_t)(n / 2) + 1);
  *slot = boxed(42);
  sl_util_map_clear(&map);
  CHECK(map.count == 0 && sl_util_map_find(&map, sl_bool(1)) == NULL);
  CHECK(g_released == n + 2); /* n payloads, the replaced one and the bool's */
  sl_util_map_free(&map);
  return NULL;
}

const char* c_util_check_snapshot(const sl_host_api* host, sl_context* ctx, int64_t n) {
  sl_util_map a, b, cells, again;
  sl_value state, cell_state, bad;
  int64_t i;
  size_t pos = 0;
  sl_value key;
  void* value;
  sl_util_map_init(&a, host, free);
  sl_util_map_init(&b, host, free);
  for (i = 0; i < n; ++i) {
    sl_value k = key_of(host, i);
    CHECK(sl_util_map_put(&a, k, boxed(i * 10)) == SL_OK);
    host->value_release(k);
  }
  CHECK(sl_util_map_encode(&a, count_encode, NULL, &state) == SL_OK);
  CHECK(state.kind == SL_KIND_ARRAY && host->value_size(state) == (size_t)n);
  /* What a checkpoint does with it: JSON text and back. */
  {
    sl_value text = host->json_dump(state);
    sl_str t = host->value_str(text);
    sl_value parsed = sl_null();
    CHECK(host->json_parse(ctx, t.data, t.size, &parsed) == SL_OK);
    host->value_release(text);
    host->value_release(state);
    state = parsed;
  }
  CHECK(sl_util_map_put(&b, sl_int(-5), boxed(0)) == SL_OK); /* decode clears it */
  CHECK(sl_util_map_decode(&b, ctx, state, count_decode, NULL) == SL_OK);
  CHECK(b.count == a.count && sl_util_map_find(&b, sl_int(-5)) == NULL);
  while (sl_util_map_next(&a, &pos, &key, &value)) {
    void** other = sl_util_map_find(&b, key);
    CHECK(other != NULL && *(int64_t*)*other == *(int64_t*)value);
  }
  /* The cell form: values that are sl_values, stored as they are. */
  sl_util_map_init(&cells, host, sl_util_value_cell_free);
  sl_util_map_init(&again, host, sl_util_value_cell_free);
  {
    sl_value s = host->string_create("payload", 7);
    CHECK(sl_util_map_put(&cells, sl_int(1), sl_util_value_cell_new(host, s)) == SL_OK);
    CHECK(sl_util_map_put(&cells, sl_int(2), sl_util_value_cell_new(host, sl_int(7))) == SL_OK);
  }
  CHECK(sl_util_map_encode(&cells, NULL, NULL, &cell_state) == SL_OK);
  CHECK(sl_util_map_decode(&again, ctx, cell_state, NULL, NULL) == SL_OK && again.count == 2);
  {
    void** one = sl_util_map_find(&again, sl_int(1));
    CHECK(one != NULL && str_is(host->value_str(sl_util_map_value_of(*one)), "payload"));
  }
  /* Null is an empty start; a non-array or a bad pair is DATA_LOSS. */
  CHECK(sl_util_map_decode(&again, ctx, sl_null(), NULL, NULL) == SL_OK && again.count == 0);
  CHECK(sl_util_map_decode(&again, ctx, sl_int(3), NULL, NULL) == SL_DATA_LOSS);
  bad = host->array_create(&state, 0);
  {
    sl_value one = sl_int(1);
    sl_value wrapped = host->array_create(&one, 1);
    host->value_release(bad);
    bad = host->array_create(&wrapped, 1);
    host->value_release(wrapped);
  }
  CHECK(sl_util_map_decode(&again, ctx, bad, NULL, NULL) == SL_DATA_LOSS);
  /* A decode failure is returned as it is: count_decode refuses a string state. */
  CHECK(sl_util_map_decode(&b, ctx, cell_state, count_decode, NULL) == SL_DATA_LOSS);
  host->value_release(bad);
  host->value_release(cell_state);
  host->value_release(state);
  sl_util_map_free(&again);
  sl_util_map_free(&cells);
  sl_util_map_free(&a);
  sl_util_map_free(&b);
  return NULL;
}
