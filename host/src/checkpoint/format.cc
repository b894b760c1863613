#include "checkpoint/format.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstring>
#include <utility>

namespace sluice::host::checkpoint {
namespace {

// Value tags of encode_value.
enum Tag : uint8_t {
  k_null = 0,
  k_false = 1,
  k_true = 2,
  k_int = 3,
  k_float = 4,
  k_string = 5,
  k_bytes = 6,
  k_array = 7,
  k_object = 8,
};
constexpr int k_max_depth = 512;  // deeper input is refused (no stack exhaustion on bad data)

// CRC-32C, software: slicing-by-8 (8 bytes per step, several times the bytewise table). table[0] is
// the classic bytewise table; table[k][i] = CRC of byte i followed by k zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> make_crc_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (size_t k = 1; k < 8; ++k) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
  }
  return t;
}
constexpr std::array<std::array<uint32_t, 256>, 8> k_crc_tables = make_crc_tables();

uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

// `crc` is the running (inverted) register, as inside crc32c().
uint32_t crc32c_soft(const unsigned char* p, size_t n, uint32_t crc) {
  const auto& t = k_crc_tables;
  for (; n >= 8; n -= 8, p += 8) {
    const uint64_t x = load_le64(p) ^ crc;
    crc = t[7][x & 0xFF] ^ t[6][(x >> 8) & 0xFF] ^ t[5][(x >> 16) & 0xFF] ^ t[4][(x >> 24) & 0xFF] ^
          t[3][(x >> 32) & 0xFF] ^ t[2][(x >> 40) & 0xFF] ^ t[1][(x >> 48) & 0xFF] ^ t[0][x >> 56];
  }
  for (; n > 0; --n, ++p) crc = t[0][(crc ^ *p) & 0xFF] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The SSE4.2 crc32 instruction computes CRC-32C (Castagnoli) itself: ~20x the table.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const unsigned char* p, size_t n,
                                                        uint32_t crc) {
  uint64_t c = crc;
  for (; n >= 8; n -= 8, p += 8) c = __builtin_ia32_crc32di(c, load_le64(p));
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = __builtin_ia32_crc32qi(c32, *p);
  return c32;
}
// Static initialisation may run before libgcc's own: __builtin_cpu_init first.
const bool k_have_sse42 = [] {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2") != 0;
}();
#endif

void put_u64(std::string& out, uint64_t v) {
  std::array<char, 8> b{};
  for (size_t i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  out.append(b.data(), b.size());
}
void set_le(std::string& out, size_t at, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) {
    out[at + static_cast<size_t>(i)] = static_cast<char>((v >> (8 * i)) & 0xFF);
  }
}
size_t varint_size(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
uint64_t get_le(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= uint64_t{static_cast<unsigned char>(in[at + static_cast<size_t>(i)])} << (8 * i);
  }
  return v;
}

Status corrupt(std::string_view what) {
  return Status(SL_DATA_LOSS, fmt::format("corrupt checkpoint data: {}", what));
}

class Decoder {
 public:
  explicit Decoder(std::string_view in) : in_(in) {}

