#include "store/postgres_db.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <limits>
#include <utility>

#include "common/strings.h"

namespace gpuledger::store {
namespace {

// Values of one key in a parsed conninfo ("" when absent).
std::string ConninfoValue(const PQconninfoOption* options, std::string_view key) {
  for (const PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) {
    if (key == o->keyword && o->val != nullptr) return o->val;
  }
  return "";
}

std::string PercentDecode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int v = 0;
      auto [p, ec] = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
      if (ec == std::errc() && p == s.data() + i + 3) {
        out.push_back(static_cast<char>(v));
        i += 2;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

// [begin, end) of each password value in a libpq URL (userinfo, ?password=) or key=value
// string, found by walking its grammar: positions, so that no other text is touched.
std::vector<std::pair<std::size_t, std::size_t>> PasswordSpans(std::string_view url) {
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  const std::size_t scheme = url.find("://");
  if (url.starts_with("postgres://") || url.starts_with("postgresql://")) {
    const std::size_t authority = scheme + 3;
    const std::size_t authority_end = std::min(url.find_first_of("/?", authority), url.size());
    const std::size_t at = url.rfind('@', authority_end - 1);
    if (at != std::string_view::npos && at >= authority) {
      const std::size_t colon = url.find(':', authority);
      if (colon != std::string_view::npos && colon < at) spans.emplace_back(colon + 1, at);
    }
    if (const std::size_t query = url.find('?', authority); query != std::string_view::npos) {
      for (std::size_t p = query + 1; p < url.size();) {
        const std::size_t end = std::min(url.find('&', p), url.size());
        const std::size_t eq = url.find('=', p);
        if (eq < end && PercentDecode(url.substr(p, eq - p)) == "password")
          spans.emplace_back(eq + 1, end);
        p = end + 1;
      }
    }
    return spans;
  }
  // keyword = value pairs; a value is 'quoted' (with \' and \\ escapes) or runs to a space.
  for (std::size_t p = 0; p < url.size();) {
    while (p < url.size() && url[p] == ' ') ++p;
    const std::size_t key = p;
    while (p < url.size() && url[p] != '=' && url[p] != ' ') ++p;
    const std::string_view name = url.substr(key, p - key);
    while (p < url.size() && url[p] == ' ') ++p;
    if (p >= url.size() || url[p] != '=') break;  // not key=value: libpq refuses it
    ++p;
    while (p < url.size() && url[p] == ' ') ++p;
    std::size_t begin = p, end = p;
    if (p < url.size() && url[p] == '\'') {
      begin = ++p;
      while (p < url.size() && url[p] != '\'') p += url[p] == '\\' ? 2 : 1;
      end = std::min(p, url.size());
      ++p;
    } else {
      while (p < url.size() && url[p] != ' ') ++p;
      end = p;
    }
    if (name == "password") spans.emplace_back(begin, end);
  }
  return spans;
}

// libpq's reason for refusing to parse a URL quotes pieces of it ("invalid URI query parameter:
// \"nosuch\""; some quote the whole URL). A quoted piece that holds a password is hidden whole.
std::string HideQuotedPasswords(const std::string& url, const std::string& reason) {
  std::vector<std::string> secrets;
  for (const auto& [begin, end] : PasswordSpans(url)) {
    if (end <= begin) continue;
    secrets.push_back(url.substr(begin, end - begin));
    secrets.push_back(PercentDecode(secrets.back()));
  }
  std::string out;
  for (std::size_t p = 0; p < reason.size();) {
    const std::size_t open = reason.find('"', p);
    const std::size_t close = open == std::string::npos ? open : reason.find('"', open + 1);
    if (close == std::string::npos) {
      out += reason.substr(p);
      break;
    }
    const std::string quoted = reason.substr(open + 1, close - open - 1);
    const bool holds = std::any_of(secrets.begin(), secrets.end(), [&](const std::string& s) {
      return quoted.find(s) != std::string::npos;
    });
    out += reason.substr(p, open - p) + "\"" + (holds ? "(hidden: holds the password)" : quoted) +
           "\"";
    p = close + 1;
  }
  return out;
}

// libpq's messages span lines ("...failed: Connection refused\n\tIs the server
// running..."); errors are one line, whitespace runs collapsed.
std::string OneLine(const std::string& s) {
  std::string out;
  for (char c : s) {
    bool space = c == '\n' || c == '\t' || c == '\r' || c == ' ';
    if (space) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

ErrorCode CodeForSqlState(std::string_view state) {
  if (state.starts_with("08") || state.starts_with("57P") || state == "40001" || state == "40P01" ||
      state == "55P03" || state.starts_with("53")) {
    return ErrorCode::kUnavailable;
  }
  if (state.starts_with("22") || state.starts_with("23")) return ErrorCode::kInvalidArgument;
  if (state.starts_with("XX")) return ErrorCode::kInternal;
  return ErrorCode::kIo;
}

void IgnoreNotice(void* /*arg*/, const char* /*message*/) {}

}  // namespace

std::string DescribePostgresServer(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &err);
  if (options == nullptr) {
    PQfreemem(err);
    return "postgres://(unparseable URL)";
  }
  std::string user = ConninfoValue(options, "user");
  std::string host = ConninfoValue(options, "host");
  if (host.empty()) host = ConninfoValue(options, "hostaddr");
  std::string port = ConninfoValue(options, "port");
  std::string db = ConninfoValue(options, "dbname");
  PQconninfoFree(options);
  if (host.empty()) host = "localhost";
  return fmt::format("postgres://{}{}{}{}/{}", user, user.empty() ? "" : "@", host,
                     port.empty() ? "" : ":" + port, db);
}

std::string RedactPostgresUrl(const std::string& url) {
  std::string out = url;
  auto spans = PasswordSpans(url);
  // From the end, so earlier positions stay valid.
  for (auto it = spans.rbegin(); it != spans.rend(); ++it)
    out.replace(it->first, it->second - it->first, "***");
  return out;
}

PgParams& PgParams::Add(std::int64_t value) {
  values_.push_back(std::to_string(value));
  null_.push_back(false);
  return *this;
}

PgParams& PgParams::Add(double value) {
  values_.push_back(fmt::format("{}", value));  // shortest text that reads back exactly
  null_.push_back(false);
  return *this;
}

PgParams& PgParams::Add(std::string value) {
  values_.push_back(std::move(value));
  null_.push_back(false);
  return *this;
}

PgParams& PgParams::AddNull() {
  values_.emplace_back();
  null_.push_back(true);
  return *this;
}

PgResult& PgResult::operator=(PgResult&& other) noexcept {
  if (this != &other) {
    if (result_ != nullptr) PQclear(result_);
    result_ = std::exchange(other.result_, nullptr);
  }
  return *this;
}

PgResult::~PgResult() {
  if (result_ != nullptr) PQclear(result_);
}

bool PgResult::Int(int row, int col, std::int64_t& out) const {
  std::string_view v = View(row, col);
  std::int64_t parsed = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) return false;
  out = parsed;
  return true;
}

bool PgResult::Real(int row, int col, double& out) const {
  std::string_view v = View(row, col);
  if (v == "NaN") {
    out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (v == "Infinity" || v == "-Infinity") {
    out = v[0] == '-' ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
    return true;
  }
  double parsed = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (ec != std::errc() || p != v.data() + v.size() || v.empty()) return false;
  out = parsed;
  return true;
}

Result<std::unique_ptr<PgConn>> PgConn::Open(const std::string& url, bool read_only) {
  const std::string server = DescribePostgresServer(url);
  char* parse_err = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(url.c_str(), &parse_err);
  if (parsed == nullptr) {
    std::string why = parse_err != nullptr ? OneLine(parse_err) : "out of memory";
    PQfreemem(parse_err);
    return InvalidArgument(fmt::format("postgres: the ledger URL {} is malformed: {}",
                                       RedactPostgresUrl(url), HideQuotedPasswords(url, why)));
  }
  PQconninfoFree(parsed);

  // Keywords before dbname are defaults the URL may override; those after it
  // are forced.
  const std::array<const char*, 5> keys = {"connect_timeout", "fallback_application_name", "dbname",
                                           "client_encoding", nullptr};
  const std::array<const char*, 5> values = {"10", "gpuledger", url.c_str(), "UTF8", nullptr};
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr) return Unavailable(fmt::format("{}: connect: out of memory", server));
  auto db = std::unique_ptr<PgConn>(new PgConn(conn, url, server, read_only));
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  if (PQstatus(conn) != CONNECTION_OK) return db->ConnectError("connect");
  if (Status s = db->Setup(); !s) return s.error();
  return db;
}

PgConn::~PgConn() { PQfinish(conn_); }

Status PgConn::Setup() {
  // Exact doubles in text results whatever the server's default; errors only,
  // no notices.
  auto r = Exec("configure session",
                read_only_ ? "SET extra_float_digits = 3; SET default_transaction_read_only = on"
                           : "SET extra_float_digits = 3");
  return r ? Status::Ok() : r.status();
}

Status PgConn::Ensure() {
  if (PQstatus(conn_) == CONNECTION_OK) return Status::Ok();
  PQreset(conn_);
  if (PQstatus(conn_) != CONNECTION_OK) return ConnectError("reconnect");
  return Setup();
}

Error PgConn::ConnectError(std::string_view what) const {
  std::string message = OneLine(PQerrorMessage(conn_));
  if (message.empty()) message = "cannot connect";
  // libpq's connection errors name the host and port, never the password.
  return Unavailable(fmt::format("{}: {}: {}", server_, what, message));
}

Error PgConn::MakeError(std::string_view what, const PGresult* result) const {
  std::string message;
  std::string state;
  if (result != nullptr) {
    const char* s = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
    const char* detail = PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL);
    if (s != nullptr) state = s;
    if (primary != nullptr) {
      message = primary;
      if (detail != nullptr) message += fmt::format(" ({})", detail);
    } else {
      message = PQresultErrorMessage(result);
    }
  }
  if (message.empty()) message = PQerrorMessage(conn_);
  message = OneLine(message);
  if (message.empty()) message = "unknown error";

