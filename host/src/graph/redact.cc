#include "graph/redact.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <utility>
#include <vector>

namespace sluice::host {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

bool is_secret_key(std::string_view key) {
  const std::string k = lower(key);
  static constexpr std::array<std::string_view, 7> k_words{
      "password", "passwd", "secret", "credential", "api_key", "apikey", "private_key"};
  for (std::string_view w : k_words) {
    if (k.find(w) != std::string::npos) return true;
  }
  // "token" as a whole word of the key (auth_token, sasl.oauthbearer.token), not inside
  // another one (max_tokens).
  for (size_t begin = 0; begin <= k.size();) {
    size_t end = k.find_first_of("._-", begin);
    if (end == std::string::npos) end = k.size();
    if (std::string_view(k).substr(begin, end - begin) == "token") return true;
    begin = end + 1;
  }
  return k.starts_with("sasl.") && k != "sasl.mechanism" && k != "sasl.mechanisms";
}

namespace {

// A string that holds a secret's text: the whole value (what a secret reference gives), or
// a part of it (a value the validator derived from it).
bool holds_secret(const Value& v, const std::vector<std::string>& secrets) {
  if (!v.is_string() || secrets.empty()) return false;
  const std::string_view s = v.as_str();
  for (const std::string& secret : secrets) {
    if (!secret.empty() && s.find(secret) != std::string_view::npos) return true;
  }
  return false;
}

bool has_secret(const Value& v, const std::vector<std::string>& secrets) {
  if (v.is_object()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (is_secret_key(v.key_at(i)) || has_secret(v.at(i), secrets)) return true;
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      if (has_secret(v.at(i), secrets)) return true;
    }
  } else {
    return holds_secret(v, secrets);
  }
  return false;
}

}  // namespace

Value redact_secrets(const Value& config, const std::vector<std::string>& secrets) {
  if (!has_secret(config, secrets)) return config;  // the common case: nothing to rebuild
  if (config.is_array()) {
    std::vector<Value> items;
    items.reserve(config.size());
    for (size_t i = 0; i < config.size(); ++i) {
      items.push_back(redact_secrets(config.at(i), secrets));
    }
    return Value::array(items);
  }
  if (!config.is_object()) return Value::string(k_redacted);  // a string holding a secret
  std::vector<std::pair<std::string, Value>> entries;
  entries.reserve(config.size());
  for (size_t i = 0; i < config.size(); ++i) {
    std::string key(config.key_at(i));
    Value value =
        is_secret_key(key) ? Value::string(k_redacted) : redact_secrets(config.at(i), secrets);
    entries.emplace_back(std::move(key), std::move(value));
  }
  return Value::object(entries);
}

std::string redact_text(std::string text, const std::vector<std::string>& secrets) {
  for (const std::string& secret : secrets) {
    if (secret.empty()) continue;
    for (size_t at = text.find(secret); at != std::string::npos;
         at = text.find(secret, at + k_redacted.size())) {
      text.replace(at, secret.size(), k_redacted);
    }
  }
  return text;
}

}  // namespace sluice::host
