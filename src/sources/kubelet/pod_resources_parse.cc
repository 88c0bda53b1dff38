#include "sources/kubelet/pod_resources_parse.h"

#include <string>
#include <utility>

namespace gpuledger::kubelet {
namespace {

DraDevice ToDraDevice(const ::v1::DynamicResource& claim, const ::v1::ClaimResource& resource) {
  DraDevice d;
  d.claim = claim.claim_namespace() + "/" + claim.claim_name();
  d.driver = resource.driver_name();
  d.pool = resource.pool_name();
  d.device = resource.device_name();
  d.share_id = resource.share_id();  // "" when unset
  d.cdi_devices.reserve(resource.cdi_devices_size());
  for (const auto& cdi : resource.cdi_devices()) d.cdi_devices.push_back(cdi.name());
  return d;
}

void AppendContainer(const ::v1::PodResources& pod, const ::v1::ContainerResources& c,
                     std::vector<ContainerGrant>& out) {
  for (const auto& devices : c.devices()) {
    if (devices.device_ids_size() == 0) continue;
    ContainerGrant g;
    g.namespace_name = pod.namespace_();
    g.pod = pod.name();
    g.container = c.name();
    g.resource_name = devices.resource_name();
    g.device_ids.assign(devices.device_ids().begin(), devices.device_ids().end());
    out.push_back(std::move(g));
  }
  std::vector<DraDevice> dra;
  for (const auto& claim : c.dynamic_resources()) {
    for (const auto& resource : claim.claim_resources()) {
      dra.push_back(ToDraDevice(claim, resource));
    }
  }
  if (!dra.empty()) {
    ContainerGrant g;
    g.namespace_name = pod.namespace_();
    g.pod = pod.name();
    g.container = c.name();
    g.dra = std::move(dra);
    out.push_back(std::move(g));
  }
}

}  // namespace

std::vector<ContainerGrant> ParsePodResources(const ::v1::PodResources& pod) {
  std::vector<ContainerGrant> out;
  for (const auto& c : pod.containers()) AppendContainer(pod, c, out);
  return out;
}

std::vector<ContainerGrant> ParseListResponse(const ::v1::ListPodResourcesResponse& response) {
  std::vector<ContainerGrant> out;
  for (const auto& pod : response.pod_resources()) {
    for (const auto& c : pod.containers()) AppendContainer(pod, c, out);
  }
  return out;
}

std::vector<AllocatableDevice> ParseAllocatableResponse(
    const ::v1::AllocatableResourcesResponse& response) {
  std::vector<AllocatableDevice> out;
  for (const auto& devices : response.devices()) {
    for (const auto& id : devices.device_ids()) {
      out.push_back(AllocatableDevice{devices.resource_name(), id});
    }
  }
  return out;
}

::v1::ListPodResourcesResponse ToListResponse(const std::vector<ContainerGrant>& grants) {
  ::v1::ListPodResourcesResponse response;
  auto find_pod = [&](const ContainerGrant& g) -> ::v1::PodResources* {
    for (auto& pod : *response.mutable_pod_resources()) {
      if (pod.namespace_() == g.namespace_name && pod.name() == g.pod) return &pod;
    }
    auto* pod = response.add_pod_resources();
    pod->set_name(g.pod);
    pod->set_namespace_(g.namespace_name);
    return pod;
  };
  for (const auto& g : grants) {
    ::v1::PodResources* pod = find_pod(g);
    ::v1::ContainerResources* container = nullptr;
    for (auto& c : *pod->mutable_containers()) {
      if (c.name() == g.container) container = &c;
    }
    if (container == nullptr) {
      container = pod->add_containers();
      container->set_name(g.container);
    }
    if (!g.device_ids.empty()) {
      auto* devices = container->add_devices();
      devices->set_resource_name(g.resource_name);
      for (const auto& id : g.device_ids) devices->add_device_ids(id);
    }
    for (const auto& d : g.dra) {
      std::string ns = g.namespace_name;
      std::string name = d.claim;
      if (auto slash = d.claim.find('/'); slash != std::string::npos) {
        ns = d.claim.substr(0, slash);
        name = d.claim.substr(slash + 1);
      }
      ::v1::DynamicResource* claim = nullptr;
      for (auto& existing : *container->mutable_dynamic_resources()) {
        if (existing.claim_namespace() == ns && existing.claim_name() == name) claim = &existing;
      }
      if (claim == nullptr) {
        claim = container->add_dynamic_resources();
        claim->set_claim_name(name);
        claim->set_claim_namespace(ns);
      }
      auto* resource = claim->add_claim_resources();
      resource->set_driver_name(d.driver);
      resource->set_pool_name(d.pool);
      resource->set_device_name(d.device);
      if (!d.share_id.empty()) resource->set_share_id(d.share_id);
      for (const auto& cdi : d.cdi_devices) resource->add_cdi_devices()->set_name(cdi);
    }
  }
  return response;
}

::v1::AllocatableResourcesResponse ToAllocatableResponse(
    const std::vector<AllocatableDevice>& devices) {
  ::v1::AllocatableResourcesResponse response;
  for (const auto& d : devices) {
    ::v1::ContainerDevices* entry = nullptr;
    for (auto& existing : *response.mutable_devices()) {
      if (existing.resource_name() == d.resource_name) entry = &existing;
    }
    if (entry == nullptr) {
      entry = response.add_devices();
      entry->set_resource_name(d.resource_name);
    }
    entry->add_device_ids(d.device_id);
  }
  return response;
}

}  // namespace gpuledger::kubelet