  ErrorCode code = CodeForSqlState(state);
  if (PQstatus(conn_) != CONNECTION_OK) {
    code = ErrorCode::kUnavailable;
    message += " (connection lost; the next call reconnects)";
  }
  if (!state.empty()) message += fmt::format(" [{}]", state);
  return Error{code, fmt::format("{}: {}: {}", server_, what, message)};
}

Result<PgResult> PgConn::Exec(std::string_view what, const std::string& sql,
                              const PgParams& params) {
  last_sqlstate_.clear();
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Unavailable(
        fmt::format("{}: {}: not connected (the next call reconnects)", server_, what));
  }
  PGresult* raw = nullptr;
  if (params.size() == 0) {
    raw = PQexec(conn_, sql.c_str());
  } else {
    std::vector<const char*> values(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      values[i] = params.null_[i] ? nullptr : params.values_[i].c_str();
    }
    raw = PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr, values.data(),
                       nullptr, nullptr,
                       /*resultFormat=*/0);
  }
  PgResult result(raw);
  ExecStatusType status = raw == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(raw);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    if (raw != nullptr) {
      const char* s = PQresultErrorField(raw, PG_DIAG_SQLSTATE);
      if (s != nullptr) last_sqlstate_ = s;
    }
    return MakeError(what, raw);
  }
  return result;
}

