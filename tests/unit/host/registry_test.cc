// The registry's checks on plugin descriptors, through the same add_plugin
// path a dlopen'ed plugin takes.
#include "registry/plugin_registry.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "value/value.hpp"

#include <cstddef>
#include <cstring>

namespace sluice::host {
namespace {

sl_status noop_create(const sl_node_init*, void** self) {
  *self = nullptr;
  return SL_OK;
}
void noop_destroy(void*) {}
sl_status noop_process(void*, sl_context*, uint32_t, const sl_batch*) { return SL_OK; }

const sl_param k_params[] = {
    {sizeof(sl_param), "n", SL_PARAM_INT, 0, "3", "how many", 0, 0, 0.0, 0.0, nullptr},
};

sl_node_type make_operator(const char* name) {
  sl_node_type t{};
  t.struct_size = sizeof t;
  t.role = SL_ROLE_OPERATOR;
  t.name = name;
  t.doc = "test operator";
  t.params = k_params;
  t.param_count = 1;
  t.min_inputs = 1;
  t.max_inputs = 1;
  t.create = noop_create;
  t.destroy = noop_destroy;
  t.process = noop_process;
  return t;
}

sl_plugin make_plugin(const char* name, const sl_node_type* const* types, uint32_t count) {
  sl_plugin p{};
  p.struct_size = sizeof p;
  p.abi_major = SL_ABI_MAJOR;
  p.abi_minor = SL_ABI_MINOR;
  p.name = name;
  p.version = "1.0";
  p.node_types = types;
  p.node_type_count = count;
  return p;
}

TEST(Registry, RegistersNodeTypesWithTheirParams) {
  PluginRegistry registry;
  sl_node_type op = make_operator("twice");
  const sl_node_type* types[] = {&op};
  sl_plugin p = make_plugin("p", types, 1);
  ASSERT_TRUE(registry.add_plugin(&p, "/x/libp.so", nullptr).is_ok());
  const NodeTypeInfo* info = registry.find_node_type("twice");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->plugin->file, "/x/libp.so");
  ASSERT_EQ(info->params.size(), 1u);
  EXPECT_EQ(*info->params[0].default_json, "3");
}

TEST(Registry, RefusesAnotherAbiMajorNamingBothVersions) {
  PluginRegistry registry;
  sl_plugin p = make_plugin("p", nullptr, 0);
  p.abi_major = SL_ABI_MAJOR + 1;
  Status s = registry.add_plugin(&p, "/x/libnew.so", nullptr);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find(
                fmt::format("/x/libnew.so: plugin was built for sluice ABI {}.{}, this host speaks "
                            "ABI {}.{}",
                            SL_ABI_MAJOR + 1, SL_ABI_MINOR, SL_ABI_MAJOR, SL_ABI_MINOR)),
            std::string::npos)
      << s.message();
}

TEST(Registry, RefusesADuplicateTypeNamingBothFilesAndKeepsTheFirst) {
  PluginRegistry registry;
  sl_node_type a = make_operator("same"), b = make_operator("same");
  const sl_node_type* ta[] = {&a};
  const sl_node_type* tb[] = {&b};
  sl_plugin pa = make_plugin("first", ta, 1), pb = make_plugin("second", tb, 1);
  ASSERT_TRUE(registry.add_plugin(&pa, "/x/libfirst.so", nullptr).is_ok());
  Status s = registry.add_plugin(&pb, "/y/libsecond.so", nullptr);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("/y/libsecond.so: node type 'same' is already provided by plugin "
                             "'first' (/x/libfirst.so)"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.find_node_type("same")->plugin->name, "first");
}

TEST(Registry, ReadsAnOlderSmallerNodeTypeWithoutTouchingFieldsPastItsSize) {
  // A plugin built against an ABI whose sl_node_type ended after `process`:
  // the bytes past its struct_size are garbage here and must be ignored.
  alignas(sl_node_type) unsigned char storage[sizeof(sl_node_type)];
  std::memset(storage, 0xAB, sizeof storage);
  sl_node_type op = make_operator("old");
  size_t old_size = offsetof(sl_node_type, process) + sizeof(op.process);
  std::memcpy(storage, &op, old_size);
  auto* old = reinterpret_cast<sl_node_type*>(storage);
  old->struct_size = static_cast<uint32_t>(old_size);
  const sl_node_type* types[] = {old};
  sl_plugin p = make_plugin("old", types, 1);
  p.abi_minor = 0;
  PluginRegistry registry;
  ASSERT_TRUE(registry.add_plugin(&p, "/x/libold.so", nullptr).is_ok());
  const NodeTypeInfo* info = registry.find_node_type("old");
  EXPECT_EQ(info->vtable.on_timer, nullptr);
  EXPECT_EQ(info->vtable.snapshot, nullptr);
  EXPECT_EQ(info->vtable.restore, nullptr);
}

