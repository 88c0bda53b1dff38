#pragma once
// The credential flags of one outgoing peer, the same set wherever gpuledger reaches out: the
// reading commands' `--server` (no prefix), the server's Prometheus source ("prometheus-") and
// its scrapes of the agents ("scrape-").

#include <string>

#include <CLI/CLI.hpp>

#include "cli/server_client.h"
#include "http/client.h"

namespace gpuledger::cmd {

// Adds --PREFIXtoken-file, --PREFIXuser, --PREFIXpassword-file, --PREFIXca-file,
// --PREFIXcert-file, --PREFIXkey-file and --PREFIXinsecure-skip-tls-verify to `command`, bound
// to `auth`; `peer` says whom they are for in the help ("--server", "prometheus=URL").
void AddClientAuthFlags(CLI::App& command, http::ClientAuth& auth, const std::string& prefix,
                        const std::string& peer);

// Where a reading command reads: --db, --server with its credentials, and the way in without
// either (`kubectl gpuledger`): --kubeconfig, --kube-context and --kube-namespace (where
// gpuledger is installed).
void AddReadFromFlags(CLI::App& command, cli::ReadFrom& from);

}  // namespace gpuledger::cmd