Status PgConn::CopyIn(std::string_view what, const std::string& copy_sql, std::string_view data) {
  last_sqlstate_.clear();
  if (PQstatus(conn_) != CONNECTION_OK) {
    return Unavailable(
        fmt::format("{}: {}: not connected (the next call reconnects)", server_, what));
  }
  PGresult* start = PQexec(conn_, copy_sql.c_str());
  if (start == nullptr || PQresultStatus(start) != PGRES_COPY_IN) {
    if (start != nullptr) {
      const char* s = PQresultErrorField(start, PG_DIAG_SQLSTATE);
      if (s != nullptr) last_sqlstate_ = s;
    }
    Error e = MakeError(what, start);
    PQclear(start);
    return e;
  }
  PQclear(start);
  // Chunks of 1 MiB: libpq buffers what it cannot send yet (blocking
  // connection).
  constexpr std::size_t kChunk = 1 << 20;
  bool sent = true;
  for (std::size_t at = 0; at < data.size() && sent; at += kChunk) {
    std::string_view chunk = data.substr(at, kChunk);
    sent = PQputCopyData(conn_, chunk.data(), static_cast<int>(chunk.size())) == 1;
  }
  if (PQputCopyEnd(conn_, sent ? nullptr : "client failed to send data") != 1) sent = false;
  // The COPY's outcome, then drain: the connection is reusable only after a
  // null result.
  Status status = Status::Ok();
  while (PGresult* r = PQgetResult(conn_)) {
    if (status.ok() && PQresultStatus(r) != PGRES_COMMAND_OK) {
      const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
      if (s != nullptr) last_sqlstate_ = s;
      status = MakeError(what, r);
    }
    PQclear(r);
    if (PQstatus(conn_) != CONNECTION_OK) break;
  }
  if (status.ok() && !sent) status = MakeError(what, nullptr);
  return status;
}

