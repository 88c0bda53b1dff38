// AdmissionReview v1 (k8s.io/api/admission/v1) as the API server sends it. nlohmann_json throws;
#include "common/enum_names.h"
// its exceptions are caught here and never leave this file.

#include "webhook/admission_review.h"

#include <fmt/format.h>

#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include "common/json_text.h"
#include "webhook/kernel_time_patch.h"

namespace gpuledger::webhook {
namespace {

using json = nlohmann::json;
using guardrails::AdmissionContainer;
using guardrails::AdmissionPod;
using guardrails::ContainerRole;

constexpr std::string_view kApiVersion = "admission.k8s.io/v1";

// Reads fields of a JSON document by path; the first problem is kept, as "path: what", and
// every reader returns false once there is one.
class Reader {
 public:
  const std::string& error() const { return error_; }

  bool Fail(const std::string& path, std::string_view what) {
    if (error_.empty()) error_ = fmt::format("{}: {}", path, what);
    return false;
  }

  // A member that must be there.
  const json* Required(const json& object, const char* key, const std::string& path) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) {
      Fail(path, "missing");
      return nullptr;
    }
    return &*it;
  }
  // A member that may be absent (or null): nullptr then.
  static const json* Optional(const json& object, const char* key) {
    auto it = object.find(key);
    return it == object.end() || it->is_null() ? nullptr : &*it;
  }

  bool String(const json* value, const std::string& path, std::string& out) {
    if (value == nullptr) return true;
    if (!value->is_string()) return Fail(path, "expected a string");
    out = value->get<std::string>();
    return true;
  }
  bool Object(const json* value, const std::string& path) {
    return value == nullptr || value->is_object() || Fail(path, "expected an object");
  }
  bool Array(const json* value, const std::string& path) {
    return value == nullptr || value->is_array() || Fail(path, "expected a list");
  }

 private:
  std::string error_;
};

std::string Index(const std::string& path, std::size_t i) { return fmt::format("{}[{}]", path, i); }

// Requests and limits: quantities are strings on the wire; a bare number is accepted as written.
bool Resources(Reader& r, const json& container, const std::string& path, AdmissionContainer& c) {
  const json* resources = Reader::Optional(container, "resources");
  if (!r.Object(resources, path + ".resources")) return false;
  if (resources == nullptr) return true;
  for (const char* key : {"requests", "limits"}) {
    const std::string list_path = path + ".resources." + key;
    const json* list = Reader::Optional(*resources, key);
    if (!r.Object(list, list_path)) return false;
    if (list == nullptr) continue;
    for (const auto& [name, quantity] : list->items()) {
      if (quantity.is_string()) {
        c.resources.emplace_back(name, quantity.get<std::string>());
      } else if (quantity.is_number()) {
        c.resources.emplace_back(name, JsonText(quantity));
      } else {
        return r.Fail(list_path + "." + name, "expected a quantity like \"1\" or \"500m\"");
      }
    }
  }
  return true;
}

bool Env(Reader& r, const json& container, const std::string& path, AdmissionContainer& c) {
  const json* env = Reader::Optional(container, "env");
  if (!r.Array(env, path + ".env")) return false;
  c.has_env_list = env != nullptr;
  if (env == nullptr) return true;
  for (std::size_t i = 0; i < env->size(); ++i) {
    const json& entry = (*env)[i];
    const std::string at = Index(path + ".env", i);
    if (!entry.is_object()) return r.Fail(at, "expected an object");
    guardrails::AdmissionEnvVar var;
    const json* name = r.Required(entry, "name", at + ".name");
    if (name == nullptr || !r.String(name, at + ".name", var.name)) return false;
    const json* value_from = Reader::Optional(entry, "valueFrom");
    if (!r.Object(value_from, at + ".valueFrom")) return false;
    if (value_from != nullptr) {
      var.value = std::nullopt;
    } else {
      std::string value;  // absent: set to the empty string, still a value the pod set
      if (!r.String(Reader::Optional(entry, "value"), at + ".value", value)) return false;
      var.value = std::move(value);
    }
    c.env.push_back(std::move(var));
  }
  return true;
}

bool Container(Reader& r, const json& container, const std::string& path, ContainerRole role,
               AdmissionPod& pod) {
  if (!container.is_object()) return r.Fail(path, "expected an object");
  AdmissionContainer c;
  c.role = role;
  const json* name = r.Required(container, "name", path + ".name");
  if (name == nullptr || !r.String(name, path + ".name", c.name)) return false;
  if (!Env(r, container, path, c) || !Resources(r, container, path, c)) return false;
  const json* mounts = Reader::Optional(container, "volumeMounts");
  if (!r.Array(mounts, path + ".volumeMounts")) return false;
  c.has_volume_mounts = mounts != nullptr;
  const json* security = Reader::Optional(container, "securityContext");
  if (!r.Object(security, path + ".securityContext")) return false;
  if (security != nullptr) {
    const json* privileged = Reader::Optional(*security, "privileged");
    if (privileged != nullptr && !privileged->is_boolean())
      return r.Fail(path + ".securityContext.privileged", "expected true or false");
    c.privileged = privileged != nullptr && privileged->get<bool>();
  }
  pod.containers.push_back(std::move(c));
  return true;
}

