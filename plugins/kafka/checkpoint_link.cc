// The per-task registry of from_kafka sources and the exactly-once to_kafka (see the header).
#include "checkpoint_link.hpp"

#include <algorithm>
#include <cstddef>
#include <map>
#include <mutex>

namespace sluice::kafka {
namespace {

struct Entry {
  std::vector<OffsetSource*> sources;
  const void* transactional_sink = nullptr;
};

std::mutex& link_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::string, Entry>& links() {
  static std::map<std::string, Entry> m;
  return m;
}

void drop_if_empty(std::map<std::string, Entry>::iterator it) {
  if (it->second.sources.empty() && it->second.transactional_sink == nullptr) links().erase(it);
}

}  // namespace

std::string TaskLink::key(const std::string& pipeline, uint32_t task_index) {
  return pipeline + '\0' + std::to_string(task_index);
}

void TaskLink::add_source(const std::string& key, OffsetSource* source) {
  std::lock_guard lock(link_mutex());
  links()[key].sources.push_back(source);
}

void TaskLink::remove_source(const std::string& key, OffsetSource* source) {
  std::lock_guard lock(link_mutex());
  auto it = links().find(key);
  if (it == links().end()) return;
  auto& v = it->second.sources;
  v.erase(std::remove(v.begin(), v.end(), source), v.end());
  drop_if_empty(it);
}

std::vector<OffsetSource*> TaskLink::sources(const std::string& key) {
  std::lock_guard lock(link_mutex());
  auto it = links().find(key);
  return it == links().end() ? std::vector<OffsetSource*>{} : it->second.sources;
}

bool TaskLink::claim_transactions(const std::string& key, const void* sink) {
  std::lock_guard lock(link_mutex());
  Entry& e = links()[key];
  if (e.transactional_sink != nullptr && e.transactional_sink != sink) return false;
  e.transactional_sink = sink;
  return true;
}

void TaskLink::release_transactions(const std::string& key, const void* sink) {
  std::lock_guard lock(link_mutex());
  auto it = links().find(key);
  if (it == links().end() || it->second.transactional_sink != sink) return;
  it->second.transactional_sink = nullptr;
  drop_if_empty(it);
}

bool TaskLink::transactional(const std::string& key) {
  std::lock_guard lock(link_mutex());
  auto it = links().find(key);
  return it != links().end() && it->second.transactional_sink != nullptr;
}

InitCheckpointInfo checkpoint_info(const sl_node_init& init) {
  InitCheckpointInfo info;
  // A host that fills the fields sets pipeline.data (a zero-initialised struct says nothing).
  if (SL_HAS_FIELD(&init, sl_node_init, checkpointing) && init.pipeline.data != nullptr) {
    info.pipeline.assign(init.pipeline.data, init.pipeline.size);
    info.known = true;
    info.checkpointing = init.checkpointing != 0;
  }
  return info;
}

}  // namespace sluice::kafka
