#include "sources/cri/runtime_parse.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuledger::cri {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

struct ContainerStateCase {
  ::runtime::v1::ContainerState state;
  bool running;
};

class ContainerStates : public ::testing::TestWithParam<ContainerStateCase> {};

TEST_P(ContainerStates, OnlyRunningIsRunning) {
  ::runtime::v1::ListContainersResponse r;
  auto* c = r.add_containers();
  c->set_id("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  c->set_pod_sandbox_id("sandbox-1");
  c->mutable_metadata()->set_name("trainer");
  c->mutable_metadata()->set_attempt(2);
  c->mutable_image()->set_image("nvcr.io/nvidia/pytorch:24.01");
  c->set_image_ref("sha256:abc");
  c->set_state(GetParam().state);
  c->set_created_at(1700000000000000000);
  (*c->mutable_labels())["io.kubernetes.container.name"] = "trainer";

  auto containers = ParseListContainersResponse(r);
  ASSERT_EQ(containers.size(), 1u);
  EXPECT_EQ(containers[0].id, c->id());
  EXPECT_EQ(containers[0].pod_sandbox_id, "sandbox-1");
  EXPECT_EQ(containers[0].name, "trainer");
  EXPECT_EQ(containers[0].running, GetParam().running);
}

INSTANTIATE_TEST_SUITE_P(
    Cri, ContainerStates,
    ::testing::Values(ContainerStateCase{::runtime::v1::CONTAINER_CREATED, false},
                      ContainerStateCase{::runtime::v1::CONTAINER_RUNNING, true},
                      ContainerStateCase{::runtime::v1::CONTAINER_EXITED, false},
                      ContainerStateCase{::runtime::v1::CONTAINER_UNKNOWN, false}));

TEST(ParseListPodSandboxResponse, MetadataStateAndLabels) {
  ::runtime::v1::ListPodSandboxResponse r;
  auto* ready = r.add_items();
  ready->set_id("s1");
  ready->mutable_metadata()->set_name("trainer-0");
  ready->mutable_metadata()->set_namespace_("ml");
  ready->mutable_metadata()->set_uid("1b2c3d4e-0000-4a4a-8b8b-123456789abc");
  ready->mutable_metadata()->set_attempt(1);
  ready->set_state(::runtime::v1::SANDBOX_READY);
  ready->set_runtime_handler("nvidia");
  (*ready->mutable_labels())["app"] = "trainer";
  (*ready->mutable_annotations())["kubernetes.io/config.seen"] = "x";
  auto* gone = r.add_items();
  gone->set_id("s2");
  gone->mutable_metadata()->set_name("old");
  gone->set_state(::runtime::v1::SANDBOX_NOTREADY);

  auto sandboxes = ParseListPodSandboxResponse(r);
  ASSERT_EQ(sandboxes.size(), 2u);
  EXPECT_EQ(sandboxes[0].id, "s1");
  EXPECT_EQ(sandboxes[0].name, "trainer-0");
  EXPECT_EQ(sandboxes[0].namespace_name, "ml");
  EXPECT_EQ(sandboxes[0].uid, "1b2c3d4e-0000-4a4a-8b8b-123456789abc");
  EXPECT_TRUE(sandboxes[0].ready);
  EXPECT_THAT(sandboxes[0].labels, ElementsAre(Pair("app", "trainer")));
  EXPECT_FALSE(sandboxes[1].ready);
}

TEST(ToProto, RoundTrips) {
  Container c{"cid", "sid", "main", true};
  ::runtime::v1::ListContainersResponse cr;
  *cr.add_containers() = ToProto(c);
  auto containers = ParseListContainersResponse(cr);
  ASSERT_EQ(containers.size(), 1u);
  EXPECT_EQ(containers[0].id, "cid");
  EXPECT_EQ(containers[0].pod_sandbox_id, "sid");
  EXPECT_EQ(containers[0].name, "main");
  EXPECT_TRUE(containers[0].running);

  PodSandbox s{"sid", "pod", "ns", "uid-1", false, {{"k", "v"}}};
  ::runtime::v1::ListPodSandboxResponse sr;
  *sr.add_items() = ToProto(s);
  auto sandboxes = ParseListPodSandboxResponse(sr);
  ASSERT_EQ(sandboxes.size(), 1u);
  EXPECT_EQ(sandboxes[0].uid, "uid-1");
  EXPECT_FALSE(sandboxes[0].ready);
  EXPECT_EQ(sandboxes[0].labels, s.labels);
}

TEST(Matches, FiltersAreAnded) {
  Container c{"cid", "sid", "main", true};
  ::runtime::v1::ContainerFilter f;
  EXPECT_TRUE(Matches(f, c));
  f.set_pod_sandbox_id("sid");
  f.mutable_state()->set_state(::runtime::v1::CONTAINER_RUNNING);
  EXPECT_TRUE(Matches(f, c));
  f.mutable_state()->set_state(::runtime::v1::CONTAINER_EXITED);
  EXPECT_FALSE(Matches(f, c));

  PodSandbox s{"sid", "pod", "ns", "uid", true, {{"app", "x"}}};
  ::runtime::v1::PodSandboxFilter sf;
  (*sf.mutable_label_selector())["app"] = "x";
  EXPECT_TRUE(Matches(sf, s));
  (*sf.mutable_label_selector())["tier"] = "y";
  EXPECT_FALSE(Matches(sf, s));
}

}  // namespace
}  // namespace gpuledger::cri