  Result<Value> value(int depth) {
    if (depth > k_max_depth) return corrupt("values nested too deeply");
    if (at_ >= in_.size()) return corrupt("ends inside a value");
    auto tag = static_cast<uint8_t>(in_[at_++]);
    switch (tag) {
      case k_null: return Value::null();
      case k_false: return Value::boolean(false);
      case k_true: return Value::boolean(true);
      case k_int:
      case k_float: {
        if (in_.size() - at_ < 8) return corrupt("ends inside a number");
        uint64_t bits = get_le(in_, at_, 8);
        at_ += 8;
        if (tag == k_int) return Value::integer(static_cast<int64_t>(bits));
        double d = 0;
        std::memcpy(&d, &bits, sizeof d);
        return Value::floating(d);
      }
      case k_string:
      case k_bytes: {
        SLUICE_ASSIGN_OR_RETURN(std::string_view s, text());
        return tag == k_string ? Value::string(s) : Value::bytes(s);
      }
      case k_array: {
        SLUICE_ASSIGN_OR_RETURN(uint64_t n, varint());
        if (n > in_.size() - at_) return corrupt("array longer than the data");
        std::vector<Value> items;
        items.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
          SLUICE_ASSIGN_OR_RETURN(Value item, value(depth + 1));
          items.push_back(std::move(item));
        }
        return Value::array(items);
      }
      case k_object: {
        SLUICE_ASSIGN_OR_RETURN(uint64_t n, varint());
        // Each entry takes at least 2 bytes (key length, value tag): bounds the reservations.
        if (n > (in_.size() - at_) / 2) return corrupt("object longer than the data");
        // Keys are viewed in the input (object_create copies them into its block), values
        // are owned by `items` until object_create has taken its own references: no
        // std::string per key, no intermediate vector of pairs (a 1 M-key count_by state).
        std::vector<sl_str> keys;
        std::vector<Value> items;
        keys.reserve(n);
        items.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
          SLUICE_ASSIGN_OR_RETURN(std::string_view key, text());
          keys.push_back(sl_str{key.data(), key.size()});
          SLUICE_ASSIGN_OR_RETURN(Value item, value(depth + 1));
          items.push_back(std::move(item));
        }
        std::vector<sl_value> raw;
        raw.reserve(n);
        for (const Value& item : items) raw.push_back(item.raw());
        return Value::adopt(object_create(keys.data(), raw.data(), raw.size()));
      }
      default: return corrupt(fmt::format("unknown value tag {}", tag));
    }
  }
  [[nodiscard]] bool done() const { return at_ == in_.size(); }

 private:
  Result<uint64_t> varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at_ >= in_.size()) return corrupt("ends inside a length");
      auto byte = static_cast<uint8_t>(in_[at_++]);
      v |= uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80) == 0) return v;
    }
    return corrupt("length too long");
  }
  Result<std::string_view> text() {
    SLUICE_ASSIGN_OR_RETURN(uint64_t n, varint());
    if (n > in_.size() - at_) return corrupt("text longer than the data");
    std::string_view s = in_.substr(at_, n);
    at_ += n;
    return s;
  }

  std::string_view in_;
  size_t at_ = 0;
};

Value node_to_value(const NodeState& n) {
  std::vector<std::pair<std::string, Value>> e;
  e.emplace_back("id", Value::string(n.id));
  e.emplace_back("type", Value::string(n.type));
  e.emplace_back("role", Value::integer(n.role));
  e.emplace_back("state", n.state);
  return Value::object(e);
}

Result<std::string> get_string(const Value& obj, std::string_view key) {
  auto v = obj.get(key);
  if (!v || !v->is_string()) return corrupt(fmt::format("missing string '{}'", key));
  return std::string(v->as_str());
}
Result<int64_t> get_int(const Value& obj, std::string_view key) {
  auto v = obj.get(key);
  if (!v || !v->is_int()) return corrupt(fmt::format("missing int '{}'", key));
  return v->as_int();
}

}  // namespace

