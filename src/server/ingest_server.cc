#include "server/ingest_server.h"

#include <fmt/format.h>

#include "ingest/ingestor.h"
#include "store/ledger_store.h"

namespace gpuledger::server {
namespace {

// The configured cluster (recorded in the ledger when it has none), else the ledger's, else
// "default".
std::string ClusterOf(const std::string& configured, store::LedgerStore& store) {
  auto meta = store.ReadMeta();
  if (!configured.empty()) {
    if (!meta.ok() || meta->count("cluster") == 0) (void)store.PutMeta("cluster", configured);
    return configured;
  }
  if (meta.ok() && meta->count("cluster") > 0) return meta->at("cluster");
  return "default";
}

// The ledger prices in one currency, whichever cluster writes it: the first writer's catalog
// names it (kept in the meta); a writer whose catalog prices in another is refused, before it
// writes, rather than its nanos summed with theirs as if they were the same money.
Status AgreeOnCurrency(store::LedgerStore& store, const std::string& currency,
                       const std::string& cluster) {
  auto meta = store.ReadMeta();
  if (!meta) return meta.status();
  auto it = meta->find("currency");
  if (it == meta->end()) return store.PutMeta("currency", currency);
  if (it->second == currency) return Status::Ok();
  return InvalidArgument(fmt::format(
      "the ledger prices in {}, and this server's catalog (cluster {}) in {}: the clusters that "
      "write one ledger price in one currency (give --catalog prices in {})",
      it->second, cluster, currency, it->second));
}

// Stops a started source on every way out of RunIngestServer (step 6 before step 7).
class StopOnExit {
 public:
  explicit StopOnExit(IngestSource& source) : source_(source) {}
  ~StopOnExit() {
    if (armed_) source_.Stop();
  }
  void Arm() { armed_ = true; }

 private:
  IngestSource& source_;
  bool armed_ = false;
};

}  // namespace

Result<int> RunIngestServer(const IngestServerConfig& c, IngestSource& source,
                            const std::atomic<bool>& stop, const ServeFn& serve,
                            std::ostream& out) {
  const std::string display = store::DisplayLedgerSpec(c.ledger);
  auto opened = store::OpenLedger(c.ledger);  // 1 (closed last: declared first)
  if (!opened) return opened.error();
  store::LedgerStore& store = **opened;
  const std::string cluster = ClusterOf(c.cluster, store);  // 2
  if (Status s = AgreeOnCurrency(store, c.catalog->currency, cluster); !s.ok())
    return Error{s.error().code, fmt::format("--ledger '{}': {}", display, s.error().message)};
  auto since = source.ObservingSince(store, cluster);  // 3
  if (!since)
    return Error{since.error().code,
                 fmt::format("--ledger '{}': {}", display, since.error().message)};
  ingest::Ingestor ingestor(store, *c.catalog, cluster, c.describe, c.node_facts);
  ingestor.keep_open_us = c.keep_open_us;
  ingestor.retention_us = c.retention_us;
  if (Status s = ingestor.Start(*since); !s.ok())
    return Error{s.error().code, fmt::format("--ledger '{}': {}", display, s.error().message)};

  StopOnExit stop_source(source);              // 6, on every way out after this
  if (c.backfill_only || !source.follows()) {  // 4
    auto summary = source.CatchUp(ingestor, store, stop);
    if (!summary) return summary.error();
    out << *summary << "\n";
    out.flush();
    if (c.backfill_only || !c.serve) return 0;
    return serve(nullptr);  // 5: nothing more to ingest
  }
  stop_source.Arm();
  source.Start(ingestor, store);
  const int rc = serve(&source);                                // 5
  source.Stop();                                                // 6
  if (Status s = ingestor.Commit(); !s.ok()) return s.error();  // nothing pending: no write
  return rc;
}

}  // namespace gpuledger::server
