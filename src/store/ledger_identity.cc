#include "store/ledger_identity.h"

namespace gpuledger::store {

Result<LedgerIdentity> ReadLedgerIdentity(LedgerStore& store) {
  auto meta = store.ReadMeta();
  if (!meta) return meta.error();
  LedgerIdentity id;
  if (auto it = meta->find("currency"); it != meta->end() && !it->second.empty())
    id.currency = it->second;
  if (auto it = meta->find("cluster"); it != meta->end()) id.cluster = it->second;
  return id;
}

}  // namespace gpuledger::store
