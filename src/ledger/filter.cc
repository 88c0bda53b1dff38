#include "ledger/filter.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include <fmt/format.h>

#include "common/strings.h"

namespace gpuledger::ledger {
namespace {

// Fields compared as they are, and OpenCost's aliases for labels.
constexpr std::string_view kFields[] = {
    "cluster",        "node",           "namespace", "pod",         "container",
    "controllerKind", "controllerName", "gpu_model", "sharing_mode"};
constexpr std::string_view kLabelAliases[] = {"team", "department", "environment", "owner",
                                              "product"};
// OpenCost's allocation fields that gpuledger does not record: refused by name, never matched
// against nothing.
constexpr std::string_view kNotRecorded[] = {"services", "annotation", "nodeLabel",
                                             "provider", "accountID",  "uid"};
constexpr std::string_view kFieldList =
    "cluster, node, namespace, pod, container, controllerKind, controllerName, label[KEY], "
    "namespaceLabel[KEY], team, department, environment, owner, product, gpu_model, sharing_mode";
// Parentheses deeper than this are refused: a filter is a query, not a stack to exhaust.
constexpr int kMaxDepth = 32;

bool IsPlacementField(const FilterClause& c) {
  return c.field == "cluster" || c.field == "node" || c.field == "gpu_model" ||
         c.field == "sharing_mode";
}

// ---------------------------------------------------------------------------------------------
// Tokens

enum class Tok { kOp, kComma, kAnd, kOr, kOpen, kClose, kString, kKey, kWord, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string_view text;  // a string's or key's inside; an operator's spelling
  std::size_t at = 0;     // byte offset of its first character
  FilterOp op = FilterOp::kEquals;
  bool negate = false;
};

// A name or a value without quotes: Kubernetes names, label keys and node names.
bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '_' || c == '.' ||
         c == '/' || static_cast<unsigned char>(c) >= 0x80;
}

std::string At(std::size_t offset) { return fmt::format("at position {}", offset + 1); }

Result<std::vector<Token>> Lex(std::string_view s) {
  // The operators, longest first so '!<~:' is not read as '!' then '<~:'.
  struct Spelling {
    std::string_view text;
    FilterOp op;
    bool negate;
  };
  static constexpr std::array<Spelling, 8> kOps = {{
      {"!<~:", FilterOp::kStartsWith, true},
      {"!~>:", FilterOp::kEndsWith, true},
      {"<~:", FilterOp::kStartsWith, false},
      {"~>:", FilterOp::kEndsWith, false},
      {"!~:", FilterOp::kContains, true},
      {"~:", FilterOp::kContains, false},
      {"!:", FilterOp::kEquals, true},
      {":", FilterOp::kEquals, false},
  }};
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++i;
      continue;
    }
    Token t;
    t.at = i;
    if (c == '"' || c == '[') {
      const char close = c == '"' ? '"' : ']';
      const std::size_t end = s.find(close, i + 1);
      if (end == std::string_view::npos)
        return InvalidArgument(fmt::format("{}: the '{}' is not closed", At(i), c));
      t.kind = c == '"' ? Tok::kString : Tok::kKey;
      t.text = s.substr(i + 1, end - i - 1);
      i = end + 1;
      out.push_back(t);
      continue;
    }
    if (IsWordChar(c)) {
      std::size_t end = i;
      while (end < s.size() && IsWordChar(s[end])) ++end;
      t.kind = Tok::kWord;
      t.text = s.substr(i, end - i);
      i = end;
      out.push_back(t);
      continue;
    }
    const auto single = std::string_view(",+|()").find(c);
    if (single != std::string_view::npos) {
      static constexpr Tok kSingle[] = {Tok::kComma, Tok::kAnd, Tok::kOr, Tok::kOpen, Tok::kClose};
      t.kind = kSingle[single];
      t.text = s.substr(i, 1);
      ++i;
      out.push_back(t);
      continue;
    }
    const auto op = std::find_if(kOps.begin(), kOps.end(), [&](const Spelling& o) {
      return s.substr(i).starts_with(o.text);
    });
    if (op == kOps.end())
      return InvalidArgument(fmt::format(
          "{}: '{}' is not an operator of the filter language (':', '!:', '~:', '!~:', '<~:', "
          "'!<~:', '~>:', '!~>:', '+', '|', ',', parentheses)",
          At(i), c));
    t.kind = Tok::kOp;
    t.text = op->text;
    t.op = op->op;
    t.negate = op->negate;
    i += op->text.size();
    out.push_back(t);
  }
  out.push_back({Tok::kEnd, {}, s.size()});
  return out;
}

