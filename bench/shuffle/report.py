"""bench/shuffle/report.py: Markdown table and PNG plot from raw.jsonl.

For each run: wall time of the query, rows moved, and for the distributed
repartition the bytes and rows every member's SHUFFLE sent (from the
EXPLAIN ANALYZE counters).  Medians over the runs; raw numbers kept.
"""
import json
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def walk(node):
    yield node
    for child in node.get("Plans", []):
        yield from walk(child)


def shuffle_counters(plan):
    """Sum of rows and bytes sent by SHUFFLE nodes that route by hash."""
    rows = bytes_ = 0
    per_member = {}
    for n in walk(plan["Plan"]):
        if n.get("Custom Plan Provider") == "SHUFFLE" and str(n.get("Route", "")).startswith("hash"):
            for m in n.get("Members", []):
                rows += m.get("Rows Sent", 0)
                bytes_ += m.get("Bytes Sent", 0)
                per_member[m["Member Index"]] = per_member.get(m["Member Index"], 0) + m.get("Bytes Sent", 0)
    return rows, bytes_, per_member


def main():
    raw, nrows, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    runs = [json.loads(line) for line in open(raw)]
    rep = [r for r in runs if r["kind"] == "repartition"]
    gat = [r for r in runs if r["kind"] == "gather"]
    rep_ms = [r["plan"]["Execution Time"] for r in rep]
    gat_ms = [r["plan"]["Execution Time"] for r in gat]
    shuffled = [shuffle_counters(r["plan"]) for r in rep]
    moved_rows = statistics.median(s[0] for s in shuffled)
    moved_bytes = statistics.median(s[1] for s in shuffled)
    rep_med = statistics.median(rep_ms)
    gat_med = statistics.median(gat_ms)
    members = 3
    lines = [
        "# Shuffle benchmark",
        "",
        f"{nrows} rows, 3 local members, {len(rep)} runs each, interleaved; medians.",
        "",
        "| what | wall ms | rows/s (total) | rows/s per member | MB/s per member |",
        "|---|---|---|---|---|",
        f"| rdma_exchange repartition join (SHUFFLE over udp) | {rep_med:.1f} | {nrows / rep_med * 1000:,.0f} | "
        f"{nrows / members / rep_med * 1000:,.0f} | {moved_bytes / members / rep_med / 1000:.1f} |",
        f"| PostgreSQL Gather, one server (baseline) | {gat_med:.1f} | {nrows / gat_med * 1000:,.0f} | - | - |",
        "",
        f"Rows that crossed between members per run (median): {moved_rows:,.0f}; bytes: {moved_bytes:,.0f}.",
        f"Ratio of wall times (repartition / Gather): {rep_med / gat_med:.2f}.",
        "",
        "The repartition query also builds and probes a hash join; the Gather baseline only moves rows.",
        "",
        "Raw wall times (ms):",
        "",
        f"- repartition: {', '.join(f'{x:.1f}' for x in rep_ms)}",
        f"- gather: {', '.join(f'{x:.1f}' for x in gat_ms)}",
    ]
    open(f"{out}/report.md", "w").write("\n".join(lines) + "\n")

    fig, ax = plt.subplots(figsize=(6, 4))
    ax.bar(["rdma_exchange\nrepartition", "PostgreSQL\nGather"],
           [nrows / rep_med * 1000, nrows / gat_med * 1000], color=["#3b6ea5", "#999999"])
    ax.set_ylabel("rows/s (median)")
    ax.set_title(f"{nrows} rows, 3 local members")
    fig.tight_layout()
    fig.savefig(f"{out}/shuffle.png", dpi=100)


if __name__ == "__main__":
    main()
