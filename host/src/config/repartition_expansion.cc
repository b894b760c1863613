#include "config/repartition_expansion.hpp"

#include "config/detail/toml_util.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

namespace sluice::host {
namespace {

using config_detail::entries_in_file_order;
using config_detail::pos_of;

constexpr std::string_view k_topic_key = "repartition_topic";

struct DeclaredNode {
  int32_t role = 0;
  toml::table* table = nullptr;  // null: not a table (the validator says so)
  SourcePos pos;                 // of its key
};

const std::string* string_at(const toml::table& table, std::string_view key) {
  const toml::node* node = table.get(key);
  const auto* s = node ? node->as_string() : nullptr;
  return s ? &s->get() : nullptr;
}

// The connection settings of a consumer's `config` that a producer on the same brokers
// needs too; the rest (session.timeout.ms, fetch.*, ...) is a consumer's own, which
// librdkafka would ignore in a producer with a warning.
bool connection_setting(std::string_view name) {
  return name.starts_with("security.") || name.starts_with("sasl.") || name.starts_with("ssl.") ||
         name == "client.id" || name == "client.rack";
}

class Expansion {
 public:
  explicit Expansion(ConfigDocument& doc) : doc_(doc), file_(doc.source_name()) {
    for (const auto& [role, section] :
         {std::pair{SL_ROLE_SOURCE, "sources"}, std::pair{SL_ROLE_OPERATOR, "operators"},
          std::pair{SL_ROLE_SINK, "sinks"}}) {
      toml::table* table = doc_.root[section].as_table();
      if (!table) continue;
      for (auto&& [key, node] : *table) {
        nodes_.emplace(std::string(key.str()),
                       DeclaredNode{role, node.as_table(), pos_of(file_, key.source())});
      }
    }
  }

  std::vector<Diagnostic> run() && {
    doc_.expanded = true;
    toml::table* operators = doc_.root["operators"].as_table();
    if (!operators) return {};
    // Every key_by with a repartition topic, in file order; topics they share are refused.
    struct Pending {
      std::string id;
      const toml::table* table;
      std::string topic;
      SourcePos at;
    };
    std::vector<Pending> pending;
    std::map<std::string, std::string> topic_owner;  // topic -> key_by id
    for (const auto& e : entries_in_file_order(*operators)) {
      const toml::table* table = e.node->as_table();
      const std::string* type = table ? string_at(*table, "type") : nullptr;
      if (!type || *type != "key_by") continue;
      const std::string id(e.key->str());
      if (!table->contains(k_topic_key)) {
        for (const auto& k : entries_in_file_order(*table)) {
          const std::string_view name = k.key->str();
          if (name != "brokers" && name != "repartition_group_id" && name != "repartition_config")
            continue;
          error(pos_of(file_, k.key->source()), id, std::string(name),
                "is used only with repartition_topic (without it key_by only sets the key)");
        }
        continue;
      }
      const std::string* topic = string_at(*table, k_topic_key);
      if (!topic || topic->empty()) continue;  // a wrong type or "": the validator says so
      const SourcePos at = pos_of(file_, table->get(k_topic_key)->source());
      if (auto [it, fresh] = topic_owner.emplace(*topic, id); !fresh) {
        error(at, id, std::string(k_topic_key),
              fmt::format("topic '{}' is already the repartition topic of key_by '{}'; each "
                          "key_by needs its own (the reading sources would see each other's "
                          "records)",
                          *topic, it->second));
        continue;
      }
      if (doc_.generated.count({id + std::string(k_repartition_sink_suffix), ""})) continue;
      pending.push_back({id, table, *topic, at});
    }
    // Upstream first: a key_by downstream of another repartitioning one then reads (and takes
    // its brokers and group from) the source the first one adds.
    while (!pending.empty()) {
      auto next = std::find_if(pending.begin(), pending.end(), [&](const Pending& p) {
        const Upstream up = upstream_of(*p.table);
        return std::none_of(pending.begin(), pending.end(),
                            [&](const Pending& q) { return up.nodes.count(q.id) > 0; });
      });
      if (next == pending.end()) next = pending.begin();  // a cycle: the validator reports it
      expand(next->id, *next->table, next->topic, next->at);
      pending.erase(next);
    }
    return std::move(diags_);
  }

 private:
  void error(SourcePos at, std::string node_id, std::string key, std::string message) {
    diags_.push_back(Diagnostic{Severity::error, std::move(at), std::move(node_id), std::move(key),
                                std::move(message)});
  }