std::string Describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd:
      return "the end";
    case Tok::kString:
      return fmt::format("\"{}\"", t.text);
    case Tok::kKey:
      return fmt::format("[{}]", t.text);
    default:
      return fmt::format("'{}'", t.text);
  }
}

// ---------------------------------------------------------------------------------------------
// Parser: recursive descent over OpenCost's grammar (ast/parser.go's), strict where OpenCost
// stops early (a comparison after another without '+' or '|' is an error, not ignored).

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Result<Filter> Whole() {
    if (t_.front().kind == Tok::kEnd) return Filter{};
    return Group(0);
  }

 private:
  const Token& Peek() const { return t_[pos_]; }
  const Token& Next() { return t_[pos_ < t_.size() - 1 ? pos_++ : pos_]; }
  static Error Expected(const Token& t, std::string_view what) {
    return InvalidArgument(fmt::format("{}: expected {}, found {}", At(t.at), what, Describe(t)));
  }

  // Elements joined by one of '+' and '|', up to the end or (depth > 0) its ')'.
  Result<Filter> Group(int depth) {
    if (depth > kMaxDepth)
      return InvalidArgument(
          fmt::format("{}: parentheses deeper than {}", At(Peek().at), kMaxDepth));
    const std::size_t opened = pos_ == 0 ? 0 : t_[pos_ - 1].at;
    auto first = Element(depth);
    if (!first) return first.error();
    Filter group;
    group.parts.push_back(std::move(*first));
    Tok joiner = Tok::kEnd;
    for (;;) {
      const Token& t = Peek();
      if (t.kind == Tok::kClose) {
        if (depth == 0) return InvalidArgument(fmt::format("{}: ')' without '('", At(t.at)));
        Next();
        break;
      }
      if (t.kind == Tok::kEnd) {
        if (depth > 0) return InvalidArgument(fmt::format("{}: the '(' is not closed", At(opened)));
        break;
      }
      if (t.kind != Tok::kAnd && t.kind != Tok::kOr) {
        if (t.kind == Tok::kWord)  // "a:x b:y": a '+' a URL's query turned into a space?
          return Expected(t, "'+' (all), '|' (any), ')' or the end (in a URL, '+' is sent as %2B)");
        return Expected(t, "'+' (all), '|' (any), ')' or the end");
      }
      if (joiner != Tok::kEnd && t.kind != joiner)
        return InvalidArgument(fmt::format(
            "{}: '{}' after '{}' in one scope: group them with parentheses, as in (a+b)|c",
            At(t.at), t.text, joiner == Tok::kAnd ? "+" : "|"));
      joiner = t.kind;
      Next();
      auto part = Element(depth);
      if (!part) return part.error();
      group.parts.push_back(std::move(*part));
    }
    if (group.parts.size() == 1) return std::move(group.parts.front());
    group.kind = joiner == Tok::kOr ? Filter::Kind::kAny : Filter::Kind::kAll;
    return group;
  }

  Result<Filter> Element(int depth) {
    if (Peek().kind == Tok::kOpen) {
      Next();
      return Group(depth + 1);
    }
    auto clause = Comparison();
    if (!clause) return clause.error();
    Filter f;
    f.kind = Filter::Kind::kClause;
    f.clause = std::move(*clause);
    return f;
  }

  Result<FilterClause> Comparison() {
    const Token& name = Next();
    if (name.kind != Tok::kWord) return Expected(name, "a field (" + std::string(kFieldList) + ")");
    FilterClause c;
    const bool mapped = name.text == "label" || name.text == "namespaceLabel";
    if (mapped) {
      c.field = std::string(name.text);
      if (Peek().kind == Tok::kKey) c.label_key = std::string(Next().text);
      if (c.field == "namespaceLabel" && c.label_key.empty())
        return Expected(Peek(), "namespaceLabel's [KEY]");
    } else if (std::find(std::begin(kLabelAliases), std::end(kLabelAliases), name.text) !=
               std::end(kLabelAliases)) {
      c.field = "label";
      c.label_key = std::string(name.text);
    } else if (std::find(std::begin(kFields), std::end(kFields), name.text) != std::end(kFields)) {
      c.field = std::string(name.text);
    } else if (std::find(std::begin(kNotRecorded), std::end(kNotRecorded), name.text) !=
               std::end(kNotRecorded)) {
      return InvalidArgument(
          fmt::format("{}: '{}' is an OpenCost field gpuledger does not record; it filters on {}",
                      At(name.at), name.text, kFieldList));
    } else {
      return InvalidArgument(
          fmt::format("{}: unknown field '{}' ({})", At(name.at), name.text, kFieldList));
    }
    const Token& op = Next();
    if (op.kind != Tok::kOp)
      return Expected(op, fmt::format("an operator after {} (':', '!:', '~:', '!~:', '<~:', "
                                      "'!<~:', '~>:', '!~>:')",
                                      Describe(name)));
    c.op = op.op;
    c.negate = op.negate;
    for (;;) {
      const Token& v = Next();
      if (v.kind != Tok::kString && v.kind != Tok::kWord)
        return Expected(v, "a value (\"text\"; \"\" for none)");
      c.values.emplace_back(v.text);
      if (Peek().kind != Tok::kComma) break;
      Next();
    }
    return c;
  }

  std::vector<Token> t_;
  std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Matching

