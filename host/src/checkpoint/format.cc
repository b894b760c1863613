#include "checkpoint/format.hpp"

#include <fmt/format.h>

#include <array>
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

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}
constexpr std::array<uint32_t, 256> k_crc_table = make_crc_table();

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
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
        if (n > in_.size() - at_) return corrupt("object longer than the data");
        std::vector<std::pair<std::string, Value>> entries;
        entries.reserve(n);
        for (uint64_t i = 0; i < n; ++i) {
          SLUICE_ASSIGN_OR_RETURN(std::string_view key, text());
          SLUICE_ASSIGN_OR_RETURN(Value item, value(depth + 1));
          entries.emplace_back(std::string(key), std::move(item));
        }
        return Value::object(entries);
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
  crc = ~crc;
  for (char ch : data)
    crc = k_crc_table[(crc ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

void encode_value(const Value& v, std::string& out) {
  switch (v.kind()) {
    case SL_KIND_NULL: out.push_back(static_cast<char>(k_null)); return;
    case SL_KIND_BOOL: out.push_back(static_cast<char>(v.as_bool() ? k_true : k_false)); return;
    case SL_KIND_INT:
      out.push_back(static_cast<char>(k_int));
      put_u64(out, static_cast<uint64_t>(v.as_int()));
      return;
    case SL_KIND_FLOAT: {
      out.push_back(static_cast<char>(k_float));
      uint64_t bits = 0;
      double d = v.as_float();
      std::memcpy(&bits, &d, sizeof bits);
      put_u64(out, bits);
      return;
    }
    case SL_KIND_STRING:
    case SL_KIND_BYTES: {
      out.push_back(static_cast<char>(v.kind() == SL_KIND_STRING ? k_string : k_bytes));
      std::string_view s = v.as_str();
      put_varint(out, s.size());
      out.append(s);
      return;
    }
    case SL_KIND_ARRAY:
      out.push_back(static_cast<char>(k_array));
      put_varint(out, v.size());
      for (size_t i = 0; i < v.size(); ++i) encode_value(v.at(i), out);
      return;
    case SL_KIND_OBJECT:
      out.push_back(static_cast<char>(k_object));
      put_varint(out, v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        std::string_view key = v.key_at(i);
        put_varint(out, key.size());
        out.append(key);
        encode_value(v.at(i), out);
      }
      return;
    default: out.push_back(static_cast<char>(k_null)); return;
  }
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
    tasks.push_back(Value::object(e));
  }
  std::vector<std::pair<std::string, Value>> root;
  root.emplace_back("epoch", Value::integer(static_cast<int64_t>(cp.epoch)));
  root.emplace_back("time_ns", Value::integer(cp.time_ns));
  root.emplace_back("pipeline", Value::string(cp.pipeline));
  root.emplace_back("tasks", Value::array(tasks));
  std::string payload;
  encode_value(Value::object(root), payload);

  std::string out;
  out.reserve(k_header_size + payload.size());
  out.append(k_magic);
  put_u32(out, k_format_version);
  put_u32(out, crc32c(payload));
  put_u64(out, payload.size());
  out.append(payload);
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
    cp.tasks.push_back(std::move(ts));
  }
  return cp;
}

}  // namespace sluice::host::checkpoint
