// The per-node store of plugin-reported gauges (sl_host_api.gauge_set): the label
// format "k=v,k=v", escaping for Prometheus, NaN removal, rejected names and labels.
// /metrics rendering of these series is checked end to end by
// tests/service/test_gauges.py.
#include "executor/node_gauges.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

namespace sluice::host {
namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

TEST(NodeGaugesTest, LabelsBecomePrometheusPairsWithEscapedValues) {
  auto r = NodeGauges::prometheus_labels("topic=t,partition=3");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r.value(), R"(topic="t",partition="3")");

  r = NodeGauges::prometheus_labels("path=a\"b\\c\nd,empty=");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r.value(), R"(path="a\"b\\c\nd",empty="")");

  r = NodeGauges::prometheus_labels("");
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r.value(), "");
}

TEST(NodeGaugesTest, InvalidLabelsAreRejected) {
  for (const char* bad : {"topic", "=v", "1x=v", "a-b=v", "a=1,a=2", "node=x", "pipeline=p",
                          "type=t", "__name__=x", "a=1,", ",a=1"}) {
    EXPECT_FALSE(NodeGauges::prometheus_labels(bad).is_ok()) << bad;
  }
}

TEST(NodeGaugesTest, SetReplacesAndNanRemovesOneSeries) {
  NodeGauges g;
  EXPECT_FALSE(g.set("kafka_consumer_lag", "topic=t,partition=0", 5));
  EXPECT_FALSE(g.set("kafka_consumer_lag", "topic=t,partition=1", 7));
  EXPECT_FALSE(g.set("kafka_consumer_lag", "topic=t,partition=0", 2));
  EXPECT_FALSE(g.set("queue_depth", "", 0));
  auto s = g.snapshot();
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].name, "kafka_consumer_lag");
  EXPECT_EQ(s[0].labels, R"(topic="t",partition="0")");
  EXPECT_EQ(s[0].value, 2);
  EXPECT_EQ(s[1].labels, R"(topic="t",partition="1")");
  EXPECT_EQ(s[1].value, 7);
  EXPECT_EQ(s[2].name, "queue_depth");
  EXPECT_EQ(s[2].labels, "");
  EXPECT_EQ(s[2].value, 0);

  EXPECT_FALSE(g.set("kafka_consumer_lag", "topic=t,partition=0", k_nan));
  EXPECT_FALSE(g.set("kafka_consumer_lag", "topic=t,partition=9", k_nan));  // absent: no-op
  s = g.snapshot();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].labels, R"(topic="t",partition="1")");
}

TEST(NodeGaugesTest, InvalidOrReservedNamesAreRejectedAndNothingIsStored) {
  NodeGauges g;
  for (const char* bad : {"", "1lag", "lag-ms", "lag ms", "messages_in_total", "bytes_out_total",
                          "latency_bucket", "x_sum", "x_count", "batch_latency_seconds"}) {
    auto error = g.set(bad, "", 1);
    ASSERT_TRUE(error.has_value()) << bad;
    EXPECT_NE(error->find(bad), std::string::npos) << *error;
  }
  EXPECT_TRUE(g.set("lag", "bad label", 1).has_value());
  EXPECT_TRUE(g.snapshot().empty());
}

// A name ending in "_total" is a counter the plugin keeps (docs/PLUGIN_GUIDE.md): accepted,
// unless it is one of the host's own families.
TEST(NodeGaugesTest, APluginCounterEndsInTotal) {
  NodeGauges g;
  EXPECT_FALSE(g.set("http_responses_total", "code=200", 3));
  auto s = g.snapshot();
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].name, "http_responses_total");
  EXPECT_EQ(s[0].labels, R"(code="200")");
}

}  // namespace
}  // namespace sluice::host