bool SameText(std::string_view a, std::string_view b, bool fold) {
  if (!fold) return a == b;
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool Test(FilterOp op, std::string_view have, std::string_view want, bool fold) {
  switch (op) {
    case FilterOp::kEquals:
      return SameText(have, want, fold);
    case FilterOp::kContains:
      for (std::size_t i = 0; i + want.size() <= have.size(); ++i)
        if (SameText(have.substr(i, want.size()), want, fold)) return true;
      return false;
    case FilterOp::kStartsWith:
      return have.size() >= want.size() && SameText(have.substr(0, want.size()), want, fold);
    case FilterOp::kEndsWith:
      return have.size() >= want.size() &&
             SameText(have.substr(have.size() - want.size()), want, fold);
  }
  return false;
}

std::string FieldValue(const FilterClause& c, const ConsumerInfo& info,
                       const ConsumerLabels& labels, const report::Placed& row) {
  if (c.field == "namespace") return info.ref.namespace_name;
  if (c.field == "cluster") return row.cluster;
  if (c.field == "node") return row.node;
  if (c.field == "pod") return info.ref.pod;
  if (c.field == "container") return info.ref.container;
  if (c.field == "controllerKind") return info.owner_kind;
  if (c.field == "controllerName") return info.owner_name;
  if (c.field == "gpu_model") return row.gpu_model;
  if (c.field == "sharing_mode") return std::string(ToString(row.sharing));
  if (c.field == "label") {
    if (const std::string* value = labels.Find(c.label_key)) return *value;
  }
  if (c.field == "namespaceLabel") {
    if (auto it = labels.namespace_labels.find(c.label_key); it != labels.namespace_labels.end())
      return it->second;
  }
  return {};
}

bool MatchesClause(const FilterClause& c, const ConsumerInfo& info, const ConsumerLabels& labels,
                   const report::Placed& placed) {
  bool any = false;
  if (c.field == "label" && c.label_key.empty()) {
    // The label keys (the pod's and its namespace's): ':' and '~:' name one, '<~:' and '~>:'
    // its start or end, as OpenCost's key-less map comparisons do.
    const FilterOp op = c.op == FilterOp::kContains ? FilterOp::kEquals : c.op;
    for (const std::string& want : c.values) {
      for (const LabelMap* map : {&labels.labels, &labels.namespace_labels})
        for (const auto& [key, value] : *map) any = any || Test(op, key, want, false);
    }
  } else {
    const std::string have = FieldValue(c, info, labels, placed);
    // OpenCost writes controller kinds in lower case ("deployment"), Kubernetes and the ledger
    // as kinds are spelled ("Deployment"): both name the same kind.
    const bool fold = c.field == "controllerKind";
    any = std::any_of(c.values.begin(), c.values.end(),
                      [&](const std::string& want) { return Test(c.op, have, want, fold); });
  }
  return any != c.negate;
}

bool OnlyPlacement(const Filter& f) {
  if (f.kind == Filter::Kind::kClause) return IsPlacementField(f.clause);
  return !f.parts.empty() && std::all_of(f.parts.begin(), f.parts.end(), OnlyPlacement);
}

void AppendKey(const Filter& f, std::string& key) {
  switch (f.kind) {
    case Filter::Kind::kClause: {
      const FilterClause& c = f.clause;
      key += c.field;
      key += '[';
      key += c.label_key;
      key += ']';
      key += static_cast<char>('0' + static_cast<int>(c.op));
      key += c.negate ? '!' : '=';
      for (const std::string& v : c.values) AppendLengthPrefixed(key, v);
      return;
    }
    case Filter::Kind::kAll:
    case Filter::Kind::kAny:
      key += f.kind == Filter::Kind::kAll ? "(+" : "(|";
      for (const Filter& part : f.parts) {
        AppendKey(part, key);
        key += '\n';
      }
      key += ')';
      return;
  }
}

}  // namespace

