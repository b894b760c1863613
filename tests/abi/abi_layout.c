/*
 * Golden layout test of the sluice C ABI: sizeof/offsetof of every public struct and
 * field of sluice.h, and the value of every SL_* constant, against the table committed
 * in tests/abi/golden_layout.txt (x86_64, LP64: the table is skipped elsewhere).
 *
 * Why: a plugin built against an older sluice.h reads these structs with the offsets
 * compiled into it, and the host reads the plugin's structs with its own. So, within
 * one ABI major version:
 *  - an existing field never changes offset or size, and is never removed or
 *    reordered: a changed offset is an ABI break (that needs SL_ABI_MAJOR + 1);
 *  - a new field may only be APPENDED, and only to a struct that starts with
 *    `uint32_t struct_size` (readers check struct_size before touching it); then
 *    SL_ABI_MINOR goes up;
 *  - structs without struct_size (sl_value, sl_str, sl_message: passed by value or in
 *    arrays) are frozen;
 *  - constants keep their values (SL_ABI_MINOR excepted: it grows with appends).
 *
 * After an intended, reviewed append: add the field to k_fields below, then update the
 * golden table with the lines this test prints (or regenerate it with
 *   build/tests/abi/abi_layout --print > tests/abi/golden_layout.txt
 * and review the diff: only added lines, sizeof growth and SL_ABI_MINOR may change).
 *
 * Usage: abi_layout <golden_layout.txt>   compare; exit 1 naming every difference
 *        abi_layout --print               print this build's table
 */
#include <sluice/sluice.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what this build of sluice.h looks like ---------------------------------- */

typedef struct struct_info {
  const char* name;
  size_t size;
  size_t align;
} struct_info;

typedef struct field_info {
  const char* type;
  const char* name;
  size_t offset;
  size_t size;
} field_info;

typedef struct const_info {
  const char* name;
  long long value;
} const_info;