const NodeState* Checkpoint::find(size_t task, std::string_view id) const {
  if (task >= tasks.size()) return nullptr;
  for (const NodeState& n : tasks[task].nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

uint32_t crc32c(std::string_view data, uint32_t crc) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (k_have_sse42) return ~crc32c_sse42(p, data.size(), ~crc);
#endif
  return ~crc32c_soft(p, data.size(), ~crc);
}

uint32_t crc32c_portable(std::string_view data, uint32_t crc) {
  return ~crc32c_soft(reinterpret_cast<const unsigned char*>(data.data()), data.size(), ~crc);
}

namespace {

// The encoding reads values through the borrowed accessors (value_at, object_key_at): no
// reference count is touched per item.
size_t encoded_size(sl_value v) {
  switch (v.kind) {
    case SL_KIND_INT:
    case SL_KIND_FLOAT: return 9;
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {
      const size_t n = value_str(v).size;
      return 1 + varint_size(n) + n;
    }
    case SL_KIND_ARRAY: {
      const size_t n = value_size(v);
      size_t total = 1 + varint_size(n);
      for (size_t i = 0; i < n; ++i) total += encoded_size(value_at(v, i));
      return total;
    }
    case SL_KIND_OBJECT: {
      const size_t n = value_size(v);
      size_t total = 1 + varint_size(n);
      for (size_t i = 0; i < n; ++i) {
        const size_t k = object_key_at(v, i).size;
        total += varint_size(k) + k + encoded_size(value_at(v, i));
      }
      return total;
    }
    default: return 1;  // null, bool, and anything unknown (encoded as null)
  }
}

void encode_raw(sl_value v, std::string& out) {
  switch (v.kind) {
    case SL_KIND_NULL: out.push_back(static_cast<char>(k_null)); return;
    case SL_KIND_BOOL: out.push_back(static_cast<char>(v.as.i != 0 ? k_true : k_false)); return;
    case SL_KIND_INT:
      out.push_back(static_cast<char>(k_int));
      put_u64(out, static_cast<uint64_t>(v.as.i));
      return;
    case SL_KIND_FLOAT: {
      out.push_back(static_cast<char>(k_float));
      uint64_t bits = 0;
      std::memcpy(&bits, &v.as.f, sizeof bits);
      put_u64(out, bits);
      return;
    }
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {
      out.push_back(static_cast<char>(v.kind == SL_KIND_STRING ? k_string : k_bytes));
      const sl_str s = value_str(v);
      put_varint(out, s.size);
      out.append(s.data, s.size);
      return;
    }
    case SL_KIND_ARRAY: {
      out.push_back(static_cast<char>(k_array));
      const size_t n = value_size(v);
      put_varint(out, n);
      for (size_t i = 0; i < n; ++i) encode_raw(value_at(v, i), out);
      return;
    }
    case SL_KIND_OBJECT: {
      out.push_back(static_cast<char>(k_object));
      const size_t n = value_size(v);
      put_varint(out, n);
      for (size_t i = 0; i < n; ++i) {
        const sl_str key = object_key_at(v, i);
        put_varint(out, key.size);
        out.append(key.data, key.size);
        encode_raw(value_at(v, i), out);
      }
      return;
    }
    default: out.push_back(static_cast<char>(k_null)); return;
  }
}

// A task's "claims": {source: {"<group>": claim}}.
Result<Claims> decode_claims(const Value& v) {
  if (!v.is_object()) return corrupt("'claims' is not an object");
  Claims out;
  for (size_t i = 0; i < v.size(); ++i) {
    const Value groups = v.at(i);
    if (!groups.is_object()) return corrupt("'claims' of a source is not an object");
    auto& mine = out[std::string(v.key_at(i))];
    for (size_t k = 0; k < groups.size(); ++k) {
      const std::string_view key = groups.key_at(k);
      uint32_t group = 0;
      const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), group);
      const Value claim = groups.at(k);
      if (ec != std::errc() || end != key.data() + key.size() || group == 0 || !claim.is_int() ||
          claim.as_int() < 0) {
        return corrupt("a claim is not \"<key group>\": <claim number>");
      }
      mine[group] = static_cast<uint64_t>(claim.as_int());
    }
  }
  return out;
}

}  // namespace

void encode_value(const Value& v, std::string& out) {
  out.reserve(out.size() + encoded_size(v.raw()));
  encode_raw(v.raw(), out);
}

Result<Value> decode_value(std::string_view in) {
  Decoder d(in);
  SLUICE_ASSIGN_OR_RETURN(Value v, d.value(0));
  if (!d.done()) return corrupt("trailing bytes after the value");
  return v;
}

std::string encode_checkpoint(const Checkpoint& cp) {
  std::vector<Value> tasks;
  for (const TaskState& t : cp.tasks) {
    std::vector<Value> nodes;
    for (const NodeState& n : t.nodes) nodes.push_back(node_to_value(n));
    std::vector<std::pair<std::string, Value>> e;
    e.emplace_back("finished", Value::boolean(t.finished));
    e.emplace_back("nodes", Value::array(nodes));
    if (!t.claims.empty()) {
      std::vector<std::pair<std::string, Value>> sources;
      for (const auto& [source, groups] : t.claims) {
        std::vector<std::pair<std::string, Value>> g;
        for (const auto& [group, claim] : groups) {
          g.emplace_back(std::to_string(group), Value::integer(static_cast<int64_t>(claim)));
        }
        sources.emplace_back(source, Value::object(g));
      }
      e.emplace_back("claims", Value::object(sources));
    }
    tasks.push_back(Value::object(e));
  }
  std::vector<std::pair<std::string, Value>> root;
  root.emplace_back("epoch", Value::integer(static_cast<int64_t>(cp.epoch)));
  root.emplace_back("time_ns", Value::integer(cp.time_ns));
  root.emplace_back("pipeline", Value::string(cp.pipeline));
  if (!cp.member.empty()) root.emplace_back("member", Value::string(cp.member));
  root.emplace_back("tasks", Value::array(tasks));
  const Value payload_value = Value::object(root);

  // The payload is encoded in place after the header, which is filled in last.
  std::string out;
  out.reserve(k_header_size + encoded_size(payload_value.raw()));
  out.append(k_magic);
  out.append(k_header_size - k_magic.size(), '\0');
  encode_raw(payload_value.raw(), out);
  const std::string_view payload = std::string_view(out).substr(k_header_size);
  set_le(out, 8, k_format_version, 4);
  set_le(out, 12, crc32c(payload), 4);
  set_le(out, 16, payload.size(), 8);
  return out;
}