Result<Filter> ParseFilter(std::string_view text) {
  auto tokens = Lex(text);
  if (!tokens) return tokens.error();
  return Parser(std::move(*tokens)).Whole();
}

std::string FilterKey(const Filter& filter) {
  std::string key;
  if (!filter.empty()) AppendKey(filter, key);
  return key;
}

bool ReadsPlacement(const Filter& f) {
  if (f.kind == Filter::Kind::kClause) return IsPlacementField(f.clause);
  return std::any_of(f.parts.begin(), f.parts.end(),
                     [](const Filter& part) { return ReadsPlacement(part); });
}

Filter PlacementPart(const Filter& f) {
  if (OnlyPlacement(f)) return f;
  Filter part;  // all of nothing: every placement
  if (f.kind == Filter::Kind::kAll)
    for (const Filter& p : f.parts)
      if (OnlyPlacement(p)) part.parts.push_back(p);
  return part;
}

bool Matches(const Filter& filter, const ConsumerInfo& consumer, const report::Placed& placed) {
  return Matches(filter, consumer, LabelsOf(consumer), placed);
}

bool Matches(const Filter& f, const ConsumerInfo& consumer, const ConsumerLabels& labels,
             const report::Placed& placed) {
  switch (f.kind) {
    case Filter::Kind::kClause:
      return MatchesClause(f.clause, consumer, labels, placed);
    case Filter::Kind::kAll:
      return std::all_of(f.parts.begin(), f.parts.end(),
                         [&](const Filter& p) { return Matches(p, consumer, labels, placed); });
    case Filter::Kind::kAny:
      return std::any_of(f.parts.begin(), f.parts.end(),
                         [&](const Filter& p) { return Matches(p, consumer, labels, placed); });
  }
  return false;
}

}  // namespace gpuledger::ledger
