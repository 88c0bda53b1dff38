#include "k8s/endpoints.h"

#include <gtest/gtest.h>

namespace gpuledger::k8s {
namespace {

TEST(ParseServiceRef, Forms) {
  auto a = ParseServiceRef("gpuledger/agent:metrics");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->namespace_name, "gpuledger");
  EXPECT_EQ(a->name, "agent");
  EXPECT_EQ(a->port, "metrics");
  EXPECT_EQ(ParseServiceRef("ns/svc")->port, "");
  EXPECT_FALSE(ParseServiceRef("svc"));
  EXPECT_FALSE(ParseServiceRef("ns/"));
  EXPECT_FALSE(ParseServiceRef("ns/svc:"));
}

constexpr char kList[] = R"({"kind":"EndpointsList","items":[
  {"metadata":{"namespace":"gpuledger","name":"agent"},"subsets":[
     {"addresses":[{"ip":"10.0.0.9"},{"ip":"10.0.0.7"}],"notReadyAddresses":[{"ip":"10.0.0.8"}],
      "ports":[{"name":"grpc","port":9500},{"name":"metrics","port":9400}]}]},
  {"metadata":{"namespace":"other","name":"agent"},"subsets":[
     {"addresses":[{"ip":"10.9.9.9"}],"ports":[{"name":"metrics","port":9400}]}]}]})";

TEST(EndpointTargets, ReadyAddressesOfTheNamedPortInTheService) {
  auto t = EndpointTargets(kList, *ParseServiceRef("gpuledger/agent:metrics"));
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t, (std::vector<std::string>{"10.0.0.7:9400", "10.0.0.9:9400"}));
  auto by_number = EndpointTargets(kList, *ParseServiceRef("gpuledger/agent:9500"));
  EXPECT_EQ(*by_number, (std::vector<std::string>{"10.0.0.7:9500", "10.0.0.9:9500"}));
  EXPECT_EQ(EndpointTargets(kList, *ParseServiceRef("gpuledger/missing")).error().code,
            ErrorCode::kNotFound);
  EXPECT_FALSE(EndpointTargets("{not json", *ParseServiceRef("a/b")));
}

}  // namespace
}  // namespace gpuledger::k8s
