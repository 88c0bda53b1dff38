#!/usr/bin/env python3
"""Compares the canonical outputs of Prometheus's parser (promparse_peer.go) and gpuledger's
(exposition_canon) over the same files and counts: both accept with the same samples, both
reject, and each kind of disagreement. Prints a summary line and up to 5 examples of each
disagreement (file and first differing line); exits 1 on any disagreement that is not one of
the deliberate differences below (RULES), which are counted by name instead."""
import argparse
import sys


def nul_ends_their_input(path, theirs, mine):
    """Prometheus's lexer takes a NUL byte for the end of the input where a line starts and
    inside a comment (promlex.l.go: consumeComment's case 0 and the start state both return
    tEOF), so it silently drops every sample after it. gpuledger does not stop there: a NUL in a
    comment is read past (a metering system must not lose what an exporter wrote after a stray
    byte), and a line that starts with one is an error like any other malformed line.
    Explained when such a NUL is there and Prometheus's samples are the start of ours (or we
    refuse the document)."""
    with open(path, "rb") as f:
        data = f.read()
    stops = any(line.startswith(b"\0") or
                (b"\0" in line and line.lstrip(b" \t").startswith(b"#"))
                for line in data.split(b"\n"))
    if not stops or theirs[0] == "REJECT":
        return False
    return mine[0] == "REJECT" or mine[1:1 + len(theirs) - 1] == theirs[1:]


RULES = {"nul-ends-their-input": nul_ends_their_input}


def read(path):
    results, current = {}, None
    with open(path, encoding="ascii") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("FILE "):
                current = line[5:]
                results[current] = []
            else:
                results[current].append(line)
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("peer")
    ap.add_argument("ours")
    args = ap.parse_args()
    peer, ours = read(args.peer), read(args.ours)
    explained = {name: 0 for name in RULES}
    counts = {"same": 0, "both-reject": 0, "we-accept-they-reject": 0,
              "we-reject-they-accept": 0, "different-samples": 0}
    examples = {k: [] for k in counts}
    unexplained = 0
    for path, theirs in peer.items():
        mine = ours.get(path)
        if mine is None:
            print(f"missing from ours: {path}", file=sys.stderr)
            return 2
        t_ok, m_ok = theirs[0] != "REJECT", mine[0] != "REJECT"
        if t_ok and m_ok:
            kind = "same" if theirs == mine else "different-samples"
        elif not t_ok and not m_ok:
            kind = "both-reject"
        else:
            kind = "we-accept-they-reject" if m_ok else "we-reject-they-accept"
        counts[kind] += 1
        if kind in ("same", "both-reject"):
            continue
        rule = next((name for name, applies in RULES.items() if applies(path, theirs, mine)), None)
        if rule:
            explained[rule] += 1
            continue
        unexplained += 1
        if len(examples[kind]) < 5:
            diff = next((f"theirs {a!r} ours {b!r}" for a, b in zip(theirs, mine) if a != b),
                        f"theirs {len(theirs)} lines, ours {len(mine)}")
            examples[kind].append(f"  {path}: {diff}")
    total = sum(counts.values())
    print(f"{total} inputs: " + ", ".join(f"{k} {v}" for k, v in counts.items()) +
          "; explained " + ", ".join(f"{k} {v}" for k, v in explained.items()) +
          f"; unexplained {unexplained}")
    for kind, lines in examples.items():
        if lines:
            print(kind + ":")
            print("\n".join(lines))
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