PgTxn::~PgTxn() {
  // A lost connection has already aborted the transaction server-side: nothing
  // to roll back, and no reconnecting here (the next operation does that).
  if (conn_ != nullptr && conn_->connected()) {
    (void)conn_->Exec("rollback", "ROLLBACK");
  }
}

Result<PgTxn> PgTxn::Begin(PgConn& conn, const std::string& begin) {
  auto r = conn.Exec("begin transaction", begin);
  if (!r) return r.error();
  return PgTxn(&conn);
}

Status PgTxn::Commit() {
  PgConn* conn = std::exchange(conn_, nullptr);
  auto r = conn->Exec("commit", "COMMIT");
  return r ? Status::Ok() : r.status();
}

void AppendCopyField(std::string& row, std::string_view value) {
  for (char c : value) {
    switch (c) {
      case '\\':
        row += "\\\\";
        break;
      case '\t':
        row += "\\t";
        break;
      case '\n':
        row += "\\n";
        break;
      case '\r':
        row += "\\r";
        break;
      default:
        row.push_back(c);
    }
  }
}

std::string ByteaHex(std::string_view bytes) {
  constexpr char kDigits[] = "0123456789abcdef";
  std::string out = "\\x";
  out.reserve(2 + 2 * bytes.size());
  for (char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

namespace {
// HexDigitValue of every byte, looked up once: decoding hours records is a loop over every byte
// a cold read transfers.
const std::array<int, 256>& HexDigitValues() {
  static const std::array<int, 256> kValues = [] {
    std::array<int, 256> v{};
    for (int c = 0; c < 256; ++c) v[c] = HexDigitValue(static_cast<char>(c));
    return v;
  }();
  return kValues;
}
}  // namespace

bool DecodeByteaHex(std::string_view text, std::string& out) {
  if (text.size() < 2 || text[0] != '\\' || text[1] != 'x' || text.size() % 2 != 0) return false;
  const std::array<int, 256>& value = HexDigitValues();
  out.resize((text.size() - 2) / 2);
  for (std::size_t i = 2, o = 0; i < text.size(); i += 2, ++o) {
    const int hi = value[static_cast<unsigned char>(text[i])];
    const int lo = value[static_cast<unsigned char>(text[i + 1])];
    if ((hi | lo) < 0) return false;
    out[o] = static_cast<char>(hi * 16 + lo);
  }
  return true;
}

void AppendArrayText(std::string& out, std::string_view text) {
  out.push_back('"');
  for (char c : text) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
}

std::string TextArrayLiteral(const std::vector<std::string_view>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out.push_back(',');
    AppendArrayText(out, values[i]);
  }
  out.push_back('}');
  return out;
}

std::string Int64ArrayLiteral(std::span<const std::int64_t> values) {
  return fmt::format("{{{}}}", fmt::join(values, ","));
}

Result<PgCursor> PgCursor::Open(PgConn& conn, std::string name, std::string what,
                                const std::string& sql, const PgParams& params) {
  auto declared =
      conn.Exec(what, fmt::format("DECLARE {} NO SCROLL CURSOR FOR {}", name, sql), params);
  if (!declared) return declared.error();
  return PgCursor(conn, std::move(name), std::move(what));
}

Result<PgRow*> PgCursor::Next() {
  if (next_ >= batch_.rows()) {
    if (done_) return nullptr;
    row_.reset();
    auto r = conn_->Exec(what_, fmt::format("FETCH FORWARD {} FROM {}", kBatchRows, name_));
    if (!r) return r.error();
    batch_ = std::move(*r);
    next_ = 0;
    if (batch_.rows() < kBatchRows) {
      done_ = true;
      auto closed = conn_->Exec(what_, fmt::format("CLOSE {}", name_));
      if (!closed) return closed.error();
    }
    if (batch_.rows() == 0) return nullptr;
  }
  row_.emplace(batch_, next_++);
  return &*row_;
}

Status ForEachPgRow(PgConn& conn, std::string_view what, const std::string& sql,
                    const PgParams& params, const std::function<Status(PgRow&)>& on_row) {
  // Named apart: a row's callback may read through a cursor of its own.
  static std::atomic<std::uint64_t> cursors{0};
  auto cursor =
      PgCursor::Open(conn, fmt::format("rows_{}", ++cursors), std::string(what), sql, params);
  if (!cursor) return cursor.status();
  for (;;) {
    auto row = cursor->Next();
    if (!row) return row.status();
    if (*row == nullptr) return Status::Ok();
    if (Status s = on_row(**row); !s) return s;
  }
}

}  // namespace gpuledger::store
