#!/usr/bin/env python3
"""bench/scaleout/report.py: report.md and scaleout.png of a scale-out run.

    python3 report.py RAW.jsonl OUTDIR

Per index set, a table with one row per query: the single server's median
time, and for each cluster size N (and each rdma_exchange.workers_per_member
the cluster ran with, RX_SCALE_WORKERS) the cluster's median time, speed-up
(single / cluster) and efficiency (speed-up / N), and whether the answers
were the same in every run; geometric means of the speed-ups over the
queries that ran on both sides.  The plot shows the speed-up per query
for each configuration and index set and, when more than one N ran, the
geometric mean over N against the ideal line.
"""
import json
import math
import os
import statistics
import sys


def main():
    raw, out = sys.argv[1], sys.argv[2]
    machine = {}
    rows = []
    for line in open(raw):
        d = json.loads(line)
        if d["kind"] == "machine":
            machine = d
        elif d["kind"] == "query":
            rows.append(d)
    # a configuration: (members, workers_per_member; -1 is the default)
    configs = sorted({(r["n"], r.get("workers", -1)) for r in rows})
    sizes = sorted({n for n, _ in configs})
    default_w = min(w for _, w in configs) if configs else -1

    def label(c):
        n, w = c
        return "N=%d" % n if w == -1 else "N=%d, %d workers/member" % (n, w)
    isets = [s for s in machine.get("indexes", "pk fk").split() if any(r["indexes"] == s for r in rows)]
    queries = sorted({r["query"] for r in rows})

    def runs(c, s, q):
        return [r for r in rows if (r["n"], r.get("workers", -1)) == c
                and r["indexes"] == s and r["query"] == q]

    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    result = {}     # (s, q) -> {"single": ms, n: (ms, speedup, same)}
    for s in isets:
        for q in queries:
            entry = {"single": median([r["single_ms"] for c in configs for r in runs(c, s, q)
                                       if r["single_status"] == "ok"])}
            for c in configs:
                rr = runs(c, s, q)
                if not rr:
                    continue
                ms = median([r["cluster_ms"] for r in rr if r["cluster_status"] == "ok"])
                sp = entry["single"] / ms if ms and entry["single"] else None
                status = "same" if all(r["same"] for r in rr) else \
                    ",".join(sorted({r["cluster_status"] for r in rr if r["cluster_status"] != "ok"})) or "differs"
                entry[c] = (ms, sp, status)
            result[(s, q)] = entry

    def geomean(values):
        values = [v for v in values if v]
        return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None

    lines = ["# Scale-out: N members on dedicated cores against one server", ""]
    lines.append("TPC-H SF %s, layout %s, %d core(s) per member and for the single server "
                 "(max_parallel_workers_per_gather = %d; rdma_exchange.workers_per_member -1: as many), %s run(s) each, interleaved; median times. "
                 "Machine: %s cores (%s), %s, commit %s. Made by `bench/scaleout/run.sh`."
                 % (machine.get("sf"), machine.get("layout"), machine.get("cores", 1),
                    machine.get("cores", 1) - 1, machine.get("runs"), machine.get("nproc"),
                    machine.get("cpu"), machine.get("date"), machine.get("commit")))
    lines.append("")
    lines.append("Speed-up = single server's time / cluster's time; efficiency = speed-up / N "
                 "(1.0 is perfect scaling). N = 1 is what running a query as fragments and gathering their rows costs (one member moves no rows between members).")
    summary = {}
    for s in isets:
        lines += ["", "## Index set %s" % s, ""]
        head = "| query | single ms |"
        sep = "|---|---:|"
        for c in configs:
            head += " %s ms | speed-up | efficiency | answer |" % label(c)
            sep += "---:|---:|---:|---|"
        lines += [head, sep]
        for q in queries:
            e = result[(s, q)]
            line = "| %s | %s |" % (q, "%.0f" % e["single"] if e["single"] else "-")
            for c in configs:
                if c not in e:
                    line += " - | - | - | - |"
                    continue
                ms, sp, st = e[c]
                line += " %s | %s | %s | %s |" % ("%.0f" % ms if ms else "-",
                                                  "%.2f" % sp if sp else "-",
                                                  "%.2f" % (sp / c[0]) if sp else "-", st)
            lines.append(line)
        line = "| **geometric mean** | |"
        for c in configs:
            g = geomean([result[(s, q)].get(c, (None, None, None))[1] for q in queries])
            summary[(s, c)] = g
            low = min([(result[(s, q)][c][1], q) for q in queries
                       if c in result[(s, q)] and result[(s, q)][c][1]], default=(None, None))
            line += " | **%s** | %s | lowest: %s |" % ("%.2f" % g if g else "-",
                                                       "%.2f" % (g / c[0]) if g else "-",
                                                       "%s %.2f" % (low[1], low[0]) if low[0] else "-")
        lines.append(line)
        wrong = [q for q in queries for c in configs
                 if c in result[(s, q)] and result[(s, q)][c][2] != "same"]
        lines += ["", "Answers that were not the same as the single server's: %s."
                  % (", ".join(sorted(set(wrong))) if wrong else "none")]
    lines += ["", "![speed-up](scaleout.png)", ""]
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: no matplotlib, no plot", file=sys.stderr)
        return
    ncols = 2 if len(sizes) > 1 else 1
    fig, axes = plt.subplots(1, ncols, figsize=(14 if ncols == 2 else 10, 4.5), squeeze=False)
    ax = axes[0][0]
    width = 0.8 / max(1, len(configs) * len(isets))
    k = 0
    for s in isets:
        for c in configs:
            xs = [i + k * width for i in range(len(queries))]
            ys = [result[(s, q)].get(c, (None, 0, None))[1] or 0 for q in queries]
            ax.bar(xs, ys, width, label="%s, %s" % (label(c), s))
            k += 1
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(queries))])
    ax.set_xticklabels(queries, rotation=90)
    ax.set_ylabel("speed-up over one server")
    ax.set_title("TPC-H SF %s, %d core(s) per instance" % (machine.get("sf"), machine.get("cores", 1)))
    ax.legend(fontsize=8)
    if ncols == 2:
        ax = axes[0][1]
        for s in isets:
            ax.plot(sizes, [summary.get((s, (n, default_w))) or 0 for n in sizes], marker="o",
                    label="index set %s" % s)
        ax.plot(sizes, sizes, linestyle="--", color="grey", label="ideal")
        ax.set_xlabel("members N")
        ax.set_ylabel("geometric mean speed-up")
        ax.set_xticks(sizes)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "scaleout.png"), dpi=100)


if __name__ == "__main__":
    main()