TEST(Registry, RefusesADefaultThatDoesNotMatchItsType) {
  static const sl_param bad[] = {
      {sizeof(sl_param), "n", SL_PARAM_INT, 0, "\"three\"", "", 0, 0, 0.0, 0.0, nullptr}};
  sl_node_type op = make_operator("bad_default");
  op.params = bad;
  const sl_node_type* types[] = {&op};
  sl_plugin p = make_plugin("p", types, 1);
  PluginRegistry registry;
  Status s = registry.add_plugin(&p, "/x/libp.so", nullptr);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("parameter 'n' has default '\"three\"' that is not a valid int"),
            std::string::npos)
      << s.message();
}

// ABI 1.2 constraints: read into ParamInfo, and refused when they cannot hold.
Status add_with_param(PluginRegistry& registry, const sl_param* param) {
  static sl_node_type op;
  op = make_operator("constrained");
  op.params = param;
  static const sl_node_type* types[] = {&op};
  static sl_plugin p;
  p = make_plugin("p", types, 1);
  return registry.add_plugin(&p, "/x/libp.so", nullptr);
}

sl_param int_param(const char* default_json, uint32_t flags, int64_t lo, int64_t hi) {
  sl_param p{};
  p.struct_size = sizeof p;
  p.name = "n";
  p.type = SL_PARAM_INT;
  p.flags = flags;
  p.default_json = default_json;
  p.doc = "";
  p.min_int = lo;
  p.max_int = hi;
  return p;
}

TEST(Registry, ReadsConstraints) {
  PluginRegistry registry;
  const sl_param p = int_param("3", SL_PARAM_HAS_MIN | SL_PARAM_HAS_MAX, 1, 9);
  ASSERT_TRUE(add_with_param(registry, &p).is_ok());
  const ParamInfo& info = registry.find_node_type("constrained")->params.at(0);
  EXPECT_EQ(info.min_int, 1);
  EXPECT_EQ(info.max_int, 9);
  EXPECT_EQ(constraint_text(info), "1..9");
  EXPECT_EQ(constraint_violation(info, Value::integer(0)), "must be 1..9 (got 0)");
  EXPECT_EQ(constraint_violation(info, Value::integer(9)), std::nullopt);
}

TEST(Registry, RefusesADefaultThatBreaksItsConstraint) {
  PluginRegistry registry;
  const sl_param p = int_param("0", SL_PARAM_HAS_MIN, 1, 0);
  Status s = add_with_param(registry, &p);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("parameter 'n' has default '0' that breaks its own constraint: must "
                             "be at least 1 (got 0)"),
            std::string::npos)
      << s.message();
}

TEST(Registry, IgnoresConstraintFlagsOfAPluginBuiltBefore12) {
  // Before 1.2 these bits meant nothing (and the fields do not exist): not read.
  PluginRegistry registry;
  sl_param old_size = int_param("0", SL_PARAM_HAS_MIN | SL_PARAM_NON_EMPTY, 1, 0);
  old_size.struct_size = offsetof(sl_param, doc) + sizeof(const char*);
  ASSERT_TRUE(add_with_param(registry, &old_size).is_ok());
  const ParamInfo& info = registry.find_node_type("constrained")->params.at(0);
  EXPECT_FALSE(info.has_constraints());
}

TEST(Registry, RefusesConstraintsThatCannotHold) {
  PluginRegistry registry;
  sl_param upside_down = int_param("5", SL_PARAM_HAS_MIN | SL_PARAM_HAS_MAX, 9, 1);
  EXPECT_NE(add_with_param(registry, &upside_down).message().find("minimum above its maximum"),
            std::string::npos);
  sl_param min_on_string = int_param(nullptr, SL_PARAM_HAS_MIN, 1, 0);
  min_on_string.type = SL_PARAM_STRING;
  EXPECT_NE(add_with_param(registry, &min_on_string).message().find("declares a minimum"),
            std::string::npos);
  sl_param unknown_kind = int_param(nullptr, SL_PARAM_HAS_CHOICES, 0, 0);
  unknown_kind.type = SL_PARAM_FUNCTION;
  unknown_kind.choices = "map|mapper";
  EXPECT_NE(add_with_param(registry, &unknown_kind).message().find("function kind 'mapper'"),
            std::string::npos);
}