  struct Upstream {
    std::set<std::string, std::less<>> nodes;  // every node it reads, directly or not
    std::vector<std::string> kafka_sources;    // the from_kafka sources among them, file order
  };

  // What a node (its table) reads, directly or through other nodes.
  Upstream upstream_of(const toml::table& start) const {
    Upstream out;
    std::deque<const toml::table*> todo{&start};
    while (!todo.empty()) {
      const toml::table* table = todo.front();
      todo.pop_front();
      const toml::array* inputs = table->get_as<toml::array>("inputs");
      if (!inputs) continue;
      for (const toml::node& item : *inputs) {
        const auto* ref = item.as_string();
        if (!ref) continue;
        std::string id = ref->get();
        if (!nodes_.count(id)) {
          if (auto base = dead_letter_producer(id)) id = std::string(*base);
        }
        auto it = nodes_.find(id);
        if (it == nodes_.end() || !it->second.table || !out.nodes.insert(id).second) continue;
        const DeclaredNode& n = it->second;
        if (n.role == SL_ROLE_SOURCE) {
          const std::string* type = string_at(*n.table, "type");
          if (type && *type == "from_kafka") out.kafka_sources.push_back(id);
        } else {
          todo.push_back(n.table);
        }
      }
    }
    std::sort(out.kafka_sources.begin(), out.kafka_sources.end(),
              [&](const std::string& a, const std::string& b) {
                const SourcePos& pa = nodes_.at(a).pos;
                const SourcePos& pb = nodes_.at(b).pos;
                return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
              });
    return out;
  }

  // One value every upstream source that has `key` agrees on (nullopt: none has it), or an
  // error naming the two that differ (then `ok` is false).
  std::optional<std::string> agreed(const std::vector<std::string>& sources, std::string_view key,
                                    const std::string& id, SourcePos at, std::string_view fix,
                                    bool& ok) {
    std::optional<std::pair<std::string, std::string>> first;  // source, value
    for (const std::string& s : sources) {
      const std::string* v = string_at(*nodes_.at(s).table, key);
      if (!v) continue;
      if (!first) {
        first.emplace(s, *v);
      } else if (*v != first->second) {
        error(at, id, std::string(k_topic_key),
              fmt::format("the from_kafka sources upstream disagree on {} ('{}' has '{}', '{}' "
                          "has '{}'); {}",
                          key, first->first, first->second, s, *v, fix));
        ok = false;
        return std::nullopt;
      }
    }
    if (!first) return std::nullopt;
    return first->second;
  }

  std::string pipeline_name() const {
    const std::string* name = string_at(doc_.root, "name");
    return name ? *name : doc_.file.stem().string();
  }

  toml::table& section(std::string_view name) {
    if (!doc_.root.contains(name)) doc_.root.insert(name, toml::table{});
    return *doc_.root[name].as_table();
  }