Result<Checkpoint> decode_checkpoint(std::string_view bytes) {
  if (bytes.size() < k_header_size) {
    return Status(SL_DATA_LOSS, fmt::format("truncated checkpoint: {} bytes, shorter than the "
                                            "{}-byte header",
                                            bytes.size(), k_header_size));
  }
  if (bytes.substr(0, k_magic.size()) != k_magic) {
    return Status(SL_DATA_LOSS, "not a sluice checkpoint (bad magic)");
  }
  auto version = static_cast<uint32_t>(get_le(bytes, 8, 4));
  if (version != k_format_version) {
    return Status(SL_DATA_LOSS,
                  fmt::format("checkpoint format version {} is not supported (this sluiced reads "
                              "version {})",
                              version, k_format_version));
  }
  auto crc = static_cast<uint32_t>(get_le(bytes, 12, 4));
  uint64_t length = get_le(bytes, 16, 8);
  if (length != bytes.size() - k_header_size) {
    return Status(SL_DATA_LOSS,
                  fmt::format("truncated checkpoint: the header announces {} payload bytes, the "
                              "file holds {}",
                              length, bytes.size() - k_header_size));
  }
  std::string_view payload = bytes.substr(k_header_size);
  if (crc32c(payload) != crc) {
    return Status(SL_DATA_LOSS, "checkpoint checksum mismatch (the file is corrupt)");
  }
  SLUICE_ASSIGN_OR_RETURN(Value root, decode_value(payload));
  if (!root.is_object()) return corrupt("the payload is not an object");
  Checkpoint cp;
  SLUICE_ASSIGN_OR_RETURN(int64_t epoch, get_int(root, "epoch"));
  cp.epoch = static_cast<uint64_t>(epoch);
  SLUICE_ASSIGN_OR_RETURN(cp.time_ns, get_int(root, "time_ns"));
  SLUICE_ASSIGN_OR_RETURN(cp.pipeline, get_string(root, "pipeline"));
  if (auto member = root.get("member"); member && member->is_string()) {
    cp.member = std::string(member->as_str());
  }
  auto tasks = root.get("tasks");
  if (!tasks || !tasks->is_array()) return corrupt("missing 'tasks'");
  for (size_t i = 0; i < tasks->size(); ++i) {
    Value t = tasks->at(i);
    TaskState ts;
    auto finished = t.get("finished");
    ts.finished = finished && finished->is_bool() && finished->as_bool();
    auto nodes = t.get("nodes");
    if (!nodes || !nodes->is_array()) return corrupt("a task without 'nodes'");
    for (size_t k = 0; k < nodes->size(); ++k) {
      Value n = nodes->at(k);
      NodeState ns;
      SLUICE_ASSIGN_OR_RETURN(ns.id, get_string(n, "id"));
      SLUICE_ASSIGN_OR_RETURN(ns.type, get_string(n, "type"));
      SLUICE_ASSIGN_OR_RETURN(int64_t role, get_int(n, "role"));
      ns.role = static_cast<int32_t>(role);
      auto state = n.get("state");
      if (state) ns.state = *state;
      ts.nodes.push_back(std::move(ns));
    }
    if (auto claims = t.get("claims"); claims) {
      SLUICE_ASSIGN_OR_RETURN(ts.claims, decode_claims(*claims));
    }
    cp.tasks.push_back(std::move(ts));
  }
  return cp;
}

}  // namespace sluice::host::checkpoint
