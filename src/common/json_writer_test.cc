#include "common/json_writer.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/json_text.h"

namespace gpuledger {
namespace {

using nlohmann::json;

// Writes a parsed document back through the writer, member by member in the tree's (sorted)
// order: what a caller of the writer does by hand.
void Write(const json& value, JsonWriter& w) {
  switch (value.type()) {
    case json::value_t::object:
      w.BeginObject();
      for (const auto& [key, member] : value.items()) {
        w.Key(key);
        Write(member, w);
      }
      w.EndObject();
      break;
    case json::value_t::array:
      w.BeginArray();
      for (const json& member : value) Write(member, w);
      w.EndArray();
      break;
    case json::value_t::string:
      w.String(value.get_ref<const std::string&>());
      break;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      w.Int(value.get<std::int64_t>());
      break;
    case json::value_t::number_float:
      w.Double(value.get<double>());
      break;
    case json::value_t::boolean:
      w.Bool(value.get<bool>());
      break;
    default:
      w.Null();
  }
}

std::string Written(const json& value, int indent) {
  JsonWriter w(indent);
  Write(value, w);
  return std::move(w).Take();
}

// Texts of every kind a label or reason may hold: ASCII, quotes and backslashes, control
// characters, DEL, UTF-8, and bytes that are not UTF-8 (cut sequences, lone continuations).
std::string RandomText(std::mt19937_64& rng) {
  static const std::string kPieces[] = {"team-a",
                                        "\"",
                                        "\\",
                                        "\n",
                                        "\t",
                                        std::string(1, '\0'),
                                        "\x01",
                                        "\x1f",
                                        "\x7f",
                                        "é",
                                        "日本",
                                        "\xf0\x9f\x98\x80",
                                        "\xff",
                                        "\xc3",
                                        "\x80\x80",
                                        "\xe6\x97",
                                        " ",
                                        "/",
                                        "key:v",
                                        "",
                                        "\xed\xa0\x80",
                                        "\xf4\x90\x80\x80"};
  std::string s;
  const int pieces = static_cast<int>(rng() % 4);
  for (int i = 0; i < pieces; ++i) s += kPieces[rng() % std::size(kPieces)];
  return s;
}

double RandomDouble(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0:
      return static_cast<double>(static_cast<std::int64_t>(rng() % 2000) - 1000);
    case 1:
      return std::numeric_limits<double>::quiet_NaN();
    case 2:
      return std::numeric_limits<double>::infinity() * ((rng() % 2) ? 1 : -1);
    case 3:
      return std::numeric_limits<double>::denorm_min() * static_cast<double>(rng() % 100);
    case 4:
      return std::ldexp(static_cast<double>(rng() >> 11), static_cast<int>(rng() % 200) - 100);
    case 5:
      return static_cast<double>(rng() % 1000) / 1000.0;
    default: {
      std::uint64_t bits = rng();
      double d;
      static_assert(sizeof d == sizeof bits);
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
  }
}

json RandomValue(std::mt19937_64& rng, int depth) {
  switch (rng() % (depth < 4 ? 8 : 6)) {
    case 0:
      return RandomText(rng);
    case 1: {
      const std::int64_t extremes[] = {0, -1, std::numeric_limits<std::int64_t>::min(),
                                       std::numeric_limits<std::int64_t>::max(),
                                       static_cast<std::int64_t>(rng())};
      return extremes[rng() % std::size(extremes)];
    }
    case 2:
      return RandomDouble(rng);
    case 3:
      return (rng() % 2) == 0;
    case 4:
      return nullptr;
    case 5:
      return static_cast<std::int64_t>(rng() % 100000);
    case 6: {
      json object = json::object();
      const int members = static_cast<int>(rng() % 5);
      for (int i = 0; i < members; ++i) object[RandomText(rng)] = RandomValue(rng, depth + 1);
      return object;
    }
    default: {
      json array = json::array();
      const int members = static_cast<int>(rng() % 5);
      for (int i = 0; i < members; ++i) array.push_back(RandomValue(rng, depth + 1));
      return array;
    }
  }
}

TEST(JsonWriter, WritesWhatJsonTextWritesForRandomDocuments) {
  std::mt19937_64 rng(32);
  for (int trial = 0; trial < 3000; ++trial) {
    json doc = json::object();
    const int members = static_cast<int>(rng() % 6);
    for (int i = 0; i < members; ++i) doc[RandomText(rng)] = RandomValue(rng, 1);
    for (const int indent : {-1, 0, 2}) {
      ASSERT_EQ(Written(doc, indent), JsonText(doc, indent))
          << "trial " << trial << " indent " << indent;
    }
  }
}

TEST(JsonWriter, WritesEmptyContainersAndTopLevelScalarsAsJsonText) {
  EXPECT_EQ(Written(json::object(), 2), "{}");
  EXPECT_EQ(Written(json::array(), 2), "[]");
  EXPECT_EQ(Written(json{{"a", json::array()}, {"b", json::object()}}, 2),
            "{\n  \"a\": [],\n  \"b\": {}\n}");
  EXPECT_EQ(Written(json(0.1), -1), "0.1");
  EXPECT_EQ(Written(json(1.0), -1), "1.0");
  EXPECT_EQ(Written(json(1e-7), -1), "1e-07");
  EXPECT_EQ(Written(json(std::string("\xff")), -1), "\"\xef\xbf\xbd\"");
}

TEST(JsonWriter, WritesMembersInTheOrderGivenWithoutSorting) {
  JsonWriter w;
  w.BeginObject();
  w.Key("b");
  w.Int(1);
  w.Key("a");
  w.BeginArray();
  w.Bool(true);
  w.Null();
  w.EndArray();
  w.EndObject();
  EXPECT_EQ(w.text(), R"({"b":1,"a":[true,null]})");
}

TEST(JsonWriter, KeyOrderIsATreesOrderKeepingTheLastOfAKeyGivenTwice) {
  const std::vector<std::string_view> keys = {"b", "a", "__idle__", "b", "B"};
  EXPECT_EQ(KeyOrder(keys), (std::vector<std::size_t>{4, 2, 1, 3}));
  EXPECT_TRUE(KeyOrder({}).empty());
}

}  // namespace
}  // namespace gpuledger
