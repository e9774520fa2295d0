#!/usr/bin/env python3
"""bench/shuffle/verbs_report.py OUT MESSAGES RUNS: report.md and verbs.png
of bench/shuffle/verbs.sh from OUT/raw.jsonl (one JSON object a line:
perftest figures, transport_selftest results of the receiving member and
shuffle_selftest results of both members, each with its round); every
figure is the median over the rounds."""
import json
import os
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

out, msgs, runs = sys.argv[1], sys.argv[2], sys.argv[3]
rows = [json.loads(line) for line in open(os.path.join(out, "raw.jsonl")) if line.strip()]
MIB = 1024 * 1024


def median_of(key, value):
    """{key(row): median of value(row)} over the rows of one kind"""
    got = {}
    for r in rows:
        k = key(r)
        if k is not None:
            got.setdefault(k, []).append(value(r))
    return {k: (statistics.median(v), len(v)) for k, v in got.items()}


perf = {k: m for k, (m, _) in median_of(
    lambda r: r["name"] if r["kind"] == "perftest" else None,
    lambda r: r["mb_per_s"]).items()}
designs = median_of(
    lambda r: r["design"] if r["kind"] == "transport" else None,
    lambda r: r["receiver"]["bytes"] / r["receiver"]["seconds"] / MIB
    if r["receiver"]["seconds"] > 0 else 0.0)
msg_bytes = {r["design"]: r["receiver"]["msg_bytes_used"] for r in rows if r["kind"] == "transport"}

# which perftest figure each design is held against
BASE = {"sr": "ib_send_bw_rc", "rd": "ib_read_bw", "wr": "ib_write_bw"}
WHAT = {"sr": "sends (RC)", "rd": "RDMA Read (RC)", "wr": "RDMA Write with immediate (RC)"}

lines = [
    "# The transport on Soft-RoCE (rxe0 in the qemu guest)",
    "",
    "Made by `bash bench/shuffle/verbs.sh %s %s` (commit %s, %s): perftest and "
    "rdma_exchange.transport_selftest() on the same emulated device in one run, "
    "medians of %s rounds, "
    "%s messages of 64 KiB from member 0 to member 1 (one direction, as perftest "
    "measures; the datagram designs 16 times as many of the port's MTU).  The guest "
    "runs under qemu's software emulation (TCG, 2 vCPUs): "
    "absolute speeds are those of an emulated CPU, so each design is compared "
    "with the perftest figure of the same verbs operation.  MB/s are MiB/s."
    % (msgs, runs, os.environ.get("RX_VERBS_COMMIT", "unknown"),
       time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), runs, msgs),
    "",
    "| perftest | MB/s |",
    "|---|---|",
]
for name in ("ib_send_bw_rc", "ib_write_bw", "ib_read_bw", "ib_send_bw_ud"):
    lines.append("| %s | %s |" % (name, "%.1f" % perf[name] if name in perf else "no figure"))
lines += ["", "| design | on | MB/s | rounds | perftest | ratio |", "|---|---|---|---|---|---|"]
bars = []
for d in ("semq_sr", "memq_sr", "semq_rd", "memq_rd", "semq_wr", "memq_wr", "sesq_sr", "mesq_sr"):
    if d not in designs:
        lines.append("| %s | | failed | | | |" % d)
        continue
    mbs, n = designs[d]
    if d.endswith("sq_sr"):
        on, base = "verbs, UD sends (%d B messages)" % msg_bytes[d], "ib_send_bw_ud"
    else:
        on, base = "verbs;ofi_rxm, " + WHAT[d[-2:]], BASE[d[-2:]]
    ref = perf.get(base)
    ratio = "%.2f" % (mbs / ref) if ref else "-"
    lines.append("| %s | %s | %.1f | %d | %s %s | %s |"
                 % (d, on, mbs, n, base, "%.1f" % ref if ref else "-", ratio))
    bars.append((d, mbs, ref or 0.0))
lines += [
    "",
    "The issue's goal is a ratio of at least 0.5 for every design: the reliable "
    "designs against the RC figure of their verbs operation with 64 KiB messages, "
    "the datagram designs (UD queue pairs) against ib_send_bw on UD at the MTU.",
]
shuffles = {}
for r in rows:
    if r["kind"] != "shuffle":
        continue
    secs = max(m["seconds"] for m in r["members"])
    if secs <= 0:
        continue
    moved = sum(m["rows_received"] for m in r["members"])
    shuffles.setdefault(r["design"], []).append(
        (moved / secs, sum(m["bytes_sent"] for m in r["members"]) / secs / MIB, moved))
if shuffles:
    lines += [
        "",
        "Lineitem repartition (`rdma_exchange.shuffle_selftest()` on both members at "
        "once: each sends the rows of its local lineitem table that hash to the "
        "other member and receives the other's; 16 TPC-H columns, bench/shuffle/rows.sh), "
        "medians over the rounds; rows and MiB/s are those that crossed, both "
        "directions together, over the slower member's time:",
        "",
        "| design | rows crossed | rows/s | MiB/s | rounds |",
        "|---|---|---|---|---|",
    ]
    for d in ("semq_sr", "memq_sr", "semq_rd", "memq_rd", "semq_wr", "memq_wr", "sesq_sr", "mesq_sr"):
        if d not in shuffles:
            lines.append("| %s | failed | | | |" % d)
            continue
        v = shuffles[d]
        lines.append("| %s | %d | %.0f | %.1f | %d |"
                     % (d, statistics.median(x[2] for x in v), statistics.median(x[0] for x in v),
                        statistics.median(x[1] for x in v), len(v)))
with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(lines) + "\n")

fig, ax = plt.subplots(figsize=(8, 4))
x = range(len(bars))
ax.bar([i - 0.2 for i in x], [b[1] for b in bars], width=0.4, label="rdma_exchange design")
ax.bar([i + 0.2 for i in x], [b[2] for b in bars], width=0.4, label="matching perftest")
ax.set_xticks(list(x))
ax.set_xticklabels([b[0] for b in bars])
ax.set_ylabel("MiB/s (64 KiB messages; datagrams: MTU)")
ax.set_title("Transport designs on Soft-RoCE (rxe0, qemu TCG guest)")
ax.legend()
fig.tight_layout()
fig.savefig(os.path.join(out, "verbs.png"), dpi=100)