  void expand(const std::string& id, const toml::table& key_by, const std::string& topic,
              SourcePos at) {
    const std::string sink_id = id + std::string(k_repartition_sink_suffix);
    const std::string source_id = id + std::string(k_repartition_source_suffix);
    for (const std::string* taken : {&sink_id, &source_id}) {
      if (auto it = nodes_.find(*taken); it != nodes_.end()) {
        error(it->second.pos, *taken, "",
              fmt::format("this id is the one key_by '{}' gives the node it adds for "
                          "repartition_topic; rename this node",
                          id));
        return;
      }
    }
    // The sections the nodes go into must be tables (else the validator reports them).
    for (std::string_view s : {"sources", "sinks"}) {
      if (doc_.root.contains(s) && !doc_.root[s].is_table()) return;
    }
    // Keys of the wrong type: the validator reports them; nothing is generated from them.
    for (std::string_view key : {"brokers", "repartition_group_id"}) {
      if (key_by.contains(key) && !string_at(key_by, key)) return;
    }
    if (key_by.contains("repartition_config") && !key_by.get_as<toml::table>("repartition_config"))
      return;

    const std::vector<std::string> upstream = upstream_of(key_by).kafka_sources;
    bool ok = true;
    std::optional<std::string> brokers;
    std::string brokers_from;  // the upstream source whose brokers (and config) are used
    if (const std::string* own = string_at(key_by, "brokers")) {
      brokers = *own;
    } else {
      brokers = agreed(upstream, "brokers", id, at, "set `brokers` on this key_by", ok);
      if (!ok) return;
      if (!brokers) {
        error(at, id, std::string(k_topic_key),
              "needs the brokers of the repartition topic: no from_kafka source is upstream of "
              "this key_by to take them from; set `brokers` on it");
        return;
      }
      for (const std::string& s : upstream) {
        if (const std::string* b = string_at(*nodes_.at(s).table, "brokers"); b && *b == *brokers) {
          brokers_from = s;
          break;
        }
      }
    }
    std::string group;
    if (const std::string* own = string_at(key_by, "repartition_group_id")) {
      group = *own;
    } else {
      std::optional<std::string> upstream_group =
          agreed(upstream, "group_id", id, at, "set `repartition_group_id` on this key_by", ok);
      if (!ok) return;
      group = fmt::format("{}.{}", upstream_group ? *upstream_group : pipeline_name(), id);
    }

    // The upstream sources tag what they read with its origin, for the reader's dedup_origin.
    std::vector<std::string> tagged;
    for (const std::string& s : upstream) {
      toml::table& table = *nodes_.at(s).table;
      if (const toml::node* given = table.get("origin_header")) {
        if (const auto* b = given->as_boolean(); b && !b->get()) {
          error(pos_of(file_, given->source()), s, "origin_header",
                fmt::format("must be true: key_by '{}' repartitions this source's records "
                            "through '{}', and its reader skips replayed records by their "
                            "origin; remove the key or set it to true",
                            id, topic));
          ok = false;
        }
        continue;  // true, or a wrong type the validator reports
      }
      tagged.push_back(s);
    }
    if (!ok) return;

    // librdkafka properties.
    toml::table source_config;
    toml::table sink_config;
    if (const auto* own = key_by.get_as<toml::table>("repartition_config")) {
      source_config = *own;
      sink_config = *own;
    } else if (!brokers_from.empty()) {
      if (const auto* up = nodes_.at(brokers_from).table->get_as<toml::table>("config")) {
        source_config = *up;
        for (auto&& [name, value] : *up) {
          if (connection_setting(name.str())) sink_config.insert(name, value);
        }
      }
    }

    // Every node that read `id` now reads what came back through the topic. Assigning the
    // string in place keeps its position in the file.
    for (auto& [other, n] : nodes_) {
      if (n.role == SL_ROLE_SOURCE || !n.table) continue;
      toml::array* inputs = n.table->get_as<toml::array>("inputs");
      if (!inputs) continue;
      for (toml::node& item : *inputs) {
        if (auto* ref = item.as_string(); ref && ref->get() == id) ref->get() = source_id;
      }
    }

    toml::table sink{{"type", "to_kafka"},
                     {"inputs", toml::array{id}},
                     {"brokers", *brokers},
                     {"topic", topic},
                     {"value_format", "json"}};
    if (!sink_config.empty()) sink.insert("config", std::move(sink_config));
    toml::table source{{"type", "from_kafka"},         {"brokers", *brokers},
                       {"topics", toml::array{topic}}, {"group_id", group},
                       {"value_format", "json"},       {"dedup_origin", true}};
    if (!source_config.empty()) source.insert("config", std::move(source_config));
    section("sinks").insert(sink_id, std::move(sink));
    section("sources").insert(source_id, std::move(source));
    // Known to the key_bys expanded after this one (one downstream reads the source).
    nodes_[sink_id] = DeclaredNode{SL_ROLE_SINK, section("sinks")[sink_id].as_table(), at};
    nodes_[source_id] = DeclaredNode{SL_ROLE_SOURCE, section("sources")[source_id].as_table(), at};
    doc_.generated[{sink_id, ""}] = GeneratedFrom{
        id, std::string(k_topic_key), at,
        fmt::format("the to_kafka sink '{}' it adds (writing to '{}')", sink_id, topic)};
    doc_.generated[{source_id, ""}] = GeneratedFrom{
        id, std::string(k_topic_key), at,
        fmt::format("the from_kafka source '{}' it adds (reading '{}')", source_id, topic)};
    for (const std::string& s : tagged) {
      nodes_.at(s).table->insert("origin_header", true);
      doc_.generated[{s, "origin_header"}] = GeneratedFrom{
          id, std::string(k_topic_key), at,
          fmt::format("origin_header = true, which it sets on the from_kafka source '{}' "
                      "upstream",
                      s)};
    }
  }

  ConfigDocument& doc_;
  std::string file_;
  std::map<std::string, DeclaredNode, std::less<>> nodes_;
  std::vector<Diagnostic> diags_;
};

}  // namespace

std::vector<Diagnostic> expand_repartitions(ConfigDocument& doc) { return Expansion(doc).run(); }

}  // namespace sluice::host
