"""bench/shuffle/report.py: Markdown table and PNG plot from raw.jsonl.

    python3 report.py RAW_JSONL ROWS OUT_DIR NCPU

Kinds of runs (see run.sh): repartition (distributed join, SHUFFLE by
hash), parallel (the same join on one server), gather (the rows through
PostgreSQL's Gather), transport (transport_selftest all-to-all, one line
per member).  Medians over the runs; the raw numbers are listed too.
"""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MEMBERS = 3


def walk(node):
    yield node
    for child in node.get("Plans", []):
        yield from walk(child)


def hash_shuffles(plan):
    """Rows and bytes sent by the hash-routed SHUFFLE nodes, per member."""
    rows = {}
    bytes_ = {}
    for n in walk(plan["Plan"]):
        if n.get("Custom Plan Provider") == "SHUFFLE" and str(n.get("Route", "")).startswith("hash"):
            for m in n.get("Member Counters", []):
                i = m["Member Index"]
                rows[i] = rows.get(i, 0) + m.get("Rows Sent", 0)
                bytes_[i] = bytes_.get(i, 0) + m.get("Bytes Sent", 0)
    return rows, bytes_


def transport_name(plan):
    for n in walk(plan["Plan"]):
        if n.get("Custom Plan Provider") == "RECEIVE" and "Transport" in n:
            return n["Transport"]
    return "?"


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    raw, nrows, out, ncpu = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    runs = [json.loads(line) for line in open(raw)]
    by = {k: [r for r in runs if r["kind"] == k] for k in ("repartition", "parallel", "gather", "transport")}
    nruns = len(by["repartition"])

    rep_ms = [r["plan"]["Execution Time"] for r in by["repartition"]]
    par_ms = [r["plan"]["Execution Time"] for r in by["parallel"]]
    gat_ms = [r["plan"]["Execution Time"] for r in by["gather"]]
    transport = transport_name(by["repartition"][0]["plan"])

    # repartition: rows and bytes each member's SHUFFLE sent, over the
    # wall time of the query (the exchange runs during the whole join)
    rep_rows_pm, rep_mb_pm = [], []
    moved_rows, moved_bytes = [], []
    for r, ms in zip(by["repartition"], rep_ms):
        rows, bytes_ = hash_shuffles(r["plan"])
        moved_rows.append(sum(rows.values()))
        moved_bytes.append(sum(bytes_.values()))
        rep_rows_pm.append(sum(rows.values()) / MEMBERS / ms * 1000)
        rep_mb_pm.append(sum(bytes_.values()) / MEMBERS / ms / 1000)
    row_bytes = med(moved_bytes) / med(moved_rows) if med(moved_rows) else 0

    # Gather: every row crosses from a worker to the leader; rows/s of the
    # whole query, MB/s estimated with the repartition's bytes per row
    gat_rows = [nrows / ms * 1000 for ms in gat_ms]

    # transport: per member, bytes received over its own elapsed time
    tr_mb, tr_msgs, tr_err, tr_retx = [], [], [], []
    msg_bytes = 0
    for r in by["transport"]:
        res = r["result"]
        tr_mb.append(res["bytes"] / res["seconds"] / 1e6 if res["seconds"] > 0 else 0)
        tr_msgs.append(res["received"] / res["seconds"] if res["seconds"] > 0 else 0)
        tr_err.append(res["errors"])
        tr_retx.append(res["retransmits"])
        msg_bytes = res["msg_bytes_used"]

    lines = [
        "# Shuffle benchmark",
        "",
        f"{nrows:,} rows (4 columns, about {row_bytes:.0f} bytes a row on the wire), "
        f"3 members on one machine with {ncpu} cores, transport {transport}; "
        f"{nruns} runs of each kind, interleaved; medians.",
        "",
        "| what | wall ms | rows/s per member | MB/s per member | rows/s total |",
        "|---|---|---|---|---|",
        f"| rdma_exchange repartition join (SHUFFLE by hash, 3 members) | {med(rep_ms):.0f} | "
        f"{med(rep_rows_pm):,.0f} | {med(rep_mb_pm):.1f} | {med(rep_rows_pm) * MEMBERS:,.0f} |",
        f"| baseline: same join, one server, parallel query (2 workers) | {med(par_ms):.0f} | - | - | "
        f"{nrows / med(par_ms) * 1000:,.0f} |",
        f"| baseline: PostgreSQL Gather, one server (2 workers to the leader) | {med(gat_ms):.0f} | - | "
        f"{med(gat_rows) * row_bytes / 1e6:.1f} (estimated) | {med(gat_rows):,.0f} |",
        f"| baseline: raw transport, same provider, all-to-all ({msg_bytes}-byte messages) | - | "
        f"{med(tr_msgs):,.0f} messages/s | {med(tr_mb):.1f} | - |",
        "",
        f"Rows shuffled between members per run (median): {med(moved_rows):,.0f} of {nrows:,}; "
        f"bytes: {med(moved_bytes):,.0f}.",
        f"Ratio of wall times, distributed join / one-server parallel join: {med(rep_ms) / med(par_ms):.2f}.",
        f"Repartition MB/s per member as a share of the raw transport's: {med(rep_mb_pm) / med(tr_mb):.0%}.",
        f"Transport self-test errors (lost, duplicated, reordered or corrupted messages): {sum(tr_err)}; "
        f"retransmissions: {sum(tr_retx)}.",
        "",
        "The members share the machine's cores, so the distributed join cannot beat one server here: the "
        "table shows what the exchange costs.  The repartition rows/s count only the rows that crossed "
        "between members (the third that stays local is not counted); the query also scans, hashes and "
        "joins.  Not measured here: Citus and MPI all-to-all baselines (neither is installed), RDMA "
        "providers (no RDMA device), CPU per tuple.",
        "",
        "Raw numbers:",
        "",
        f"- repartition wall ms: {', '.join(f'{x:.0f}' for x in rep_ms)}",
        f"- one-server parallel join wall ms: {', '.join(f'{x:.0f}' for x in par_ms)}",
        f"- Gather wall ms: {', '.join(f'{x:.0f}' for x in gat_ms)}",
        f"- transport MB/s per member: {', '.join(f'{x:.1f}' for x in tr_mb)}",
    ]
    open(f"{out}/report.md", "w").write("\n".join(lines) + "\n")

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.bar(["rdma_exchange\nrepartition\n(rows crossing)", "PostgreSQL\nGather\n(one server)"],
            [med(rep_rows_pm) * MEMBERS, med(gat_rows)], color=["#3b6ea5", "#999999"])
    ax1.set_ylabel("rows/s (median)")
    ax1.set_title("tuples moved per second")
    ax2.bar(["repartition\nper member", "raw transport\nper member"],
            [med(rep_mb_pm), med(tr_mb)], color=["#3b6ea5", "#c28e0e"])
    ax2.set_ylabel("MB/s (median)")
    ax2.set_title(f"bytes per member ({transport})")
    fig.suptitle(f"{nrows:,} rows, 3 local members, {ncpu} cores")
    fig.tight_layout()
    fig.savefig(f"{out}/shuffle.png", dpi=100)


if __name__ == "__main__":
    main()