bool Pod(Reader& r, const json& request, AdmissionPod& pod) {
  const std::string path = "request.object";
  const json* object = r.Required(request, "object", path);
  if (object == nullptr || !r.Object(object, path)) return false;
  const json* metadata = Reader::Optional(*object, "metadata");
  if (!r.Object(metadata, path + ".metadata")) return false;
  // The review's namespace and name are the API server's; the object's may be unset at CREATE.
  if (!r.String(Reader::Optional(request, "namespace"), "request.namespace", pod.namespace_name) ||
      !r.String(Reader::Optional(request, "name"), "request.name", pod.name))
    return false;
  if (metadata != nullptr) {
    if (pod.namespace_name.empty() && !r.String(Reader::Optional(*metadata, "namespace"),
                                                path + ".metadata.namespace", pod.namespace_name))
      return false;
    if (pod.name.empty() &&
        !r.String(Reader::Optional(*metadata, "name"), path + ".metadata.name", pod.name))
      return false;
    const json* labels = Reader::Optional(*metadata, "labels");
    if (!r.Object(labels, path + ".metadata.labels")) return false;
    if (labels != nullptr) {
      for (const auto& [key, value] : labels->items()) {
        if (!r.String(&value, path + ".metadata.labels." + key, pod.labels[key])) return false;
      }
    }
  }
  const json* spec = r.Required(*object, "spec", path + ".spec");
  if (spec == nullptr || !r.Object(spec, path + ".spec")) return false;
  if (r.Required(*spec, "containers", path + ".spec.containers") == nullptr) return false;
  const std::pair<const char*, ContainerRole> lists[] = {
      {"initContainers", ContainerRole::kInit},
      {"containers", ContainerRole::kContainer},
      {"ephemeralContainers", ContainerRole::kEphemeral}};
  for (const auto& [key, role] : lists) {
    const std::string list_path = path + ".spec." + key;
    const json* list = Reader::Optional(*spec, key);
    if (!r.Array(list, list_path)) return false;
    if (list == nullptr) continue;
    for (std::size_t i = 0; i < list->size(); ++i)
      if (!Container(r, (*list)[i], Index(list_path, i), role, pod)) return false;
  }
  const json* claims = Reader::Optional(*spec, "resourceClaims");
  if (!r.Array(claims, path + ".spec.resourceClaims")) return false;
  pod.resource_claims = claims == nullptr ? 0 : static_cast<int>(claims->size());
  const json* volumes = Reader::Optional(*spec, "volumes");
  if (!r.Array(volumes, path + ".spec.volumes")) return false;
  pod.has_volumes = volumes != nullptr;
  return true;
}

Result<ReviewRequest> Parse(std::string_view body) {
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::parse_error& e) {
    // "[json.exception.parse_error.101] parse error at line 1, ...": the tag says nothing.
    std::string what = e.what();
    if (auto close = what.find("] ");
        what.starts_with("[json.exception") && close != std::string::npos)
      what = what.substr(close + 2);
    return InvalidArgument("invalid JSON: " + what);
  }
  if (!doc.is_object())
    return InvalidArgument("the body: expected a JSON object (an AdmissionReview)");
  Reader r;
  std::string api_version, kind;
  if (!r.String(r.Required(doc, "apiVersion", "apiVersion"), "apiVersion", api_version) ||
      !r.String(r.Required(doc, "kind", "kind"), "kind", kind) || !r.error().empty())
    return InvalidArgument(r.error());
  if (api_version != kApiVersion) {
    return InvalidArgument(
        fmt::format("apiVersion: expected {} (admissionReviewVersions: [v1]), "
                    "got '{}'",
                    kApiVersion, api_version));
  }
  if (kind != "AdmissionReview")
    return InvalidArgument(fmt::format("kind: expected AdmissionReview, got '{}'", kind));
  const json* request = r.Required(doc, "request", "request");
  if (request == nullptr || !r.Object(request, "request")) return InvalidArgument(r.error());
  ReviewRequest out;
  const json* uid = r.Required(*request, "uid", "request.uid");
  if (uid == nullptr || !r.String(uid, "request.uid", out.uid)) return InvalidArgument(r.error());
  if (out.uid.empty()) return InvalidArgument("request.uid: expected a non-empty string");
  const json* gvk = r.Required(*request, "kind", "request.kind");
  if (gvk == nullptr || !r.Object(gvk, "request.kind")) return InvalidArgument(r.error());
  std::string group, object_kind, operation, sub_resource;
  if (!r.String(Reader::Optional(*gvk, "group"), "request.kind.group", group) ||
      !r.String(r.Required(*gvk, "kind", "request.kind.kind"), "request.kind.kind", object_kind) ||
      !r.String(r.Required(*request, "operation", "request.operation"), "request.operation",
                operation) ||
      !r.String(Reader::Optional(*request, "subResource"), "request.subResource", sub_resource) ||
      !r.error().empty())
    return InvalidArgument(r.error());
  out.judge = group.empty() && object_kind == "Pod" &&
              (sub_resource.empty() || sub_resource == "ephemeralcontainers") &&
              (operation == "CREATE" || operation == "UPDATE");
  out.create = operation == "CREATE";
  if (!out.judge) return out;
  Reader pod_reader;
  AdmissionPod pod;
  if (Pod(pod_reader, *request, pod))
    out.pod = std::move(pod);
  else
    out.unreadable = pod_reader.error();
  return out;
}

}  // namespace

