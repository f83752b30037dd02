// ResponseOrderer: with preserve_ordering, batches are released in dispatch order.
#include <cstdint>
#include <vector>

#include "harness.h"
#include "scheduling/response_orderer.h"

using namespace infernode;

namespace {

using Order = std::vector<uint64_t>;

std::ostream& operator<<(std::ostream& os, const Order& ids) {
  os << "[";
  for (size_t i = 0; i < ids.size(); ++i) os << (i ? "," : "") << ids[i];
  return os << "]";
}

std::vector<InferenceResponse> Responses(std::vector<uint64_t> ids) {
  std::vector<InferenceResponse> out;
  for (uint64_t id : ids) {
    InferenceResponse response;
    response.request_id = id;
    out.push_back(std::move(response));
  }
  return out;
}

std::vector<uint64_t> Ids(const std::vector<InferenceResponse>& responses) {
  std::vector<uint64_t> ids;
  for (const InferenceResponse& r : responses) ids.push_back(r.request_id);
  return ids;
}

}  // namespace

TEST(OrdererWithoutPreserveReleasesAtOnce) {
  ResponseOrderer orderer(false);
  EXPECT_EQ(Ids(orderer.Complete(1, Responses({20, 21}))), (Order{20, 21}));
  EXPECT_EQ(Ids(orderer.Complete(0, Responses({10}))), (Order{10}));
  EXPECT_TRUE(orderer.TakeAll().empty());
}

TEST(OrdererHoldsLaterBatchesUntilEarlierOnesComplete) {
  ResponseOrderer orderer(true);
  EXPECT_TRUE(orderer.Complete(1, Responses({20, 21})).empty());
  EXPECT_EQ(Ids(orderer.Complete(0, Responses({10}))), (Order{10, 20, 21}));
  EXPECT_EQ(Ids(orderer.Complete(2, Responses({30}))), (Order{30}));
}

TEST(OrdererReleasesOnlyUpToTheFirstGap) {
  ResponseOrderer orderer(true);
  EXPECT_TRUE(orderer.Complete(2, Responses({30})).empty());
  EXPECT_EQ(Ids(orderer.Complete(0, Responses({10}))), (Order{10}));
  EXPECT_EQ(Ids(orderer.Complete(1, Responses({20}))), (Order{20, 30}));
}

TEST(OrdererEmptyBatchStillAdvances) {
  ResponseOrderer orderer(true);
  EXPECT_TRUE(orderer.Complete(1, Responses({20})).empty());
  EXPECT_EQ(Ids(orderer.Complete(0, {})), (Order{20}));
}

TEST(OrdererTakeAllReturnsHeldInOrder) {
  ResponseOrderer orderer(true);
  EXPECT_TRUE(orderer.Complete(3, Responses({40})).empty());
  EXPECT_TRUE(orderer.Complete(1, Responses({20, 21})).empty());
  EXPECT_EQ(Ids(orderer.TakeAll()), (Order{20, 21, 40}));
  EXPECT_TRUE(orderer.TakeAll().empty());
}