#define STRUCT(T) \
  { #T, sizeof(T), _Alignof(T) }
#define FIELD(T, m) \
  { #T, #m, offsetof(T, m), sizeof(((T*)0)->m) }
#define CONST(c) \
  { #c, (long long)(c) }

static const struct_info k_structs[] = {
    STRUCT(sl_value),         STRUCT(sl_str),
    STRUCT(sl_message),       STRUCT(sl_batch),
    STRUCT(sl_param),         STRUCT(sl_host_api),
    STRUCT(sl_node_init),     STRUCT(sl_node_type),
    STRUCT(sl_function_init), STRUCT(sl_function_def),
    STRUCT(sl_plugin),        STRUCT(sl_store_init),
    STRUCT(sl_epoch_info),    STRUCT(sl_checkpoint_store),
    STRUCT(sl_validate_init),
};

/* Every field, in declaration order. A new field of sluice.h goes here too (the
 * coverage check below notices bytes that no listed field explains). */
static const field_info k_fields[] = {
    FIELD(sl_value, kind),
    FIELD(sl_value, reserved),
    FIELD(sl_value, as.i),
    FIELD(sl_value, as.f),
    FIELD(sl_value, as.block),

    FIELD(sl_str, data),
    FIELD(sl_str, size),

    FIELD(sl_message, value),
    FIELD(sl_message, key),
    FIELD(sl_message, headers),
    FIELD(sl_message, timestamp_ns),
    FIELD(sl_message, reserved),
    FIELD(sl_message, key_group), /* 1.3: a union member beside reserved */

    FIELD(sl_batch, struct_size),
    FIELD(sl_batch, message_size),
    FIELD(sl_batch, messages),
    FIELD(sl_batch, count),

    FIELD(sl_param, struct_size),
    FIELD(sl_param, name),
    FIELD(sl_param, type),
    FIELD(sl_param, flags),
    FIELD(sl_param, default_json),
    FIELD(sl_param, doc),
    FIELD(sl_param, min_int),
    FIELD(sl_param, max_int),
    FIELD(sl_param, min_float),
    FIELD(sl_param, max_float),
    FIELD(sl_param, choices),

    FIELD(sl_host_api, struct_size),
    FIELD(sl_host_api, abi_major),
    FIELD(sl_host_api, abi_minor),
    FIELD(sl_host_api, set_error),
    FIELD(sl_host_api, log),
    FIELD(sl_host_api, value_retain),
    FIELD(sl_host_api, value_release),
    FIELD(sl_host_api, string_create),
    FIELD(sl_host_api, bytes_create),
    FIELD(sl_host_api, bytes_wrap),
    FIELD(sl_host_api, array_create),
    FIELD(sl_host_api, object_create),
    FIELD(sl_host_api, value_str),
    FIELD(sl_host_api, value_size),
    FIELD(sl_host_api, value_at),
    FIELD(sl_host_api, object_key_at),
    FIELD(sl_host_api, object_get),
    FIELD(sl_host_api, value_compare),
    FIELD(sl_host_api, value_hash),
    FIELD(sl_host_api, json_parse),
    FIELD(sl_host_api, json_dump),
    FIELD(sl_host_api, emit),
    FIELD(sl_host_api, emit_values),
    FIELD(sl_host_api, now_ns),
    FIELD(sl_host_api, timer_start),
    FIELD(sl_host_api, timer_cancel),
    FIELD(sl_host_api, post),
    FIELD(sl_host_api, wake),
    FIELD(sl_host_api, set_backpressure),
    FIELD(sl_host_api, function_bind),
    FIELD(sl_host_api, function_kind),
    FIELD(sl_host_api, function_call),
    FIELD(sl_host_api, function_call_batch),
    FIELD(sl_host_api, function_release),
    FIELD(sl_host_api, node_id),
    FIELD(sl_host_api, set_input_backpressure),
    FIELD(sl_host_api, io_watch),
    FIELD(sl_host_api, io_unwatch),
    FIELD(sl_host_api, checkpoint_ready),
    FIELD(sl_host_api, object_set_unique),
    FIELD(sl_host_api, gauge_set),
    FIELD(sl_host_api, object_put_unique),
    FIELD(sl_host_api, array_items),
    FIELD(sl_host_api, key_groups_assigned),
    FIELD(sl_host_api, key_groups_revoked),
    FIELD(sl_host_api, emit_watermark),
    FIELD(sl_host_api, emit_side),
    FIELD(sl_host_api, post_owned),

    FIELD(sl_node_init, struct_size),
    FIELD(sl_node_init, host),
    FIELD(sl_node_init, ctx),
    FIELD(sl_node_init, config),
    FIELD(sl_node_init, input_count),
    FIELD(sl_node_init, task_index),
    FIELD(sl_node_init, task_count),
    FIELD(sl_node_init, input_ids),
    FIELD(sl_node_init, pipeline),
    FIELD(sl_node_init, checkpointing),

    FIELD(sl_node_type, struct_size),
    FIELD(sl_node_type, role),
    FIELD(sl_node_type, name),
    FIELD(sl_node_type, doc),
    FIELD(sl_node_type, params),
    FIELD(sl_node_type, param_count),
    FIELD(sl_node_type, flags),
    FIELD(sl_node_type, min_inputs),
    FIELD(sl_node_type, max_inputs),
    FIELD(sl_node_type, create),
    FIELD(sl_node_type, destroy),
    FIELD(sl_node_type, start),
    FIELD(sl_node_type, poll),
    FIELD(sl_node_type, process),
    FIELD(sl_node_type, on_timer),
    FIELD(sl_node_type, on_input_end),
    FIELD(sl_node_type, finish),
    FIELD(sl_node_type, stop),
    FIELD(sl_node_type, snapshot),
    FIELD(sl_node_type, restore),
    FIELD(sl_node_type, on_io),
    FIELD(sl_node_type, checkpoint_prepare),
    FIELD(sl_node_type, checkpoint_commit),
    FIELD(sl_node_type, checkpoint_abort),
    FIELD(sl_node_type, checkpoint_recover),
    FIELD(sl_node_type, map_values),
    FIELD(sl_node_type, select_values),
    FIELD(sl_node_type, validate),
    FIELD(sl_node_type, map_keys),
    FIELD(sl_node_type, restore_group),
    FIELD(sl_node_type, drop_group),
    FIELD(sl_node_type, on_watermark),
    FIELD(sl_node_type, side_outputs),
    FIELD(sl_node_type, side_output_count),

    FIELD(sl_function_init, struct_size),
    FIELD(sl_function_init, host),
    FIELD(sl_function_init, ctx),
    FIELD(sl_function_init, args),

    FIELD(sl_function_def, struct_size),
    FIELD(sl_function_def, kind),
    FIELD(sl_function_def, name),
    FIELD(sl_function_def, doc),
    FIELD(sl_function_def, params),
    FIELD(sl_function_def, param_count),
    FIELD(sl_function_def, min_arity),
    FIELD(sl_function_def, max_arity),
    FIELD(sl_function_def, bind),
    FIELD(sl_function_def, unbind),
    FIELD(sl_function_def, call),
    FIELD(sl_function_def, call_batch),
    FIELD(sl_function_def, validate),

    FIELD(sl_plugin, struct_size),
    FIELD(sl_plugin, abi_major),
    FIELD(sl_plugin, abi_minor),
    FIELD(sl_plugin, min_host_minor),
    FIELD(sl_plugin, name),
    FIELD(sl_plugin, version),
    FIELD(sl_plugin, doc),
    FIELD(sl_plugin, node_types),
    FIELD(sl_plugin, node_type_count),
    FIELD(sl_plugin, functions),
    FIELD(sl_plugin, function_count),
    FIELD(sl_plugin, stores),
    FIELD(sl_plugin, store_count),
    FIELD(sl_store_init, struct_size),
    FIELD(sl_store_init, host),
    FIELD(sl_store_init, ctx),
    FIELD(sl_store_init, pipeline),
    FIELD(sl_store_init, config),
    FIELD(sl_epoch_info, struct_size),
    FIELD(sl_epoch_info, committed),
    FIELD(sl_epoch_info, epoch),
    FIELD(sl_epoch_info, time_ns),
    FIELD(sl_epoch_info, size),
    FIELD(sl_checkpoint_store, struct_size),
    FIELD(sl_checkpoint_store, name),
    FIELD(sl_checkpoint_store, doc),
    FIELD(sl_checkpoint_store, params),
    FIELD(sl_checkpoint_store, param_count),
    FIELD(sl_checkpoint_store, open),
    FIELD(sl_checkpoint_store, close),
    FIELD(sl_checkpoint_store, write),
    FIELD(sl_checkpoint_store, mark_committed),
    FIELD(sl_checkpoint_store, read),
    FIELD(sl_checkpoint_store, list),
    FIELD(sl_checkpoint_store, remove),
    FIELD(sl_validate_init, struct_size),
    FIELD(sl_validate_init, host),
    FIELD(sl_validate_init, config),
    FIELD(sl_validate_init, node_id),
    FIELD(sl_validate_init, input_count),
    FIELD(sl_validate_init, input_ids),
    FIELD(sl_validate_init, task_count),
    FIELD(sl_validate_init, checkpointing),
    FIELD(sl_validate_init, pipeline),
    FIELD(sl_validate_init, report),
    FIELD(sl_validate_init, report_arg),
    FIELD(sl_validate_init, environment),
};

static const const_info k_consts[] = {
    CONST(SL_ABI_MAJOR),
    CONST(SL_ABI_MINOR),
    CONST(SL_IO_READ),
    CONST(SL_IO_WRITE),
    CONST(SL_OK),
    CONST(SL_CANCELLED),
    CONST(SL_UNKNOWN),
    CONST(SL_INVALID_ARGUMENT),
    CONST(SL_NOT_FOUND),
    CONST(SL_ALREADY_EXISTS),
    CONST(SL_PERMISSION_DENIED),
    CONST(SL_RESOURCE_EXHAUSTED),
    CONST(SL_FAILED_PRECONDITION),
    CONST(SL_OUT_OF_RANGE),
    CONST(SL_UNIMPLEMENTED),
    CONST(SL_INTERNAL),
    CONST(SL_UNAVAILABLE),
    CONST(SL_DATA_LOSS),
    CONST(SL_KIND_NULL),
    CONST(SL_KIND_BOOL),
    CONST(SL_KIND_INT),
    CONST(SL_KIND_FLOAT),
    CONST(SL_KIND_STRING),
    CONST(SL_KIND_BYTES),
    CONST(SL_KIND_ARRAY),
    CONST(SL_KIND_OBJECT),
    CONST(SL_NO_TIMESTAMP),
    CONST(SL_NO_WATERMARK),
    CONST(SL_WATERMARK_END),
    CONST(SL_PARAM_BOOL),
    CONST(SL_PARAM_INT),
    CONST(SL_PARAM_FLOAT),
    CONST(SL_PARAM_STRING),
    CONST(SL_PARAM_ARRAY),
    CONST(SL_PARAM_TABLE),
    CONST(SL_PARAM_ANY),
    CONST(SL_PARAM_FUNCTION),
    CONST(SL_PARAM_DURATION),
    CONST(SL_PARAM_REQUIRED),
    CONST(SL_LOG_TRACE),
    CONST(SL_LOG_DEBUG),
    CONST(SL_LOG_INFO),
    CONST(SL_LOG_WARN),
    CONST(SL_LOG_ERROR),
    CONST(SL_SOURCE_MORE),
    CONST(SL_SOURCE_IDLE),
    CONST(SL_SOURCE_DONE),
    CONST(SL_FUNCTION_MAP),
    CONST(SL_FUNCTION_PREDICATE),
    CONST(SL_FUNCTION_REDUCER),
    CONST(SL_ROLE_SOURCE),
    CONST(SL_ROLE_OPERATOR),
    CONST(SL_ROLE_SINK),
    CONST(SL_NODE_STATEFUL),
    CONST(SL_NODE_KEYED_STATE),
    CONST(SL_NODE_WATERMARKS),
    CONST(SL_INPUTS_UNLIMITED),
    CONST(SL_PARAM_NON_EMPTY),
    CONST(SL_PARAM_HAS_MIN),
    CONST(SL_PARAM_HAS_MAX),
    CONST(SL_PARAM_MIN_EXCLUSIVE),
    CONST(SL_PARAM_HAS_CHOICES),
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int g_failures = 0;

static void fail(const char* fmt_what, const char* a, const char* b) {
  ++g_failures;
  fprintf(stderr, "ABI: ");
  fprintf(stderr, fmt_what, a, b);
  fputc('\n', stderr);
}

/* A struct is versioned when it starts with `uint32_t struct_size`. */
static int is_versioned(const char* type) {
  for (size_t i = 0; i < COUNT(k_fields); ++i) {
    if (strcmp(k_fields[i].type, type) == 0 && strcmp(k_fields[i].name, "struct_size") == 0) {
      return k_fields[i].offset == 0 && k_fields[i].size == sizeof(uint32_t);
    }
  }
  return 0;
}

/* ---- self-checks that need no golden table ------------------------------------ */

static size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* Every byte of every struct must be explained by a listed field or by the padding
 * the compiler must insert (fields are scalars, pointers or 8-aligned structs, so a
 * field's alignment is min(size, 8) on x86_64). Catches a field that was added to
 * sluice.h but not to k_fields. */
static void check_coverage(void) {
  char buf[256];
  for (size_t s = 0; s < COUNT(k_structs); ++s) {
    const struct_info* st = &k_structs[s];
    size_t end = 0;
    for (size_t i = 0; i < COUNT(k_fields); ++i) {
      const field_info* f = &k_fields[i];
      if (strcmp(f->type, st->name) != 0) continue;
      size_t align = f->size < 8 ? f->size : 8;
      if (f->offset < end) { /* a union member, or fields listed out of order */
        if (f->offset + f->size > end) end = f->offset + f->size;
        continue;
      }
      if (f->offset != align_up(end, align)) {
        snprintf(buf, sizeof buf, "bytes [%zu, %zu) before field '%s'", end, f->offset, f->name);
        fail(
            "%s: %s are not covered by any field listed in abi_layout.c: add the new field "
            "to k_fields (and review it against the append-only rule)",
            st->name, buf);
      }
      end = f->offset + f->size;
    }
    if (align_up(end, st->align) != st->size) {
      snprintf(buf, sizeof buf, "bytes [%zu, %zu) at the end", end, st->size);
      fail(
          "%s: %s are not covered by any field listed in abi_layout.c: add the new field "
          "to k_fields (and to golden_layout.txt if it was appended on purpose)",
          st->name, buf);
    }
  }
  if (sizeof(sl_value) != 16)
    fail("%s%s: a value must fit in 16 bytes (docs/ARCHITECTURE.md, The ABI)", "sl_value", "");
}

/* ---- printing -------------------------------------------------------------------- */

static void print_table(FILE* out) {
  fprintf(out,
          "# Golden layout of the sluice C ABI (sluice.h) on x86_64 / LP64.\n"
          "# Checked by tests/abi/abi_layout.c; see the rules there. In short: an existing\n"
          "# line never changes (a moved field or changed constant is an ABI break); new\n"
          "# fields are only appended to structs marked `versioned` (they start with\n"
          "# struct_size), which then grow; `frozen` structs never change.\n"
          "#\n"
          "# struct <name> <sizeof> <alignof> versioned|frozen\n"
          "# field <struct> <field> <offset> <size>\n"
          "# const <name> <value>\n"
          "# symbol <name> <text>\n");
  for (size_t s = 0; s < COUNT(k_structs); ++s) {
    const struct_info* st = &k_structs[s];
    fprintf(out, "\nstruct %s %zu %zu %s\n", st->name, st->size, st->align,
            is_versioned(st->name) ? "versioned" : "frozen");
    for (size_t i = 0; i < COUNT(k_fields); ++i) {
      const field_info* f = &k_fields[i];
      if (strcmp(f->type, st->name) == 0) {
        fprintf(out, "field %s %s %zu %zu\n", f->type, f->name, f->offset, f->size);
      }
    }
  }
  fprintf(out, "\n");
  for (size_t i = 0; i < COUNT(k_consts); ++i) {
    fprintf(out, "const %s %lld\n", k_consts[i].name, k_consts[i].value);
  }
  fprintf(out, "symbol SL_PLUGIN_ENTRY_SYMBOL %s\n", SL_PLUGIN_ENTRY_SYMBOL);
}

/* ---- comparison with the golden table -------------------------------------------- */

enum { k_max_golden = 1024 };

typedef struct golden_line {
  char kind[16];
  char a[64];
  char b[64];
  unsigned long long n1, n2;
  char tag[16];
  long long value;
  int seen;
} golden_line;

static golden_line g_golden[k_max_golden];
static size_t g_golden_count = 0;

static int load_golden(const char* path) {
  FILE* in = fopen(path, "r");
  if (!in) {
    fprintf(stderr, "ABI: cannot open golden table '%s'\n", path);
    return 0;
  }
  char line[512];
  int lineno = 0;
  while (fgets(line, sizeof line, in)) {
    ++lineno;
    char* p = line;
    while (*p == ' ' || *p == '\t') ++p;
    if (*p == '#' || *p == '\n' || *p == '\0') continue;
    if (g_golden_count == k_max_golden) {
      fprintf(stderr, "ABI: %s: more than %d lines\n", path, k_max_golden);
      fclose(in);
      return 0;
    }
    golden_line* g = &g_golden[g_golden_count];
    memset(g, 0, sizeof *g);
    int ok = 0;
    if (sscanf(p, "%15s", g->kind) != 1)
      ok = 0;
    else if (strcmp(g->kind, "struct") == 0)
      ok = sscanf(p, "%*s %63s %llu %llu %15s", g->a, &g->n1, &g->n2, g->tag) == 4;
    else if (strcmp(g->kind, "field") == 0)
      ok = sscanf(p, "%*s %63s %63s %llu %llu", g->a, g->b, &g->n1, &g->n2) == 4;
    else if (strcmp(g->kind, "const") == 0)
      ok = sscanf(p, "%*s %63s %lld", g->a, &g->value) == 2;
    else if (strcmp(g->kind, "symbol") == 0)
      ok = sscanf(p, "%*s %63s %63s", g->a, g->b) == 2;
    if (!ok) {
      fprintf(stderr, "ABI: %s:%d: cannot parse: %s", path, lineno, line);
      fclose(in);
      return 0;
    }
    ++g_golden_count;
  }
  fclose(in);
  return 1;
}

static golden_line* find_golden(const char* kind, const char* a, const char* b) {
  for (size_t i = 0; i < g_golden_count; ++i) {
    golden_line* g = &g_golden[i];
    if (strcmp(g->kind, kind) == 0 && strcmp(g->a, a) == 0 && (!b || strcmp(g->b, b) == 0)) {
      return g;
    }
  }
  return NULL;
}

/* True when a field of `type` that the golden table knows has moved or changed size. */
static int has_moved_field(const char* type) {
  for (size_t i = 0; i < COUNT(k_fields); ++i) {
    const field_info* f = &k_fields[i];
    if (strcmp(f->type, type) != 0) continue;
    golden_line* g = find_golden("field", f->type, f->name);
    if (g && (g->n1 != f->offset || g->n2 != f->size)) return 1;
  }
  return 0;
}

static void compare(void) {
  char what[160], detail[256];

  for (size_t s = 0; s < COUNT(k_structs); ++s) {
    const struct_info* st = &k_structs[s];
    const char* tag = is_versioned(st->name) ? "versioned" : "frozen";
    golden_line* g = find_golden("struct", st->name, NULL);
    if (!g) {
      snprintf(detail, sizeof detail,
               "new struct, not in the golden table: add\n  struct %s %zu %zu %s", st->name,
               st->size, st->align, tag);
      fail("%s: %s", st->name, detail);
      continue;
    }
    g->seen = 1;
    if (strcmp(g->tag, tag) != 0) {
      snprintf(detail, sizeof detail, "was %s, is now %s (struct_size must stay the first field)",
               g->tag, tag);
      fail("BREAK %s: %s", st->name, detail);
    }
    if (g->n2 != st->align) {
      snprintf(detail, sizeof detail, "alignment changed from %llu to %zu", g->n2, st->align);
      fail("BREAK %s: %s", st->name, detail);
    }
    if (g->n1 != st->size) {
      if (has_moved_field(st->name)) {
        snprintf(detail, sizeof detail, "sizeof changed from %llu to %zu (see the moved fields)",
                 g->n1, st->size);
        fail("BREAK %s: %s", st->name, detail);
      } else if (strcmp(g->tag, "frozen") == 0 || st->size < g->n1) {
        snprintf(detail, sizeof detail, "sizeof changed from %llu to %zu (%s)", g->n1, st->size,
                 st->size < g->n1 ? "shrank: a field was removed or narrowed"
                                  : "frozen struct: it travels by value or in arrays");
        fail("BREAK %s: %s", st->name, detail);
      } else {
        snprintf(detail, sizeof detail,
                 "sizeof grew from %llu to %zu: allowed when fields were appended; update the "
                 "golden line to\n  struct %s %zu %zu %s",
                 g->n1, st->size, st->name, st->size, st->align, tag);
        fail("%s: %s", st->name, detail);
      }
    }
  }

  for (size_t i = 0; i < COUNT(k_fields); ++i) {
    const field_info* f = &k_fields[i];
    snprintf(what, sizeof what, "%s.%s", f->type, f->name);
    golden_line* g = find_golden("field", f->type, f->name);
    if (g) {
      g->seen = 1;
      if (g->n1 != f->offset || g->n2 != f->size) {
        snprintf(detail, sizeof detail,
                 "moved or resized: golden offset %llu size %llu, now offset %zu size %zu. "
                 "Existing fields must never move: append new fields at the end instead",
                 g->n1, g->n2, f->offset, f->size);
        fail("BREAK %s: %s", what, detail);
      }
      continue;
    }
    golden_line* gs = find_golden("struct", f->type, NULL);
    if (gs && f->offset < gs->n1) {
      snprintf(detail, sizeof detail,
               "new field at offset %zu, inside the old sizeof %llu: it was inserted, not "
               "appended. Move it to the end of the struct",
               f->offset, gs->n1);
      fail("BREAK %s: %s", what, detail);
    } else if (gs && strcmp(gs->tag, "frozen") == 0) {
      fail("BREAK %s: %s", what, "new field in a frozen struct (no struct_size)");
    } else {
      snprintf(detail, sizeof detail,
               "new field, appended (allowed; bump SL_ABI_MINOR): add to golden_layout.txt\n"
               "  field %s %s %zu %zu",
               f->type, f->name, f->offset, f->size);
      fail("%s: %s", what, detail);
    }
  }

  for (size_t i = 0; i < COUNT(k_consts); ++i) {
    const const_info* c = &k_consts[i];
    golden_line* g = find_golden("const", c->name, NULL);
    if (!g) {
      snprintf(detail, sizeof detail, "new constant: add to golden_layout.txt\n  const %s %lld",
               c->name, c->value);
      fail("%s: %s", c->name, detail);
      continue;
    }
    g->seen = 1;
    if (g->value != c->value) {
      int minor = strcmp(c->name, "SL_ABI_MINOR") == 0 && c->value > g->value;
      snprintf(detail, sizeof detail, "changed from %lld to %lld%s", g->value, c->value,
               minor ? ": fine after an append; update the golden line" : "");
      fail(minor ? "%s: %s" : "BREAK %s: %s", c->name, detail);
    }
  }

  golden_line* sym = find_golden("symbol", "SL_PLUGIN_ENTRY_SYMBOL", NULL);
  if (sym) {
    sym->seen = 1;
    if (strcmp(sym->b, SL_PLUGIN_ENTRY_SYMBOL) != 0) {
      fail("BREAK SL_PLUGIN_ENTRY_SYMBOL: changed from %s to %s", sym->b, SL_PLUGIN_ENTRY_SYMBOL);
    }
  } else {
    fail("%s%s: missing from golden_layout.txt", "SL_PLUGIN_ENTRY_SYMBOL", "");
  }

  for (size_t i = 0; i < g_golden_count; ++i) {
    golden_line* g = &g_golden[i];
    if (g->seen) continue;
    if (strcmp(g->kind, "field") == 0) {
      snprintf(what, sizeof what, "%s.%s", g->a, g->b);
    } else {
      snprintf(what, sizeof what, "%s", g->a);
    }
    fail("BREAK %s: %s", what,
         "in golden_layout.txt but gone from sluice.h (or from the lists in abi_layout.c): "
         "fields and constants are never removed within an ABI major");
  }
}

int main(int argc, char** argv) {
#if !defined(__x86_64__) || !defined(__LP64__)
  (void)argc;
  (void)argv;
  (void)print_table;
  (void)compare;
  (void)load_golden;
  (void)check_coverage;
  printf("skipped: the golden table is for x86_64 / LP64\n");
  return 77;
#else
  if (argc != 2) {
    fprintf(stderr, "usage: %s <golden_layout.txt> | --print\n", argv[0]);
    return 2;
  }
  if (strcmp(argv[1], "--print") == 0) {
    print_table(stdout);
    return 0;
  }
  check_coverage();
  if (!load_golden(argv[1])) return 1;
  compare();
  if (g_failures) {
    fprintf(stderr,
            "\nABI: %d difference(s) from %s.\n"
            "Lines marked BREAK change the layout plugins already compiled against; the "
            "others are allowed appends that must be recorded in the golden table.\n",
            g_failures, argv[1]);
    return 1;
  }
  printf("ABI layout matches %s: %zu structs, %zu fields, %zu constants\n", argv[1],
         COUNT(k_structs), COUNT(k_fields), COUNT(k_consts));
  return 0;
#endif
}