Result<ReviewRequest> ParseAdmissionReview(std::string_view body) {
  try {
    return Parse(body);
  } catch (const std::exception& e) {  // not expected after the type checks; never let one out
    return InvalidArgument(std::string("unreadable AdmissionReview: ") + e.what());
  }
}

std::string SerializeAdmissionResponse(const std::string& uid,
                                       const guardrails::AdmissionVerdict& verdict) {
  json response = {{"uid", uid}, {"allowed", verdict.allowed}};
  if (!verdict.warnings.empty()) response["warnings"] = verdict.warnings;
  if (!verdict.allowed) response["status"] = {{"code", 403}, {"message", verdict.denial}};
  json doc = {{"apiVersion", kApiVersion}, {"kind", "AdmissionReview"}, {"response", response}};
  return JsonText(doc);
}

constexpr NameTable<Verdict, 4> kVerdictNames = {{
    {Verdict::kAllowed, "allowed"},
    {Verdict::kWarned, "warned"},
    {Verdict::kDenied, "denied"},
    {Verdict::kInvalid, "invalid"},
}};

std::string_view ToString(Verdict verdict) { return NameIn(kVerdictNames, verdict, "invalid"); }

namespace {

// No uid to answer to: an HTTP error, and the API server applies the webhook configuration's
// failurePolicy.
ReviewAnswer InvalidReview(const Error& error) {
  ReviewAnswer answer;
  answer.http_status = 400;
  answer.content_type = "text/plain";
  answer.body = "invalid AdmissionReview: " + error.message + "\n";
  answer.verdict = Verdict::kInvalid;
  return answer;
}

}  // namespace

ReviewAnswer AnswerReview(std::string_view body, const guardrails::Policy& policy) {
  ReviewAnswer answer;
  auto request = ParseAdmissionReview(body);
  if (!request) return InvalidReview(request.error());
  guardrails::AdmissionVerdict& decision = answer.decision;
  if (request->pod) {
    decision = guardrails::Judge(*request->pod, policy);
  } else if (request->judge && policy.webhook_fail_open) {
    decision.warnings.push_back(fmt::format(
        "gpuledger could not read this pod ({}); admitted unjudged (webhook.failure: open).",
        request->unreadable));
  } else if (request->judge) {
    decision.allowed = false;
    decision.denial = fmt::format(
        "gpuledger could not read this pod ({}); denied unjudged (webhook.failure: closed).",
        request->unreadable);
  }
  answer.verdict = !decision.allowed            ? Verdict::kDenied
                   : !decision.warnings.empty() ? Verdict::kWarned
                                                : Verdict::kAllowed;
  answer.body = SerializeAdmissionResponse(request->uid, decision);
  return answer;
}

ReviewAnswer AnswerMutation(std::string_view body, const guardrails::Policy& policy) {
  ReviewAnswer answer;
  auto request = ParseAdmissionReview(body);
  if (!request) return InvalidReview(request.error());
  json response = {{"uid", request->uid}, {"allowed", true}};
  if (request->pod && request->create) {
    if (auto patch = KernelTimePatch(*request->pod, policy.kernel_time)) {
      std::string encoded(4 * ((patch->size() + 2) / 3) + 1, '\0');
      const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                    reinterpret_cast<const unsigned char*>(patch->data()),
                                    static_cast<int>(patch->size()));
      encoded.resize(static_cast<std::size_t>(n));
      response["patchType"] = "JSONPatch";
      response["patch"] = encoded;
    }
  }
  answer.body = JsonText(
      json{{"apiVersion", kApiVersion}, {"kind", "AdmissionReview"}, {"response", response}});
  return answer;
}

}  // namespace gpuledger::webhook