TEST(Registry, RefusesAnOperatorWithoutProcess) {
  sl_node_type op = make_operator("broken");
  op.process = nullptr;
  const sl_node_type* types[] = {&op};
  sl_plugin p = make_plugin("p", types, 1);
  PluginRegistry registry;
  Status s = registry.add_plugin(&p, "/x/libp.so", nullptr);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node type 'broken' is an operator without process"),
            std::string::npos);
}

sl_status noop_snapshot(void*, sl_context*, sl_value* out) {
  *out = sl_null();
  return SL_OK;
}
sl_status noop_restore(void*, sl_context*, sl_value) { return SL_OK; }
sl_status noop_restore_group(void*, sl_context*, uint32_t, sl_value) { return SL_OK; }
sl_status noop_drop_group(void*, sl_context*, uint32_t) { return SL_OK; }

// Each way the state flags and callbacks of a type can disagree: all were silent state loss
// (snapshot without the flag was never called; the flag without snapshot was skipped).
TEST(Registry, RefusesStateFlagsThatDisagreeWithTheCallbacks) {
  struct Case {
    const char* what;
    uint32_t flags;
    bool snapshot, restore, groups;
    const char* message;
  };
  const Case cases[] = {
      {"callbacks without the flag", 0, true, true, false,
       "sets snapshot and restore without the flag SL_NODE_STATEFUL, so its state would never "
       "be saved"},
      {"the flag without callbacks", SL_NODE_STATEFUL, false, false, false,
       "has the flag SL_NODE_STATEFUL but no snapshot and restore callbacks"},
      {"snapshot alone", SL_NODE_STATEFUL, true, false, false,
       "sets snapshot but not restore: a stateful type needs both"},
      {"restore alone", SL_NODE_STATEFUL, false, true, false,
       "sets restore but not snapshot: a stateful type needs both"},
      {"keyed without stateful", SL_NODE_KEYED_STATE, false, false, true,
       "has SL_NODE_KEYED_STATE without SL_NODE_STATEFUL"},
      {"keyed without group callbacks", SL_NODE_STATEFUL | SL_NODE_KEYED_STATE, true, true, false,
       "has SL_NODE_KEYED_STATE but not both restore_group and drop_group"},
      {"group callbacks without keyed", SL_NODE_STATEFUL, true, true, true,
       "sets restore_group or drop_group without the flag SL_NODE_KEYED_STATE"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    sl_node_type op = make_operator("stateful_op");
    op.flags = c.flags;
    if (c.snapshot) op.snapshot = noop_snapshot;
    if (c.restore) op.restore = noop_restore;
    if (c.groups) {
      op.restore_group = noop_restore_group;
      op.drop_group = noop_drop_group;
    }
    const sl_node_type* types[] = {&op};
    sl_plugin p = make_plugin("p", types, 1);
    PluginRegistry registry;
    Status s = registry.add_plugin(&p, "/x/libp.so", nullptr);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("node type 'stateful_op' " + std::string(c.message)),
              std::string::npos)
        << s.message();
    EXPECT_EQ(registry.find_node_type("stateful_op"), nullptr);
  }
  // And the agreeing forms load.
  sl_node_type plain = make_operator("plain_op");
  sl_node_type stateful = make_operator("stateful_op");
  stateful.flags = SL_NODE_STATEFUL;
  stateful.snapshot = noop_snapshot;
  stateful.restore = noop_restore;
  sl_node_type keyed = make_operator("keyed_op");
  keyed.flags = SL_NODE_STATEFUL | SL_NODE_KEYED_STATE;
  keyed.snapshot = noop_snapshot;
  keyed.restore = noop_restore;
  keyed.restore_group = noop_restore_group;
  keyed.drop_group = noop_drop_group;
  const sl_node_type* types[] = {&plain, &stateful, &keyed};
  sl_plugin p = make_plugin("p", types, 3);
  PluginRegistry registry;
  EXPECT_TRUE(registry.add_plugin(&p, "/x/libp.so", nullptr).is_ok());
}

}  // namespace
}  // namespace sluice::host
